/** @module Recovery, run by `init` before the first request: it finishes what a crash interrupted,
 * reading only small key ranges (never all objects):
 * - garbage records: files whose blob lost its last reference; remove each, then the record;
 * - temporary files (of this store shard: keys.ts fileShard): one with a file->sha record belongs
 *   to a committed put whose promotion did not happen, so promote it; any other is an upload that
 *   never committed, so remove it.
 * Of garbage records too, this shard handles those of its files: the shard that made the record
 * removes the file itself while it runs, and every removal waits for every shard's pins.
 * Both steps are idempotent, so a crash during recovery is recovered by the next one, and so is a
 * garbage pass that a full volume cut short. */
import type { Context } from '../../../protocol/actor.js'
import { fileKey, fileShard, GARBAGE_END, GARBAGE_PREFIX, isFileId } from '../keys.js'
import { isNoRoom, removeGarbage, type StoreState } from '../store-state.js'

/** Garbage records handled per batch. */
const GARBAGE_ROWS_PER_BATCH = 256

export interface RecoveryReport {
  garbageRemoved: number
  /** Garbage records left for the next start, for want of room to delete them. */
  garbageLeft: boolean
  promoted: number
  temporaryRemoved: number
}

export async function recover(state: StoreState, ctx: Context): Promise<RecoveryReport> {
  const report: RecoveryReport = {
    garbageRemoved: 0,
    garbageLeft: false,
    promoted: 0,
    temporaryRemoved: 0,
  }
  const { shard, shards } = ctx.shardLocks
  // A pass at a time, from where the last ended: other shards add records meanwhile.
  let from = GARBAGE_PREFIX
  for (;;) {
    const rows = ctx.kv.scan({ gt: from, lt: GARBAGE_END, limit: GARBAGE_ROWS_PER_BATCH })
    const last = rows[rows.length - 1]
    if (last === undefined) break
    from = last[0]
    const ids = rows
      .map(([key]) => key.slice(GARBAGE_PREFIX.length))
      .filter((id) => isFileId(id) && fileShard(id, shards) === shard)
    if (ids.length === 0) continue
    try {
      await removeGarbage(state, ctx, ids)
    } catch (error) {
      // The files are gone, their records stay for the next start: a full volume must not stop
      // this one.
      if (!isNoRoom(error)) throw error
      report.garbageLeft = true
      break
    }
    report.garbageRemoved += ids.length
  }
  for (const id of await ctx.blobs.listTemporary()) {
    // Another shard's temporary files may be writes under way.
    if (isFileId(id) && fileShard(id, shards) !== shard) continue
    if (isFileId(id) && ctx.kv.get(fileKey(id)) !== undefined) {
      await ctx.blobs.promote(id)
      report.promoted++
    } else {
      await ctx.blobs.removeTemporary(id)
      report.temporaryRemoved++
    }
  }
  return report
}
