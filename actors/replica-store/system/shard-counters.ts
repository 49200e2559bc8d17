/** @module The counters store shards keep apart (keys.ts: C\0<shard>, K\0<bucket>\0<shard>), folded
 * back into shard 0's when a node that ran several shards starts with one: a store of one shard
 * then holds its totals in C\0 and the bucket records again, which its every batch checks (no
 * counter below zero). Folded in bounded batches, each atomic, so a crash in between leaves
 * totals that still add up. */
import type { Context } from '../../../protocol/actor.js'
import { STORE_SHARDS_MAX } from '../../../protocol/limits.js'
import { COUNTERS_END, COUNTERS_KEY } from '../keys.js'
import { Mutation } from '../mutation.js'
import { decodeBucketCounters, decodeCounters, type Counters } from '../records.js'
import type { StoreState } from '../store-state.js'
import { commitMutation } from '../store-state.js'

const KEPT_PREFIX = 'K\0'
const KEPT_END = 'K\x01'
/** Bucket counters records folded per batch. */
const FOLD_BATCH_RECORDS = 1_000
/** Far more batches than buckets times shards could need: the loop's bound. */
const FOLD_BATCHES_MAX = 1_000_000

/** Folds every other shard's counters into shard 0's; answers how many records it folded. */
export async function foldShardCounters(state: StoreState, ctx: Context): Promise<number> {
  let folded = 0
  for (let batch = 0; batch < FOLD_BATCHES_MAX; batch++) {
    const mutation = new Mutation(ctx.kv, state.shard)
    const rows = ctx.kv.scan({ gte: KEPT_PREFIX, lt: KEPT_END, limit: FOLD_BATCH_RECORDS })
    for (const [key, value] of rows) {
      const bucket = key.slice(KEPT_PREFIX.length, key.lastIndexOf('\0'))
      const record = mutation.bucket(bucket)
      const kept = decodeBucketCounters(value)
      if (record !== undefined) {
        record.objects += kept.objects
        record.bytes += kept.bytes
      }
      mutation.del(key)
    }
    if (rows.length < FOLD_BATCH_RECORDS) foldStoreCounters(ctx, mutation)
    folded += rows.length
    if (mutation.hasWrites()) await commitMutation(state, ctx, mutation)
    if (rows.length < FOLD_BATCH_RECORDS) return folded
  }
  throw new Error('replica-store: bucket counters of other shards past their bound')
}

function foldStoreCounters(ctx: Context, mutation: Mutation): void {
  const others = ctx.kv.scan({ gt: COUNTERS_KEY, lt: COUNTERS_END, limit: STORE_SHARDS_MAX })
  if (others.length === 0) return
  const counters = mutation.counters()
  for (const [key, value] of others) {
    const kept = decodeCounters(value)
    for (const name of Object.keys(counters) as (keyof Counters)[]) counters[name] += kept[name]
    mutation.del(key)
  }
}
