/** @module The one parser of the conditional headers (If-Match, If-None-Match, If-Modified-Since,
 * If-Unmodified-Since), for reads (GET, HEAD), copy sources (the same headers after
 * `x-amz-copy-source-`) and writes (PutObject, CopyObject's target, CompleteMultipartUpload).
 * Values pass as sent: protocol/s3-rules/conditions.ts decides, the store evaluating a write's
 * conditions when it commits. A date that does not parse is ignored, as RFC 7232 section 3
 * requires. */
import type { WriteConditions } from '../../protocol/s3-rules/conditions.js'
import type { Conditions } from '../../protocol/objects.js'

function httpDateMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? undefined : ms
}

export function conditionsFrom(headers: Record<string, string>, prefix: string): Conditions {
  const conditions: Conditions = {}
  const ifMatch = headers[prefix + 'if-match']
  const ifNoneMatch = headers[prefix + 'if-none-match']
  const modifiedSince = httpDateMs(headers[prefix + 'if-modified-since'])
  const unmodifiedSince = httpDateMs(headers[prefix + 'if-unmodified-since'])
  if (ifMatch !== undefined) conditions.ifMatch = ifMatch
  if (ifNoneMatch !== undefined) conditions.ifNoneMatch = ifNoneMatch
  if (modifiedSince !== undefined) conditions.ifModifiedSinceMs = modifiedSince
  if (unmodifiedSince !== undefined) conditions.ifUnmodifiedSinceMs = unmodifiedSince
  return conditions
}

/** A write's conditions, or null when it has none. If-Modified-Since is left out: RFC 7232
 * section 3.3 has it ignored by any method but GET and HEAD. */
export function writeConditions(headers: Record<string, string>): WriteConditions | null {
  const { ifModifiedSinceMs: _ignored, ...conditions } = conditionsFrom(headers, '')
  return Object.keys(conditions).length === 0 ? null : conditions
}
