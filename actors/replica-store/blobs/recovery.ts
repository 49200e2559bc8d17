/** @module Recovery, run by `init` before the first request: it finishes what a crash interrupted,
 * reading only small key ranges (never all objects):
 * - garbage records: files whose blob lost its last reference; remove each, then the record;
 * - temporary files: one with a file->sha record belongs to a committed put whose promotion did
 *   not happen, so promote it; any other is an upload that never committed, so remove it.
 * Both steps are idempotent, so a crash during recovery is recovered by the next one, and so is a
 * garbage pass that a full volume cut short. */
import type { Context } from '../../../protocol/actor.js'
import { fileKey, GARBAGE_END, GARBAGE_PREFIX, isFileId } from '../keys.js'
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
  // Each pass deletes the records it read, so the loop ends when the range is empty.
  for (;;) {
    const rows = ctx.kv.scan({
      gte: GARBAGE_PREFIX,
      lt: GARBAGE_END,
      limit: GARBAGE_ROWS_PER_BATCH,
    })
    const ids = rows.map(([key]) => key.slice(GARBAGE_PREFIX.length)).filter(isFileId)
    if (ids.length === 0) break
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
