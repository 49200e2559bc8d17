/** @module Conditional writes (protocol/s3-rules/conditions.ts) as the store checks them: against
 * the key's current object, read by the mutation that is about to replace it. The caller prepares
 * that mutation with no await between this check and handing it to the commit, so a concurrent
 * write to the same key is either already visible here or commits after this one and sees it. In
 * a cluster, a completion's conditions are checked against the object the coordinator's quorum
 * read found, the key held (`judgedOn`): every replica decides alike, even one that missed a
 * write. */
import {
  evaluateWriteConditions,
  type WriteConditions,
} from '../../../protocol/s3-rules/conditions.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { Mutation } from '../mutation.js'

export function checkWriteConditions(
  mutation: Mutation,
  at: { bucket: string; key: string },
  conditions: WriteConditions | undefined,
  judgedOn?: { etag: string; lastModifiedMs: number } | null,
): Result<null> {
  if (conditions === undefined) return ok(null)
  const current = judgedOn === undefined ? mutation.object(at.bucket, at.key) : judgedOn
  const refused = evaluateWriteConditions(current ?? undefined, conditions)
  if (refused === null) return ok(null)
  if (refused === 'no_such_key') return fail(refused, `no object ${at.key} to match`)
  return fail(refused, `the current object of ${at.key} fails the write's condition`)
}
