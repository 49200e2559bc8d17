/** @module object.get (and HEAD, when the message has neither stream nor `inline`): answers with
 * the object's info, plus the whole body for an inline blob. A file blob's reader is opened before
 * the reply, so an overwrite and garbage collection racing with this GET cannot pull the file away
 * (an unlinked file stays readable through an open descriptor); after the reply, a background pump
 * waits for the receiver's range and streams it in STREAM_CHUNK_BYTES reads. CRC32 is checked
 * whenever the whole blob passes: an inline body on every read, a file when the range covers all of
 * it. */
import assert from 'node:assert/strict'
import { crc32 } from 'node:zlib'
import type { BlobReader, ByteSink, Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import type { GetResult, ObjectMsg } from '../../protocol/messages.js'
import { inlineKey } from './keys.js'
import { Mutation } from './mutation.js'
import { objectInfo, type BlobRecord } from './records.js'
import { GET_STREAMS_MAX, type StoreState } from './store-state.js'

export type GetMsg = Extract<ObjectMsg, { kind: 'object.get' }>

/** Reads of a file that vanished between reading its record and opening it: each retry reads the
 * records afresh (the object was overwritten and its old blob collected); more than a few in a row
 * means the file is really missing. */
const OPEN_ATTEMPTS_MAX = 3

export async function getObject(
  state: StoreState,
  msg: GetMsg,
  ctx: Context,
): Promise<Result<GetResult>> {
  for (let attempt = 0; attempt < OPEN_ATTEMPTS_MAX; attempt++) {
    const view = new Mutation(ctx.kv)
    if (view.bucket(msg.bucket) === undefined) {
      return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
    }
    const record = view.object(msg.bucket, msg.key)
    if (record === undefined) return fail('no_such_key', `no key ${msg.key} in ${msg.bucket}`)
    const info = objectInfo(msg.key, record)
    if (msg.stream === undefined && msg.inline !== true) return ok({ info })
    const blob = view.blob(record.sha256)
    if (blob === undefined) return fail('corrupt', `blob ${record.sha256} has no record`)
    if (blob.file === undefined) return inlineBody(ctx, info, record.sha256, blob)
    if (msg.stream === undefined) return ok({ info })
    if (state.streams.size >= GET_STREAMS_MAX) return fail('busy', 'too many GET streams open')
    await state.promoting.get(blob.file)?.catch(() => undefined)
    const reader = await ctx.blobs.open(blob.file)
    if (reader === undefined) continue
    if (reader.size !== blob.size) {
      await reader.close()
      return fail('corrupt', `blob file ${blob.file} has ${reader.size} bytes, not ${blob.size}`)
    }
    const sink = ctx.sink(msg.stream, msg.deadlineMs)
    const pump = sendRange(state, ctx, sink, reader, blob).catch((error: unknown) => {
      ctx.log.error({ err: error, file: blob.file }, 'GET stream failed')
    })
    state.streams.set(pump, sink)
    void pump.finally(() => state.streams.delete(pump))
    return ok({ info })
  }
  return fail('corrupt', `blob file of ${msg.bucket}/${msg.key} is missing`)
}

function inlineBody(
  ctx: Context,
  info: GetResult['info'],
  sha256: string,
  blob: BlobRecord,
): Result<GetResult> {
  const stored = ctx.kv.get(inlineKey(sha256))
  if (stored === undefined) return fail('corrupt', `inline blob ${sha256} has no bytes`)
  if (stored.byteLength !== blob.size || crc32(stored) !== blob.crc32) {
    ctx.log.error({ sha256 }, 'inline blob fails its CRC32')
    return fail('corrupt', `inline blob ${sha256} fails its CRC32`)
  }
  // A copy that owns its buffer: the reply's body is transferred to the receiver.
  return ok({ info, body: new Uint8Array(stored) })
}

/** Streams the range the receiver asks for, then closes the reader whatever happened. */
async function sendRange(
  state: StoreState,
  ctx: Context,
  sink: ByteSink,
  reader: BlobReader,
  blob: BlobRecord,
): Promise<void> {
  assert.equal(reader.size, blob.size)
  try {
    const want = await sink.demand()
    if (want === null) return
    const { start, end } = want
    if (!(Number.isInteger(start) && Number.isInteger(end) && 0 <= start && start <= end)) {
      sink.abort('invalid_range', `bad range ${start}-${end}`)
      return
    }
    if (end >= blob.size) {
      sink.abort('invalid_range', `range ${start}-${end} past ${blob.size} bytes`)
      return
    }
    const whole = start === 0 && end === blob.size - 1
    let crc = 0
    for (let offset = start; offset <= end; offset += STREAM_CHUNK_BYTES) {
      if (state.stopping) {
        sink.abort('unavailable', 'replica-store is stopping')
        return
      }
      const length = Math.min(STREAM_CHUNK_BYTES, end + 1 - offset)
      const chunk = await reader.read(offset, length)
      if (chunk.byteLength !== length) {
        sink.abort('corrupt', `blob file ended at ${offset + chunk.byteLength}`)
        return
      }
      if (whole) crc = crc32(chunk, crc)
      // Checked before the last chunk goes out, so a corrupt blob never arrives complete.
      if (whole && offset + length > end && crc !== blob.crc32) {
        ctx.log.error({ file: blob.file }, 'blob file fails its CRC32')
        sink.abort('corrupt', 'blob fails its CRC32')
        return
      }
      await sink.write(chunk)
    }
    sink.end()
  } catch (error) {
    // A receiver that went away makes `write` reject; aborting then is a harmless no-op.
    sink.abort('internal', error instanceof Error ? error.message : 'read failed')
  } finally {
    await reader.close()
  }
}
