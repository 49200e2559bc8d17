/** @module A blob a merge lacks, fetched by its content address from the replica that sent the
 * record naming it (`blob.read` through Replica.Read, which that node serves checked, as for a
 * scrubber's heal), BEFORE the merge's batch: up to INLINE_BLOB_BYTES_MAX in memory, a larger one
 * into a temporary file, synced. The bytes are verified against the address (size and SHA-256)
 * as they come; the CRC32 the blob record keeps is computed on the way. A blob of no bytes needs
 * no call. */
import { createHash } from 'node:crypto'
import type { BlobWriter, ByteSource, Context } from '../../../protocol/actor.js'
import { crc32Update } from '../../../protocol/checksums.js'
import type { PeerTarget } from '../../../protocol/cluster.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import { INLINE_BLOB_BYTES_MAX } from '../../../protocol/limits.js'
import { streamDeadlineMs } from '../../../protocol/timing.js'
import type { NewBlob } from '../mutation.js'
import { newFileId, NO_ROOM, senderFailure } from '../engine/put.js'

/** A verified copy, ready to become a blob in the merge's batch. */
export type FetchedBlob = NewBlob

export async function fetchBlob(
  ctx: Context,
  from: PeerTarget,
  blob: { sha256: string; size: number },
  deadlineMs: number,
): Promise<Result<FetchedBlob>> {
  const inline = blob.size <= INLINE_BLOB_BYTES_MAX
  if (blob.size === 0) return verified(blob, { size: 0, crc32: 0, inline: new Uint8Array(0) })
  if (!(await ctx.blobs.admits(blob.size, inline))) return fail('insufficient_storage', NO_ROOM)
  const until = Math.min(deadlineMs, streamDeadlineMs(ctx.now(), blob.size))
  const [mine, theirs] = ctx.openStream()
  const source = ctx.source(mine, until)
  const range = { start: 0, end: blob.size - 1 }
  const body = { msg: { kind: 'blob.read', sha256: blob.sha256 }, range }
  const answer = ctx.peers.callForBody(from, 'Replica.Read', body, theirs, until)
  // A refusal (no such blob there, the peer out of reach) may send nothing on the stream: the
  // wait for bytes ends with it rather than at the deadline.
  const refused = answer.then((answered) =>
    answered.ok
      ? new Promise<never>(() => undefined)
      : Promise.reject(new ServiceError(answered.code, answered.detail)),
  )
  refused.catch(() => undefined)
  const file = inline ? null : { id: newFileId(ctx), writer: null as BlobWriter | null }
  try {
    if (file !== null) file.writer = await ctx.blobs.create(file.id)
    const memory: Uint8Array[] = []
    const received = receive(source, blob, (chunk, done) => {
      // Kept in memory, the chunk is not given back to the sender for reuse.
      if (file?.writer == null) {
        memory.push(chunk)
        return Promise.resolve()
      }
      return file.writer.write(chunk, done)
    })
    const crc32 = await Promise.race([received, refused])
    const answered = await answer
    if (!answered.ok) throw new ServiceError(answered.code, answered.detail)
    if (file?.writer == null) {
      return ok({ size: blob.size, crc32, inline: new Uint8Array(Buffer.concat(memory)) })
    }
    await file.writer.commit()
    return ok({ size: blob.size, crc32, file: file.id })
  } catch (error) {
    const failure = error instanceof ServiceError ? error : senderFailure(error)
    source.cancel(failure.code, failure.message)
    if (file?.writer != null) {
      await file.writer.discard()
      await ctx.blobs.removeTemporary(file.id)
    }
    return fail(
      failure.code,
      `blob ${blob.sha256} from ${from.id ?? from.grpcAddr}: ${failure.message}`,
    )
  }
}

function verified(blob: { sha256: string }, copy: FetchedBlob): Result<FetchedBlob> {
  const empty = createHash('sha256').digest('hex')
  return blob.sha256 === empty
    ? ok(copy)
    : fail('bad_digest', 'a blob of no bytes with another address')
}

/** Takes the bytes into `keep`, checked: the CRC32 of a copy that is the blob, or `bad_digest`. */
async function receive(
  source: ByteSource,
  blob: { sha256: string; size: number },
  keep: (chunk: Uint8Array, done: () => void) => Promise<void>,
): Promise<number> {
  const hash = createHash('sha256')
  let crc = 0
  let size = 0
  for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
    size += chunk.byteLength
    if (size > blob.size)
      throw new ServiceError('bad_digest', `the copy is over ${blob.size} bytes`)
    hash.update(chunk)
    crc = crc32Update(crc, chunk)
    const taken = chunk
    await keep(taken, () => source.release(taken))
  }
  if (size !== blob.size) throw new ServiceError('bad_digest', `the copy has ${size} bytes`)
  if (hash.digest('hex') !== blob.sha256) {
    throw new ServiceError('bad_digest', 'the copy is not the blob: another SHA-256')
  }
  return crc
}
