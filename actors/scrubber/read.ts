/** @module One read of a local blob, whole, for its CRC32: the store sends the bytes unchecked
 * (`blob.read`, an inline blob's in the answer, a file's on a stream as a GET's) and the CRC32 is
 * computed here, on the scrubber's own thread. A copy the store cannot read whole (its file is
 * missing, short or long), or whose stream it aborts as `corrupt`, reads as bad; a store that is
 * down, busy or slow is a failure, not a verdict. */
import type { Context } from '../../protocol/actor.js'
import { crc32Update } from '../../protocol/checksums.js'
import { ServiceError, type ErrorCode } from '../../protocol/errors.js'
import type { BlobHead } from '../../protocol/scrubbing.js'
import { streamDeadlineMs } from '../../protocol/timing.js'
import { STORE_CALL_MS } from './cursor.js'

export type Reading =
  /** `good`: every byte came and their CRC32 is the record's. `marked`: the record says the copy
   * was found corrupt before. `load`: how busy the store was. */
  | { kind: 'read'; good: boolean; size: number; marked: boolean; load: number }
  /** No such blob any more (its last reference went). */
  | { kind: 'gone' }
  | { kind: 'failed'; code: ErrorCode; detail: string }

export async function readWhole(ctx: Context, sha256: string): Promise<Reading> {
  const [mine, theirs] = ctx.openStream()
  const answer = await ctx.call('replica-store', {
    kind: 'blob.read',
    sha256,
    stream: theirs,
    unchecked: true,
    requestId: 'scrubber-read',
    deadlineMs: ctx.now() + STORE_CALL_MS,
  })
  const size = answer.ok ? answer.value.size : 0
  const source = ctx.source(mine, streamDeadlineMs(ctx.now(), size))
  if (!answer.ok) {
    source.cancel('unavailable', 'the read failed')
    if (answer.code === 'no_such_key') return { kind: 'gone' }
    return { kind: 'failed', code: answer.code, detail: answer.detail }
  }
  const head = answer.value
  const verdict = { kind: 'read' as const, size, marked: head.corrupt === true, load: head.load }
  if (head.unreadable !== undefined) {
    source.cancel('unavailable', 'no bytes follow')
    return { ...verdict, good: false }
  }
  if (head.body !== undefined) {
    source.cancel('unavailable', 'the bytes came with the answer')
    const good = head.body.byteLength === size && crc32Update(0, head.body) === head.crc32
    return { ...verdict, good }
  }
  source.request(0, size - 1)
  let crc = 0
  let read = 0
  try {
    for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
      crc = crc32Update(crc, chunk)
      read += chunk.byteLength
      source.release(chunk)
    }
  } catch (error) {
    const code = error instanceof ServiceError ? error.code : 'internal'
    if (code === 'corrupt') return { ...verdict, good: false }
    return { kind: 'failed', code, detail: String(error) }
  }
  return { ...verdict, good: read === size && crc === head.crc32 }
}
