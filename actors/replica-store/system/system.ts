/** @module system.get, system.put, system.delete, system.list and system.stats. System records are
 * small named values other actors keep here (iam's users and keys), in their own key range; a put
 * or delete is durable when it returns. Local records (system.local-get and -put: the scrubber's
 * cursor) are the same, of this node alone: outside the catalog, so a cluster never publishes
 * them. A listing returns every record whose name starts with a
 * prefix, or fails: a silently cut list would make iam forget the users past the cut. Stats come
 * from the counters record, kept by every mutating batch: no scan. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { StoreStats, SystemRecord } from '../../../protocol/messages.js'
import { localKey, successor, SYSTEM_END, SYSTEM_PREFIX, systemKey } from '../keys.js'
import { Mutation, totalCounters } from '../mutation.js'
import { durably, type StoreState } from '../store-state.js'

/** A system record's largest value: they hold a few users' records, never bodies. */
export const SYSTEM_RECORD_BYTES_MAX = 64 * 1024
/** Records one listing returns at most: iam keeps one per user, far fewer than this. */
export const SYSTEM_RECORDS_LISTED_MAX = 100_000
/** System records read per scan while listing. */
const SYSTEM_SCAN_ROWS = 1000

export function getSystemRecord(name: string, ctx: Context): Result<Uint8Array | null> {
  const stored = ctx.kv.get(systemKey(name))
  // A copy that owns its buffer: the reply is transferred to the caller.
  return ok(stored === undefined ? null : new Uint8Array(stored))
}

export async function putSystemRecord(
  state: StoreState,
  name: string,
  value: Uint8Array,
  ctx: Context,
): Promise<Result<null>> {
  assert(value.byteLength <= SYSTEM_RECORD_BYTES_MAX, 'system record too large')
  const record = new Uint8Array(value)
  const key = systemKey(name)
  const stamps = state.catalog?.stampOps([key]) ?? []
  await durably(state, ctx, ctx.kv.commit([{ type: 'put', key, value: record }, ...stamps]))
  return ok(null)
}

/** Deletes a record; a missing one is already deleted, so that is a success too. */
export async function deleteSystemRecord(
  state: StoreState,
  name: string,
  ctx: Context,
): Promise<Result<null>> {
  const key = systemKey(name)
  const stamps = state.catalog?.stampOps([key]) ?? []
  await durably(state, ctx, ctx.kv.commit([{ type: 'del', key }, ...stamps]))
  return ok(null)
}

/** Every record whose name starts with `prefix`, ascending by name (the key order), each value a
 * copy that owns its buffer (the reply is transferred). */
export function listSystemRecords(prefix: string, ctx: Context): Result<SystemRecord[]> {
  const from = SYSTEM_PREFIX + prefix
  const past = successor(prefix)
  // No successor (an empty prefix, or one of U+10FFFF only): the rest of the range matches.
  const end = past === null ? SYSTEM_END : SYSTEM_PREFIX + past
  const records: SystemRecord[] = []
  let range: { gte: string } | { gt: string } = { gte: from }
  for (let scans = 0; ; scans++) {
    assert(scans <= SYSTEM_RECORDS_LISTED_MAX / SYSTEM_SCAN_ROWS + 1, 'system list did not end')
    // Reading one row past the bound tells a complete listing from one that would be cut.
    const limit = Math.min(SYSTEM_SCAN_ROWS, SYSTEM_RECORDS_LISTED_MAX + 1 - records.length)
    const rows = ctx.kv.scan({ ...range, lt: end, limit })
    for (const [key, stored] of rows) {
      assert(key.startsWith(from))
      records.push({ name: key.slice(SYSTEM_PREFIX.length), value: new Uint8Array(stored) })
    }
    if (records.length > SYSTEM_RECORDS_LISTED_MAX) {
      return fail('internal', `more than ${SYSTEM_RECORDS_LISTED_MAX} system records '${prefix}*'`)
    }
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < limit) return ok(records)
    range = { gt: last[0] }
  }
}

export function getLocalRecord(name: string, ctx: Context): Result<Uint8Array | null> {
  const stored = ctx.kv.get(localKey(name))
  return ok(stored === undefined ? null : new Uint8Array(stored))
}

export async function putLocalRecord(
  state: StoreState,
  name: string,
  value: Uint8Array,
  ctx: Context,
): Promise<Result<null>> {
  assert(value.byteLength <= SYSTEM_RECORD_BYTES_MAX, 'local record too large')
  const record = new Uint8Array(value)
  await durably(state, ctx, ctx.kv.commit([{ type: 'put', key: localKey(name), value: record }]))
  return ok(null)
}

export function storeStats(ctx: Context): Result<StoreStats> {
  const counters = totalCounters(ctx.kv)
  return ok({
    bucketsCount: counters.buckets,
    objectsCount: counters.objects,
    storageUsedBytes: counters.bytes,
    uniqueBlobs: counters.blobs,
    totalReferences: counters.refs,
  })
}
