/** @module blob.replace: the scrubber heals a corrupt copy with bytes read from another node. The
 * bytes are taken as a PUT's are (a file blob's into a temporary file, an inline one's in memory)
 * and verified against the blob's own record and address (size, CRC32, SHA-256) before anything
 * changes: a copy that is not the blob's bytes is refused (`bad_digest`) and discarded. Then the
 * order is put.ts's: the new file synced, ONE kv batch that points the blob record at it (its
 * corrupt mark gone) and makes the old file garbage, then the new file's promotion and the old
 * one's removal in the background. A crash before the batch leaves a temporary file recovery
 * deletes; after it, recovery promotes the new file and removes the old. GETs that already opened
 * the old file read it to their end (they check its CRC32 as before); pinned files wait. The batch
 * is made only if the blob still has the copy it had when the bytes started (not deleted, not
 * replaced meanwhile), else the new bytes are dropped and the answer says so. */
import { createHash } from 'node:crypto'
import type { BlobWriter, ByteSource, Context } from '../../../protocol/actor.js'
import { crc32Update } from '../../../protocol/checksums.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import type { BlobMsg } from '../../../protocol/scrubbing.js'
import { Mutation } from '../mutation.js'
import { newFileId, NO_ROOM, senderFailure } from '../engine/put.js'
import { commitMutation, promoteInBackground, type StoreState } from '../store-state.js'

type ReplaceMsg = Extract<BlobMsg, { kind: 'blob.replace' }>

/** Where the new bytes go: a temporary file for a file blob, memory for an inline one. */
type Target = { file: { id: string; writer: BlobWriter } } | { memory: Uint8Array[] }

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
  let target: Target
  if (expectedFile === undefined) target = { memory: [] }
  else {
    const id = newFileId(ctx)
    target = { file: { id, writer: await ctx.blobs.create(id) } }
  }
  try {
    await receiveVerified(source, target, msg.sha256, blob)
    if ('file' in target) await target.file.writer.commit()
  } catch (error) {
    const failure = error instanceof ServiceError ? error : senderFailure(error)
    source.cancel(failure.code, failure.message)
    if ('file' in target) {
      await target.file.writer.discard()
      await ctx.blobs.removeTemporary(target.file.id)
    }
    return fail(failure.code, failure.message)
  }
  const copy =
    'file' in target
      ? { file: target.file.id }
      : { inline: new Uint8Array(Buffer.concat(target.memory, blob.size)) }
  const mutation = new Mutation(ctx.kv)
  if (!mutation.replaceBlob(msg.sha256, expectedFile, copy)) {
    if ('file' in target) await ctx.blobs.removeTemporary(target.file.id)
    return ok({ replaced: false })
  }
  state.damaged.delete(msg.sha256)
  await commitMutation(state, ctx, mutation)
  if ('file' in target) promoteInBackground(state, ctx, target.file.id)
  ctx.log.info({ sha256: msg.sha256 }, 'blob copy replaced by a verified one')
  return ok({ replaced: true })
}

/** Takes the bytes into `target` while hashing them; throws `bad_digest` when they are not the
 * blob's (more bytes than its size, or another size, CRC32 or SHA-256 at the end). */
async function receiveVerified(
  source: ByteSource,
  target: Target,
  sha256: string,
  blob: { size: number; crc32: number },
): Promise<void> {
  const hash = createHash('sha256')
  let crc = 0
  let size = 0
  for (;;) {
    let chunk: Uint8Array | null
    try {
      chunk = await source.next()
    } catch (error) {
      throw senderFailure(error)
    }
    if (chunk === null) break
    size += chunk.byteLength
    if (size > blob.size)
      throw new ServiceError('bad_digest', `the copy is over ${blob.size} bytes`)
    hash.update(chunk)
    crc = crc32Update(crc, chunk)
    const taken = chunk
    if ('memory' in target) target.memory.push(taken)
    else await target.file.writer.write(taken, () => source.release(taken))
  }
  if (size !== blob.size) throw new ServiceError('bad_digest', `the copy has ${size} bytes`)
  if (crc !== blob.crc32) throw new ServiceError('bad_digest', 'the copy fails its CRC32')
  if (hash.digest('hex') !== sha256) {
    throw new ServiceError('bad_digest', 'the copy is not the blob: another SHA-256')
  }
}
