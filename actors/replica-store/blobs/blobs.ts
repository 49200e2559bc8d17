/** @module The scrubber's requests to its store (protocol/scrubbing.ts): `blob.list` pages through
 * the blob records (H\0, sha256 order), `blob.read` sends one blob whole (inline bytes in the
 * answer, a file's on the stream once asked, as a GET does), `blob.mark` records the scrubber's
 * verdict on a copy. `blob.read` of a peer (Replica.Read, a scrubber healing its copy elsewhere)
 * is checked: a copy known damaged is refused and the CRC32 is checked as the bytes go. The
 * scrubber's own reads are not: it checks the bytes on its own thread. Every answer says how busy
 * the store is, which the scrubber yields to. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { BlobEntry, BlobHead, BlobMsg, BlobPage } from '../../../protocol/scrubbing.js'
import { holdDamaged, isDamaged } from './damaged.js'
import { checkedInline, startPump } from '../engine/get.js'
import { BLOB_END, BLOB_PREFIX, blobKey, inlineKey, isSha256 } from '../keys.js'
import { Mutation, totalCounters } from '../mutation.js'
import { decodeBlob } from '../records.js'
import { commitMutation, GET_STREAMS_MAX, type StoreState } from '../store-state.js'

/** Records one page lists at most: a page is one scan, and the scrubber reads each blob after. */
export const BLOB_PAGE_MAX = 1_000
/** A file that vanished between its record's read and its opening is looked for again (a heal
 * replaced it); more than a few in a row means it is missing. */
const OPEN_ATTEMPTS_MAX = 3

type ListMsg = Extract<BlobMsg, { kind: 'blob.list' }>
type ReadMsg = Extract<BlobMsg, { kind: 'blob.read' }>
type MarkMsg = Extract<BlobMsg, { kind: 'blob.mark' }>

/** How busy the store is: requests in hand and GET streams sending. */
export function loadOf(state: StoreState): number {
  return state.handling + state.streams.size
}

export function listBlobs(state: StoreState, msg: ListMsg, ctx: Context): Result<BlobPage> {
  assert(Number.isInteger(msg.limit) && msg.limit > 0 && msg.limit <= BLOB_PAGE_MAX)
  assert(msg.after === null || isSha256(msg.after))
  const from = msg.after === null ? { gte: BLOB_PREFIX } : { gt: blobKey(msg.after) }
  const rows = ctx.kv.scanText({ ...from, lt: BLOB_END, limit: msg.limit })
  const blobs = rows.map(([key, text]): BlobEntry => {
    const { size, crc32, corrupt } = decodeBlob(text)
    const entry: BlobEntry = { sha256: key.slice(BLOB_PREFIX.length), size, crc32 }
    if (corrupt === true) entry.corrupt = true
    return entry
  })
  const storedBytes = totalCounters(ctx.kv).bytes
  return ok({ blobs, storedBytes, load: loadOf(state) })
}

export async function readBlob(
  state: StoreState,
  msg: ReadMsg,
  ctx: Context,
): Promise<Result<BlobHead>> {
  const checked = msg.unchecked !== true
  for (let attempt = 0; attempt < OPEN_ATTEMPTS_MAX; attempt++) {
    const view = new Mutation(ctx.kv)
    view.prefetch([blobKey(msg.sha256), inlineKey(msg.sha256)])
    const blob = view.blob(msg.sha256)
    if (blob === undefined) return fail('no_such_key', `no blob ${msg.sha256} here`)
    if (checked && isDamaged(state, msg.sha256, blob)) {
      return fail('corrupt', `blob ${msg.sha256} is damaged here`)
    }
    const head: BlobHead = { size: blob.size, crc32: blob.crc32, load: loadOf(state) }
    if (blob.corrupt === true) head.corrupt = true
    if (blob.file === undefined) {
      if (checked) {
        const bytes = checkedInline(state, ctx, view, msg.sha256, blob)
        return bytes.ok ? ok({ ...head, body: bytes.value }) : bytes
      }
      const stored = view.get(inlineKey(msg.sha256))
      if (stored === undefined) return ok({ ...head, unreadable: 'the inline blob has no bytes' })
      return ok({ ...head, body: new Uint8Array(stored) })
    }
    if (msg.stream === undefined) return fail('invalid_request', 'a blob file is read on a stream')
    if (state.streams.size >= GET_STREAMS_MAX) return fail('busy', 'too many streams open')
    await state.promoting.get(blob.file)?.catch(() => undefined)
    const reader = await ctx.blobs.open(blob.file)
    if (reader === undefined) continue
    if (reader.size !== blob.size) {
      await reader.close()
      const why = `blob file ${blob.file} has ${reader.size} bytes, not ${blob.size}`
      return checked ? fail('corrupt', why) : ok({ ...head, unreadable: why })
    }
    const copy = { sha256: msg.sha256, blob }
    startPump(state, ctx, ctx.sink(msg.stream, msg.deadlineMs), reader, copy, checked)
    return ok(head)
  }
  const why = `the file of blob ${msg.sha256} is missing`
  if (checked) return fail('corrupt', why)
  const blob = new Mutation(ctx.kv).blob(msg.sha256)
  if (blob === undefined) return fail('no_such_key', `no blob ${msg.sha256} here`)
  return ok({ size: blob.size, crc32: blob.crc32, load: loadOf(state), unreadable: why })
}

/** The scrubber's verdict: a corrupt copy is marked in its record (reads of it answer `corrupt`
 * at once, across restarts too); a copy it read whole and right loses both marks. */
export async function markBlob(
  state: StoreState,
  msg: MarkMsg,
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv, state.shard)
  const blob = mutation.blob(msg.sha256)
  if (msg.corrupt && blob !== undefined) holdDamaged(state, msg.sha256)
  else state.damaged.delete(msg.sha256)
  if (blob === undefined || (blob.corrupt === true) === msg.corrupt) return ok(null)
  mutation.markBlob(msg.sha256, msg.corrupt)
  await commitMutation(state, ctx, mutation)
  return ok(null)
}
