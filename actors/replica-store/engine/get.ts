/** @module object.get (and HEAD, when the message has neither stream nor `inline`): answers with
 * the object's info, plus the whole body for an inline blob. A file blob's reader is opened before
 * the reply, so an overwrite and garbage collection racing with this GET cannot pull the file away
 * (an unlinked file stays readable through an open descriptor); after the reply, a background pump
 * waits for the receiver's range and streams it in STREAM_CHUNK_BYTES reads. CRC32 is checked
 * whenever the whole blob passes: an inline body on every read, a file when the range covers all of
 * it. A multipart object's parts are separate blobs: its files are pinned (their removal as garbage
 * waits) and each is opened when the range reaches it, so a GET holds one descriptor at a time; its
 * one possible inline part (only the last part may be under the 5 MiB minimum) is read before the
 * reply. With `partNumber` the reply says which bytes that part holds; with `withParts`, each
 * part's size and checksum (GetObjectAttributes). A `stamped` GET (cluster mode) answers the key's
 * stamp with every ok answer, and a key or version not held as `absent` rather than an error.
 * A read of bytes (a first look with `inline`, or a stream) of a copy known damaged answers
 * `corrupt` before any byte; one that finds a CRC32 mismatch reports it (damaged.ts). */
import assert from 'node:assert/strict'
import type { BlobReader, ByteSink, Context, StreamHandle } from '../../../protocol/actor.js'
import { crc32Update } from '../../../protocol/checksums.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../../protocol/limits.js'
import type { AbsentResult, GetResult, LentFile } from '../../../protocol/messages.js'
import type { MarkerResult, ObjectMsg } from '../../../protocol/messages.js'
import type { Checksums } from '../../../protocol/objects.js'

