/** @module system.get, system.put and system.stats. System records are small named values other
 * actors keep here (iam's users and keys), in their own key range; a put is durable when it
 * returns. Stats come from the counters record, kept by every mutating batch: no scan. */
import assert from 'node:assert/strict'
import type { Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { StoreStats } from '../../protocol/messages.js'
import { systemKey } from './keys.js'
import { Mutation } from './mutation.js'
import { durably, type StoreState } from './store-state.js'

/** A system record's largest value: they hold a few users' records, never bodies. */
export const SYSTEM_RECORD_BYTES_MAX = 64 * 1024

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
  await durably(state, ctx, ctx.kv.commit([{ type: 'put', key: systemKey(name), value: record }]))
  return ok(null)
}

export function storeStats(ctx: Context): Result<StoreStats> {
  const counters = new Mutation(ctx.kv).counters()
  return ok({
    bucketsCount: counters.buckets,
    objectsCount: counters.objects,
    storageUsedBytes: counters.bytes,
    uniqueBlobs: counters.blobs,
    totalReferences: counters.refs,
  })
}
