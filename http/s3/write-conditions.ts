/** @module If-Match and If-None-Match of a write (PutObject, CompleteMultipartUpload) as S3
 * takes them: If-None-Match only as `*` (any other value answers 501 NotImplemented, as S3 does),
 * If-Match as one or more ETags. The store evaluates them when it commits
 * (protocol/conditions.ts). */
import type { WriteConditions } from '../../protocol/conditions.js'
import { fail, ok, type Result } from '../../protocol/errors.js'

export function writeConditions(headers: Record<string, string>): Result<WriteConditions | null> {
  const ifMatch = headers['if-match']
  const ifNoneMatch = headers['if-none-match']
  if (ifMatch === undefined && ifNoneMatch === undefined) return ok(null)
  const conditions: WriteConditions = {}
  if (ifMatch !== undefined) conditions.ifMatch = ifMatch
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== '*') {
      return fail(
        'not_implemented',
        'A header you provided implies functionality that is not implemented',
      )
    }
    conditions.ifNoneMatch = '*'
  }
  return ok(conditions)
}
