/** @module blob.replace: the scrubber heals a corrupt copy with bytes read from another node. The
 * bytes are taken as a checked copy (checked-copy.ts: a file blob's into a temporary file, an
 * inline one's in memory), verified against the blob's own record and address (size, CRC32,
 * SHA-256) before anything changes: a copy that is not the blob's bytes is refused (`bad_digest`)
 * and discarded. Then the
 * order is put.ts's: the new file synced, ONE kv batch that points the blob record at it (its
 * corrupt mark gone) and makes the old file garbage, then the new file's promotion and the old
 * one's removal in the background. A crash before the batch leaves a temporary file recovery
 * deletes; after it, recovery promotes the new file and removes the old. GETs that already opened
 * the old file read it to their end (they check its CRC32 as before); pinned files wait. The batch
 * is made only if the blob still has the copy it had when the bytes started (not deleted, not
 * replaced meanwhile), else the new bytes are dropped and the answer says so. */
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { BlobMsg } from '../../../protocol/scrubbing.js'
import { Mutation } from '../mutation.js'
import { NO_ROOM } from '../engine/put.js'
import { takeCheckedCopy } from './checked-copy.js'
import { commitMutation, promoteInBackground, type StoreState } from '../store-state.js'

type ReplaceMsg = Extract<BlobMsg, { kind: 'blob.replace' }>

export async function replaceBlob(
  state: StoreState,
  msg: ReplaceMsg,
  ctx: Context,
): Promise<Result<{ replaced: boolean }>> {
  const source = ctx.source(msg.stream, msg.deadlineMs)
  const blob = new Mutation(ctx.kv).blob(msg.sha256)
  if (blob === undefined) {
    source.cancel('no_such_key', 'the blob is gone')
    return ok({ replaced: false })
  }
  const expectedFile = blob.file
  if (expectedFile !== undefined && !(await ctx.blobs.admits(blob.size))) {
    source.cancel('insufficient_storage', NO_ROOM)
    return fail('insufficient_storage', NO_ROOM)
  }
  const expected = { sha256: msg.sha256, size: blob.size, crc32: blob.crc32 }
  const taken = await takeCheckedCopy(ctx, source, expected, {
    inline: expectedFile === undefined,
  })
  if (!taken.ok) return taken
  const copy = taken.value
  const mutation = new Mutation(ctx.kv, state.shard)
  if (!mutation.replaceBlob(msg.sha256, expectedFile, copy)) {
    if ('file' in copy) await ctx.blobs.removeTemporary(copy.file)
    return ok({ replaced: false })
  }
  state.damaged.delete(msg.sha256)
  await commitMutation(state, ctx, mutation)
  if ('file' in copy) promoteInBackground(state, ctx, copy.file)
  ctx.log.info({ sha256: msg.sha256 }, 'blob copy replaced by a verified one')
  return ok({ replaced: true })
}
