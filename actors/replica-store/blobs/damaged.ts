/** @module Damaged blob copies: what the store knows of copies whose bytes fail their CRC32. A read
 * that meets one (a GET's check as the whole blob passes, an inline blob's on every read) reports
 * it: the store holds it damaged in memory and tells its scrubber, which reads it again (a
 * transient read error is not corruption) and then clears it, marks it corrupt in its blob record
 * (`blob.mark`, kept across restarts) or heals it (`blob.replace`). Until then every read of its
 * bytes answers `corrupt` before the first byte: a client gets 500 (single mode) or another
 * replica's copy (cluster mode), never bytes known wrong. */
import type { Context } from '../../../protocol/actor.js'
import type { BlobRecord } from '../records.js'
import type { StoreState } from '../store-state.js'

/** Damaged blobs held in memory at most (each a sha256): beyond, the oldest is forgotten, and its
 * next read finds it again. */
export const DAMAGED_MAX = 4_096
/** How long the store waits for its scrubber to take a report (it answers at once). */
const REPORT_TIMEOUT_MS = 5_000

/** Whether reads of this copy's bytes must answer `corrupt` at once. */
export function isDamaged(state: StoreState, sha256: string, blob: BlobRecord): boolean {
  return blob.corrupt === true || state.damaged.has(sha256)
}

/** A read found the copy's bytes wrong: hold it damaged and have the scrubber check it now. */
export function reportDamage(state: StoreState, ctx: Context, sha256: string, why: string): void {
  ctx.log.error({ sha256, why }, 'blob copy is damaged')
  if (state.damaged.has(sha256)) return
  holdDamaged(state, sha256)
  // The answer is only the scrubber taking the report; a scrubber that is down finds the copy on
  // its pass instead.
  void ctx.call('scrubber', {
    kind: 'scrubber.check',
    sha256,
    requestId: 'store-damage',
    deadlineMs: ctx.now() + REPORT_TIMEOUT_MS,
  })
}

/** Holds a copy damaged in memory, forgetting the oldest beyond DAMAGED_MAX. */
export function holdDamaged(state: StoreState, sha256: string): void {
  if (state.damaged.size >= DAMAGED_MAX && !state.damaged.has(sha256)) {
    const oldest = state.damaged.values().next().value
    if (oldest !== undefined) state.damaged.delete(oldest)
  }
  state.damaged.add(sha256)
}
