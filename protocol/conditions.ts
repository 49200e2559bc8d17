/** @module Conditional requests (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since):
 * one pure function shared by the HTTP layer (GET, HEAD) and the store (CopyObject's
 * x-amz-copy-source-if-*), so both surfaces decide the same way.
 *
 * Reads follow RFC 7232 section 6 as Amazon S3 applies it: a failed If-Match is 412, a
 * matching If-None-Match is 304, an unmodified If-Modified-Since is 304, a failed
 * If-Unmodified-Since is 412; If-Match, when present, makes If-Unmodified-Since irrelevant, and
 * If-None-Match, when present, makes If-Modified-Since irrelevant. Copies evaluate the same way
 * but every failure is 412, as S3 answers for x-amz-copy-source-if-*. Dates compare at second
 * precision: HTTP dates have no fractions, and Last-Modified is sent truncated to the second.
 *
 * Writes (PutObject, CompleteMultipartUpload) take If-Match and If-None-Match: `*` only; the store
 * evaluates them in the same synchronous step as the commit of the object record. */
import type { ErrorCode } from './errors.js'
import type { Conditions } from './objects.js'

export type ConditionMode = 'read' | 'copy'

export function evaluateConditions(
  info: { etag: string; lastModifiedMs: number },
  conditions: Conditions,
  mode: ConditionMode,
): ErrorCode | null {
  const notModified: ErrorCode = mode === 'read' ? 'not_modified' : 'precondition_failed'
  const modifiedSeconds = Math.floor(info.lastModifiedMs / 1000)
  if (conditions.ifMatch !== undefined) {
    if (!etagListMatches(conditions.ifMatch, info.etag)) return 'precondition_failed'
  } else if (conditions.ifUnmodifiedSinceMs !== undefined) {
    if (modifiedSeconds > Math.floor(conditions.ifUnmodifiedSinceMs / 1000)) {
      return 'precondition_failed'
    }
  }
  if (conditions.ifNoneMatch !== undefined) {
    if (etagListMatches(conditions.ifNoneMatch, info.etag)) return notModified
  } else if (conditions.ifModifiedSinceMs !== undefined) {
    if (modifiedSeconds <= Math.floor(conditions.ifModifiedSinceMs / 1000)) return notModified
  }
  return null
}

/** A write's conditions (PutObject, CompleteMultipartUpload; S3 since 2024): If-None-Match `*`
 * writes only where the key has no current object, If-Match only over one of the named ETags. */
export interface WriteConditions {
  ifMatch?: string
  ifNoneMatch?: '*'
}

/** Why a write may not replace `current` (undefined: the key has no current object), or null. S3
 * answers an If-Match on a key without an object 404 NoSuchKey, not 412. */
export function evaluateWriteConditions(
  current: { etag: string } | undefined,
  conditions: WriteConditions,
): ErrorCode | null {
  if (conditions.ifMatch !== undefined) {
    if (current === undefined) return 'no_such_key'
    if (!etagListMatches(conditions.ifMatch, current.etag)) return 'precondition_failed'
  }
  if (conditions.ifNoneMatch !== undefined && current !== undefined) return 'precondition_failed'
  return null
}

/** True if `header` (`*`, or a comma-separated list of entity tags, quoted or not, weak or not)
 * names `etag`. S3 ETags never contain commas, so splitting on them is safe. */
export function etagListMatches(header: string, etag: string): boolean {
  const wanted = bareEtag(etag)
  return header.split(',').some((candidate) => {
    const trimmed = candidate.trim()
    return trimmed === '*' || bareEtag(trimmed) === wanted
  })
}

function bareEtag(tag: string): string {
  const strong = tag.startsWith('W/') ? tag.slice(2) : tag
  return strong.length >= 2 && strong.startsWith('"') && strong.endsWith('"')
    ? strong.slice(1, -1)
    : strong
}
