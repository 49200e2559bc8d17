/** @module A blob a merge lacks, fetched by its content address from the replica that sent the
 * record naming it (`blob.read` through Replica.Read, which that node serves checked, as for a
 * scrubber's heal), BEFORE the merge's batch: up to INLINE_BLOB_BYTES_MAX in memory, a larger one
 * into a temporary file, synced (blobs/checked-copy.ts). The bytes are verified against the address
 * (size and SHA-256) as they come; the CRC32 the blob record keeps is computed on the way. A blob
 * of no bytes needs no call. */
import { createHash } from 'node:crypto'
import type { Context } from '../../../protocol/actor.js'
import type { PeerTarget } from '../../../protocol/cluster.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import { INLINE_BLOB_BYTES_MAX } from '../../../protocol/limits.js'
import { streamDeadlineMs } from '../../../protocol/timing.js'
import type { NewBlob } from '../mutation.js'
import { NO_ROOM } from '../engine/put.js'
import { takeCheckedCopy } from '../blobs/checked-copy.js'

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
  const call = ctx.peers.callForBody(from, 'Replica.Read', body, theirs, until)
  // A refusal (no such blob there, the peer out of reach) may send nothing on the stream: the
  // copy ends with it rather than at the deadline.
  const answer = call.then((answered) => {
    if (!answered.ok) throw new ServiceError(answered.code, answered.detail)
  })
  const address = { sha256: blob.sha256, size: blob.size }
  const copy = await takeCheckedCopy(ctx, source, address, { inline, answer })
  if (copy.ok) return copy
  const peer = from.id ?? from.grpcAddr
  return fail(copy.code, `blob ${blob.sha256} from ${peer}: ${copy.detail}`)
}

function verified(blob: { sha256: string }, copy: FetchedBlob): Result<FetchedBlob> {
  const empty = createHash('sha256').digest('hex')
  return blob.sha256 === empty
    ? ok(copy)
    : fail('bad_digest', 'a blob of no bytes with another address')
}
