/** @module Conditional requests (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since):
 * pure functions shared by the HTTP layer (GET, HEAD), the store and the coordinator (CopyObject's
 * x-amz-copy-source-if-*, and the conditions of writes), so every surface decides the same way.
 *
 * Reads follow RFC 7232 section 6 as Amazon S3 applies it: a failed If-Match is 412, a
 * matching If-None-Match is 304, an unmodified If-Modified-Since is 304, a failed
 * If-Unmodified-Since is 412; If-Match, when present, makes If-Unmodified-Since irrelevant, and
 * If-None-Match, when present, makes If-Modified-Since irrelevant. Copies evaluate the same way
 * but every failure is 412, as S3 answers for x-amz-copy-source-if-*. Dates compare at second
 * precision: HTTP dates have no fractions, and Last-Modified is sent truncated to the second.
 * ETags compare as RFC 7232 section 2.3.2 says: If-Match strongly (a weak `W/"..."` never
 * matches), If-None-Match weakly; quotes may be left out, as S3 clients do.
 *
 * Writes (PutObject, CopyObject's target, CompleteMultipartUpload) take the conditions of RFC 7232
 * in full, of which Amazon S3's (If-None-Match `*`, If-Match with ETags) are a subset: `*` or a
 * list of ETags in either header, as MinIO and Ceph take them. Of the dates, which Amazon S3
 * documents for no write, RFC 7232 decides: If-Unmodified-Since applies when If-Match is absent,
 * and If-Modified-Since is ignored, as section 3.3 requires of methods other than GET and HEAD.
 * The store evaluates them in the same synchronous step as the commit of the object record (in a
 * cluster, the coordinator with the key held, key-hold.ts). */
import type { ErrorCode } from '../errors.js'
import type { Conditions } from '../objects.js'

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
    if (etagListMatches(conditions.ifNoneMatch, info.etag, 'weak')) return notModified
  } else if (conditions.ifModifiedSinceMs !== undefined) {
    if (modifiedSeconds <= Math.floor(conditions.ifModifiedSinceMs / 1000)) return notModified
  }
  return null
}

/** A write's conditions: the same headers as a read's, evaluated by evaluateWriteConditions. */
export type WriteConditions = Conditions

/** Why a write may not replace `current` (undefined: the key has no current object), or null, in
 * RFC 7232 section 6's order for a method that changes state: If-Match, else If-Unmodified-Since,
 * then If-None-Match, whose failure is 412 and not 304. Amazon S3, MinIO and Ceph answer an
 * If-Match on a key without an object 404 NoSuchKey where RFC 7232 says 412; If-Unmodified-Since
 * is ignored there, as RFC 7232 section 3.4 says of a resource without a modification date. */
export function evaluateWriteConditions(
  current: { etag: string; lastModifiedMs: number } | undefined,
  conditions: WriteConditions,
): ErrorCode | null {
  if (conditions.ifMatch !== undefined) {
    if (current === undefined) return 'no_such_key'
    if (!etagListMatches(conditions.ifMatch, current.etag)) return 'precondition_failed'
  } else if (conditions.ifUnmodifiedSinceMs !== undefined && current !== undefined) {
    const modifiedSeconds = Math.floor(current.lastModifiedMs / 1000)
    if (modifiedSeconds > Math.floor(conditions.ifUnmodifiedSinceMs / 1000)) {
      return 'precondition_failed'
    }
  }
  if (conditions.ifNoneMatch !== undefined && current !== undefined) {
    if (etagListMatches(conditions.ifNoneMatch, current.etag, 'weak')) return 'precondition_failed'
  }
  return null
}

/** True if `header` (`*`, or a comma-separated list of entity tags, quoted or not) names `etag`.
 * Strong comparison (If-Match) lets no weak tag match; weak comparison (If-None-Match) ignores
 * the `W/`. The stored ETags are strong and never contain commas, so splitting on them is safe. */
export function etagListMatches(
  header: string,
  etag: string,
  comparison: 'strong' | 'weak' = 'strong',
): boolean {
  const wanted = bareEtag(etag)
  return header.split(',').some((candidate) => {
    const trimmed = candidate.trim()
    if (trimmed === '*') return true
    if (trimmed.startsWith('W/') && comparison === 'strong') return false
    return bareEtag(trimmed) === wanted
  })
}

/** An entity tag without its `W/` and quotes. */
export function bareEtag(tag: string): string {
  const strong = tag.startsWith('W/') ? tag.slice(2) : tag
  return strong.length >= 2 && strong.startsWith('"') && strong.endsWith('"')
    ? strong.slice(1, -1)
    : strong
}
