/** @module A write's versioning, decided once by its coordinator: the bucket's state (Enabled,
 * Suspended, never configured) as this node's catalog holds it when the change is stamped, sent
 * with the change to every replica (protocol/wire/fields.ts decidedVersioning). Each replica's own
 * copy of the catalog may lag (a node back from a partition) or lead (a change that failed after
 * it took effect there); read there, one write could get a version id on one replica and `null`
 * on another under one stamp, which no merge or digest would tell apart. What the state then
 * means for the write is S3's rule (protocol/s3-rules/versioning.ts), applied by each replica. */
import type { Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { DecidedVersioning } from '../../protocol/messages.js'

/** `bucket`'s versioning as this node's store holds it now (null: never configured). */
export async function decideVersioning(
  ctx: Context,
  bucket: string,
  request: { requestId: string; deadlineMs: number },
): Promise<Result<DecidedVersioning>> {
  const read = await ctx.call('replica-store', {
    kind: 'bucket.versioning.get',
    bucket,
    requestId: request.requestId,
    deadlineMs: request.deadlineMs,
  })
  return read.ok ? ok(read.value.status) : read
}
