/** @module Conditional writes (protocol/s3-rules/conditions.ts) as the store checks them: against
 * the key's current object, read by the mutation that is about to replace it. The caller prepares
 * that mutation with no await between this check and handing it to the commit, so a concurrent
 * write to the same key is either already visible here or commits after this one and sees it. */
import {
  evaluateWriteConditions,
  type WriteConditions,
} from '../../protocol/s3-rules/conditions.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { Mutation } from './mutation.js'

export function checkWriteConditions(
  mutation: Mutation,
  at: { bucket: string; key: string },
  conditions: WriteConditions | undefined,
): Result<null> {
  if (conditions === undefined) return ok(null)
  const refused = evaluateWriteConditions(mutation.object(at.bucket, at.key), conditions)
  if (refused === null) return ok(null)
  if (refused === 'no_such_key') return fail(refused, `no object ${at.key} to match`)
  return fail(refused, `the current object of ${at.key} fails the write's condition`)
}
