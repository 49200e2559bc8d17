/** @module A copy of a blob's bytes taken from a stream and checked against the blob before
 * anything keeps it: into a temporary file (synced by the writer's commit) for a file blob, into
 * memory for an inline one. The bytes are hashed as they come: more than the blob's size stops the
 * copy at once, and another size, SHA-256 or (when the caller knows it) CRC32 at the end refuses
 * it with `bad_digest`. A copy that fails leaves nothing behind: the stream is cancelled with the
 * reason and the temporary file removed. How long it may take is the stream's (the source's
 * deadline). The scrubber's heal (blob-replace.ts) and a merge's fetch of a missing blob
 * (fetch-blob.ts) both take their bytes so. */
import { createHash } from 'node:crypto'
import type { BlobWriter, ByteSource, Context } from '../../../protocol/actor.js'
import { crc32Update } from '../../../protocol/checksums.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import { newFileId, senderFailure } from '../engine/put.js'
import type { NewBlob } from '../mutation.js'

/** The blob the bytes must be: its address and size, and its CRC32 where a record gives it. */
export interface ExpectedBlob {
  sha256: string
  size: number
  crc32?: number
}

export interface CopyOptions {
  /** In memory (the blob is inline), or into a temporary file. */
  inline: boolean
  /** The sender's own answer, where it comes apart from the stream (a peer's call): a refusal
   * ends the copy at once, as it may send no bytes at all, and the copy is kept only once the
   * answer is a success. */
  answer?: Promise<void>
}

/** The checked copy: a temporary file to promote or inline bytes, with the CRC32 computed. */
export async function takeCheckedCopy(
  ctx: Context,
  source: ByteSource,
  blob: ExpectedBlob,
  options: CopyOptions,
): Promise<Result<NewBlob>> {
  const { answer } = options
  answer?.catch(() => undefined)
  let target: Target | null = null
  try {
    target = options.inline ? { memory: new Uint8Array(blob.size) } : await fileTarget(ctx)
    const into = target
    const keep = (chunk: Uint8Array, at: number): Promise<void> => {
      if ('file' in into) return into.writer.write(chunk, () => source.release(chunk))
      into.memory.set(chunk, at)
      source.release(chunk)
      return Promise.resolve()
    }
    const received = receive(source, blob, keep)
    const crc32 = await (answer === undefined
      ? received
      : Promise.race([received, refusal(answer)]))
    await answer
    if (!('file' in into)) return ok({ size: blob.size, crc32, inline: into.memory })
    await into.writer.commit()
    return ok({ size: blob.size, crc32, file: into.file })
  } catch (error) {
    const failure = senderFailure(error)
    source.cancel(failure.code, failure.message)
    if (target !== null && 'file' in target) {
      await target.writer.discard()
      await ctx.blobs.removeTemporary(target.file)
    }
    return fail(failure.code, failure.message)
  }
}

/** Where the bytes go: a temporary file (its id) for a file blob, memory for an inline one. */
type Target = { file: string; writer: BlobWriter } | { memory: Uint8Array }

async function fileTarget(ctx: Context): Promise<Target> {
  const file = newFileId(ctx)
  return { file, writer: await ctx.blobs.create(file) }
}

/** Rejects as `answer` does; never resolves (a success is awaited once the bytes are in). */
function refusal(answer: Promise<void>): Promise<never> {
  return answer.then(() => new Promise<never>(() => undefined))
}

/** Takes the bytes into `keep` (each with its offset) while hashing them: the CRC32 of a copy that
 * is the blob, or a `bad_digest` throw. */
async function receive(
  source: ByteSource,
  blob: ExpectedBlob,
  keep: (chunk: Uint8Array, at: number) => Promise<void>,
): Promise<number> {
  const hash = createHash('sha256')
  let crc = 0
  let size = 0
  for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
    const at = size
    size += chunk.byteLength
    if (size > blob.size) {
      throw new ServiceError('bad_digest', `the copy is over ${blob.size} bytes`)
    }
    hash.update(chunk)
    crc = crc32Update(crc, chunk)
    await keep(chunk, at)
  }
  if (size !== blob.size) throw new ServiceError('bad_digest', `the copy has ${size} bytes`)
  if (blob.crc32 !== undefined && crc !== blob.crc32) {
    throw new ServiceError('bad_digest', 'the copy fails its CRC32')
  }
  if (hash.digest('hex') !== blob.sha256) {
    throw new ServiceError('bad_digest', 'the copy is not the blob: another SHA-256')
  }
  return crc
}