import { changeStampOf } from '../../../protocol/object-attributes.js'
import { LOAN_PIN_MS } from '../../../protocol/timing.js'
import { isDamaged, reportDamage } from '../blobs/damaged.js'
import { blobKey, bucketKey, inlineKey, keyStampKey, objectKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import {
  blobsOf,
  objectInfo,
  type BlobRecord,
  type BlobRef,
  type ObjectRecord,
} from '../records.js'
import { keyStampOf } from '../replication/stamps.js'
import { GET_STREAMS_MAX, pin, unpin, type StoreState } from '../store-state.js'
import { findVersion } from './versions.js'

export type GetMsg = Extract<ObjectMsg, { kind: 'object.get' }>

/** Cluster mode: the stamp of the version's newest attribute change, when one came after its
 * write. Such a change leaves the key's stamp (the order of its versions) as it is, so a read
 * quorum tells two replicas of one version apart by this. */
function attributesChanged(record: ObjectRecord): { changeStamp?: string } {
  const changed = changeStampOf(record)
  return changed > (record.stamp ?? '') ? { changeStamp: changed } : {}
}

/** Reads of a file that vanished between reading its record and opening it: each retry reads the
 * records afresh (the object was overwritten and its old blob collected); more than a few in a row
 * means the file is really missing. */
const OPEN_ATTEMPTS_MAX = 3

export async function getObject(
  state: StoreState,
  msg: GetMsg,
  ctx: Context,
): Promise<Result<GetResult | MarkerResult | AbsentResult>> {
  for (let attempt = 0; attempt < OPEN_ATTEMPTS_MAX; attempt++) {
    const view = new Mutation(ctx.kv)
    const keys = [bucketKey(msg.bucket), objectKey(msg.bucket, msg.key)]
    if (msg.stamped === true) keys.push(keyStampKey(msg.bucket, msg.key))
    view.prefetch(keys)
    if (view.bucket(msg.bucket) === undefined) {
      return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
    }
    // Read in the same step as the version, so that the stamp is that of what is answered.
    const stamped = msg.stamped === true ? { keyStamp: keyStampOf(view, msg) } : {}
    const found = findVersion(ctx, view, msg, msg.versionId)
    if (!found.ok) {
      const absent = found.code === 'no_such_key' || found.code === 'no_such_version'
      if (absent && msg.stamped === true)
        return ok({ absent: true, keyStamp: stamped.keyStamp ?? null })
      return found
    }
    if (found.value.kind === 'marker') {
      const { versionId, lastModifiedMs, byId } = found.value
      return ok({ marker: { versionId, lastModifiedMs, byId }, ...stamped })
    }
    const { record, versioned } = found.value
    const stampedObject = msg.stamped === true ? { ...stamped, ...attributesChanged(record) } : {}
    const info = objectInfo(msg.key, record, versioned)
    const part = msg.partNumber === undefined ? undefined : partRange(record, msg.partNumber)
    if (part === null) return fail('invalid_part_number', `no part ${msg.partNumber}`)
    const head: GetResult =
      part === undefined ? { info, ...stampedObject } : { info, part, ...stampedObject }
    if (msg.withParts === true && record.parts !== undefined) {
      head.parts = record.parts.map(({ size, checksums }) => ({ size, checksums: checksums ?? {} }))
    }
    if (msg.stream === undefined && msg.inline !== true) return ok(head)
    const blobs = blobsOf(record)
    if (blobs.length > 1) {
      if (msg.stream !== undefined) {
        return streamParts(state, ctx, view, msg.stream, msg.deadlineMs, blobs, head)
      }
      // A first look reads no part's record: the damage known in memory is what it can tell.
      const damaged = blobs.find(({ sha256 }) => state.damaged.has(sha256))
      if (damaged !== undefined) return fail('corrupt', `part blob ${damaged.sha256} is damaged`)
      return ok(head)
    }
    const sha256 = (blobs[0] as { sha256: string }).sha256
    // Small objects are the common case: their bytes come with the blob record's read.
    view.prefetch([blobKey(sha256), inlineKey(sha256)])
    const blob = view.blob(sha256)
    if (blob === undefined) return fail('corrupt', `blob ${sha256} has no record`)
    if (blob.file === undefined) {
      const inline = inlineBody(state, ctx, view, info, sha256, blob)
      if (!inline.ok) return inline
      return ok({ ...inline.value, ...(part === undefined ? {} : { part }), ...stampedObject })
    }
    if (isDamaged(state, sha256, blob)) return fail('corrupt', `blob ${sha256} is damaged`)
    if (msg.stream === undefined && msg.lend === true) {
      const lent = await lendFile(state, ctx, blob.file, { sha256, blob })
      if (lent !== null) return ok({ ...head, lent })
    }
    if (msg.stream === undefined) return ok(head)
    if (state.streams.size >= GET_STREAMS_MAX) return fail('busy', 'too many GET streams open')
    await state.promoting.get(blob.file)?.catch(() => undefined)
    const reader = await ctx.blobs.open(blob.file)
    if (reader === undefined) continue
    if (reader.size !== blob.size) {
      await reader.close()
      const why = `blob file ${blob.file} has ${reader.size} bytes, not ${blob.size}`
      reportDamage(state, ctx, sha256, why)
      return fail('corrupt', why)
    }
    startPump(state, ctx, ctx.sink(msg.stream, msg.deadlineMs), reader, { sha256, blob }, true)
    return ok(head)
  }
  return fail('corrupt', `blob file of ${msg.bucket}/${msg.key} is missing`)
}

/** Lends a blob's file to a reader of this process (GetMsg.lend): keeps it from removal as
 * garbage for LOAN_PIN_MS, time enough to open it; null where blobs are not files. */
async function lendFile(
  state: StoreState,
  ctx: Context,
  file: string,
  copy: BlobCopy,
): Promise<LentFile | null> {
  const paths = ctx.blobs.pathsOf?.(file)
  if (paths === undefined) return null
  // Pinned in the step that read its record: no removal decided later can take it.
  pin(state, [file])
  ctx.after(LOAN_PIN_MS, () => unpin(state, ctx, [file]))
  // A promotion moves the file from one of its paths to the other: let it end first.
  await state.promoting.get(file)?.catch(() => undefined)
  return { paths, sha256: copy.sha256, size: copy.blob.size, crc32: copy.blob.crc32 }
}

/** The inclusive byte range of part `partNumber` and the part's own checksum, or null if the
 * object has no such part. An object not made by a multipart upload is its own part 1, as in S3. */
function partRange(record: ObjectRecord, partNumber: number): GetResult['part'] | null {
  const blobs = record.parts ?? [{ size: record.size, checksums: record.checksums }]
  if (partNumber < 1 || partNumber > blobs.length) return null
  let start = 0
  for (const blob of blobs.slice(0, partNumber - 1)) start += blob.size
  const { size, checksums } = blobs[partNumber - 1] as { size: number; checksums?: Checksums }
  const range = { start, end: start + size - 1 }
  return checksums === undefined || Object.keys(checksums).length === 0
    ? range
    : { ...range, checksums }
}

/** One blob of a multipart object as the pump reads it: where it starts in the object, and its
 * bytes if it is inline. */
interface Segment {
  offset: number
  sha256: string
  blob: BlobRecord
  inline: Uint8Array | null
}

function streamParts(
  state: StoreState,
  ctx: Context,
  view: Mutation,
  stream: StreamHandle,
  deadlineMs: number,
  blobs: readonly BlobRef[],
  head: GetResult,
): Result<GetResult> {
  const started = streamBlobs(state, ctx, view, stream, deadlineMs, blobs)
  return started.ok ? ok(head) : started
}

/** Starts a pump that sends the receiver's range of the concatenated `blobs` on `stream`. Their
 * files are pinned until it ends; the inline ones are read now. */
export function streamBlobs(
  state: StoreState,
  ctx: Context,
  view: Mutation,
  stream: StreamHandle,
  deadlineMs: number,
  blobs: readonly BlobRef[],
): Result<null> {
  if (state.streams.size >= GET_STREAMS_MAX) return fail('busy', 'too many GET streams open')
  const segments: Segment[] = []
  let offset = 0
  for (const { sha256, size } of blobs) {
    const blob = view.blob(sha256)
    if (blob === undefined || blob.size !== size) {
      return fail('corrupt', `part blob ${sha256} has no record or another size`)
    }
    if (isDamaged(state, sha256, blob)) return fail('corrupt', `part blob ${sha256} is damaged`)
    const inline = blob.file === undefined ? (ctx.kv.get(inlineKey(sha256)) ?? null) : null
    if (blob.file === undefined && inline === null) {
      return fail('corrupt', `inline blob ${sha256} has no bytes`)
    }
    segments.push({ offset, sha256, blob, inline: inline === null ? null : new Uint8Array(inline) })
    offset += size
  }
  const files = segments.flatMap((segment) =>
    segment.blob.file === undefined ? [] : [segment.blob.file],
  )
  pin(state, files)
  const sink = ctx.sink(stream, deadlineMs)
  const pump = sendSegments(state, ctx, sink, segments, offset)
    .catch((error: unknown) => ctx.log.error({ err: error }, 'GET stream of parts failed'))
    .finally(() => unpin(state, ctx, files))
  state.streams.set(pump, sink)
  void pump.finally(() => state.streams.delete(pump))
  return ok(null)
}

/** Streams the receiver's range across the segments it overlaps; each file is opened when the
 * range reaches it and closed before the next. */
async function sendSegments(
  state: StoreState,
  ctx: Context,
  sink: ByteSink,
  segments: readonly Segment[],
  size: number,
): Promise<void> {
  try {
    const want = await demandedRange(sink, size)
    if (want === null) return
    const { start, end } = want
    for (const segment of segments) {
      const from = Math.max(start, segment.offset) - segment.offset
      const to = Math.min(end, segment.offset + segment.blob.size - 1) - segment.offset
      if (from > to) continue
      const sent = await sendSegment(state, ctx, sink, segment, from, to)
      if (!sent) return
    }
    sink.end()
  } catch (error) {
    sink.abort('internal', error instanceof Error ? error.message : 'read failed')
  }
}

/** The receiver's range, once it asks; null (and the stream aborted when the range is bad) if it
 * cancelled or asked for bytes outside 0..size-1. */
async function demandedRange(
  sink: ByteSink,
  size: number,
): Promise<{ start: number; end: number } | null> {
  const want = await sink.demand()
  if (want === null) return null
  const { start, end } = want
  if (!(Number.isInteger(start) && Number.isInteger(end) && 0 <= start && start <= end)) {
    sink.abort('invalid_range', `bad range ${start}-${end}`)
    return null
  }
  if (end >= size) {
    sink.abort('invalid_range', `range ${start}-${end} past ${size} bytes`)
    return null
  }
  return want
}

/** Sends bytes from..to (inclusive, within the segment); false if it aborted the stream. */
async function sendSegment(
  state: StoreState,
  ctx: Context,
  sink: ByteSink,
  segment: Segment,
  from: number,
  to: number,
): Promise<boolean> {
  const { blob } = segment
  if (segment.inline !== null) {
    if (crc32Update(0, segment.inline) !== blob.crc32) {
      reportDamage(state, ctx, segment.sha256, 'inline blob fails its CRC32')
      sink.abort('corrupt', 'blob fails its CRC32')
      return false
    }
    await sink.write(segment.inline.slice(from, to + 1))
    return true
  }
  assert(blob.file !== undefined)
  await state.promoting.get(blob.file)?.catch(() => undefined)
  const reader = await ctx.blobs.open(blob.file)
  if (reader === undefined || reader.size !== blob.size) {
    await reader?.close()
    const why = `part file ${blob.file} is missing or has another size`
    reportDamage(state, ctx, segment.sha256, why)
    sink.abort('corrupt', why)
    return false
  }
  try {
    return await sendSlices(state, ctx, sink, reader, segment, from, to, true)
  } finally {
    await reader.close()
  }
}

/** A blob as a read names it: its content address and its record. */
export interface BlobCopy {
  sha256: string
  blob: BlobRecord
}

/** Reads from..to of one blob file in STREAM_CHUNK_BYTES slices and sends them, reading the next
 * slice while the current one is checked and handed over. When `checked`, CRC32 is checked when
 * the slices cover the whole blob, before its last chunk goes out, so a corrupt blob never arrives
 * complete, and a mismatch is reported (the scrubber reads unchecked: it checks the bytes itself).
 * False if it aborted the stream. */
async function sendSlices(
  state: StoreState,
  ctx: Context,
  sink: ByteSink,
  reader: BlobReader,
  copy: BlobCopy,
  from: number,
  to: number,
  checked: boolean,
): Promise<boolean> {
  const { blob } = copy
  const whole = checked && from === 0 && to === blob.size - 1
  const readSlice = (offset: number): Promise<Uint8Array> =>
    reader.read(offset, Math.min(STREAM_CHUNK_BYTES, to + 1 - offset))
  let crc = 0
  let ahead: Promise<Uint8Array> | null = readSlice(from)
  try {
    for (let offset = from; offset <= to; offset += STREAM_CHUNK_BYTES) {
      const length = Math.min(STREAM_CHUNK_BYTES, to + 1 - offset)
      assert(ahead !== null) // Started for this offset by the previous turn (or before the loop).
      const chunk = await ahead
      const next = offset + STREAM_CHUNK_BYTES
      ahead = next <= to ? readSlice(next) : null
      if (state.stopping) {
        sink.abort('unavailable', 'replica-store is stopping')
        return false
      }
      if (chunk.byteLength !== length) {
        if (checked) reportDamage(state, ctx, copy.sha256, `blob file ${blob.file} is short`)
        sink.abort('corrupt', `blob file ended at ${offset + chunk.byteLength}`)
        return false
      }
      if (whole) crc = crc32Update(crc, chunk)
      if (whole && offset + length > to && crc !== blob.crc32) {
        reportDamage(state, ctx, copy.sha256, `blob file ${blob.file} fails its CRC32`)
        sink.abort('corrupt', 'blob fails its CRC32')
        return false
      }
      await sink.write(chunk)
    }
    return true
  } finally {
    // The reader closes after this: a read still running must settle first.
    await ahead?.catch(() => undefined)
  }
}

function inlineBody(
  state: StoreState,
  ctx: Context,
  view: Mutation,
  info: GetResult['info'],
  sha256: string,
  blob: BlobRecord,
): Result<GetResult> {
  const bytes = checkedInline(state, ctx, view, sha256, blob)
  return bytes.ok ? ok({ info, body: bytes.value }) : bytes
}

/** An inline blob's bytes, checked against its size and CRC32 (every read: they are at hand), in
 * a copy that owns its buffer (a reply's body is transferred to the receiver). */
export function checkedInline(
  state: StoreState,
  ctx: Context,
  view: Mutation,
  sha256: string,
  blob: BlobRecord,
): Result<Uint8Array> {
  const stored = view.get(inlineKey(sha256))
  if (stored === undefined) return fail('corrupt', `inline blob ${sha256} has no bytes`)
  if (stored.byteLength !== blob.size || crc32Update(0, stored) !== blob.crc32) {
    reportDamage(state, ctx, sha256, 'inline blob fails its CRC32')
    return fail('corrupt', `inline blob ${sha256} fails its CRC32`)
  }
  return ok(new Uint8Array(stored))
}

/** Starts the background pump that sends the receiver's range of one blob file (see sendRange);
 * `stop` aborts it. */
export function startPump(
  state: StoreState,
  ctx: Context,
  sink: ByteSink,
  reader: BlobReader,
  copy: BlobCopy,
  checked: boolean,
): void {
  const pump = sendRange(state, ctx, sink, reader, copy, checked).catch((error: unknown) => {
    ctx.log.error({ err: error, file: copy.blob.file }, 'blob stream failed')
  })
  state.streams.set(pump, sink)
  void pump.finally(() => state.streams.delete(pump))
}

/** Streams the range the receiver asks for, then closes the reader whatever happened. */
async function sendRange(
  state: StoreState,
  ctx: Context,
  sink: ByteSink,
  reader: BlobReader,
  copy: BlobCopy,
  checked: boolean,
): Promise<void> {
  assert.equal(reader.size, copy.blob.size)
  try {
    const want = await demandedRange(sink, copy.blob.size)
    if (want === null) return
    const { start, end } = want
    if (!(await sendSlices(state, ctx, sink, reader, copy, start, end, checked))) return
    sink.end()
  } catch (error) {
    // A receiver that went away makes `write` reject; aborting then is a harmless no-op.
    sink.abort('internal', error instanceof Error ? error.message : 'read failed')
  } finally {
    await reader.close()
  }
}
