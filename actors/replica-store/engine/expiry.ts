/** @module Expiry of multipart uploads left incomplete: every sweep aborts the uploads initiated
 * more than SVC_MULTIPART_EXPIRY_HOURS ago (default 24), oldest first, a bounded batch at a time,
 * freeing their parts. Until then their parts count in the storage stats. The same sweep forgets
 * completed uploads' records (completed-uploads.ts) that long after their completion. The timer
 * runs through ctx.after, and `stop` cancels it. */
import type { Context } from '../../../protocol/actor.js'
import { track, type StoreState } from '../store-state.js'
import { EXPIRY_BATCH_UPLOADS, expireUploads } from './uploads.js'

export const MULTIPART_EXPIRY_HOURS_DEFAULT = 24
/** Sweeps run at a quarter of the expiry age, at most hourly and at least every second, so an
 * upload goes at most a quarter of its age late. */
const SWEEP_MS_MAX = 3_600_000
const SWEEP_MS_MIN = 1_000
/** Batches one sweep runs at most; the next sweep goes on where it stopped. */
const SWEEP_BATCHES_MAX = 1_000

export function expiryMs(ctx: Context): number {
  const hours = Number(ctx.config['SVC_MULTIPART_EXPIRY_HOURS'] ?? MULTIPART_EXPIRY_HOURS_DEFAULT)
  return hours * 3_600_000
}

export function scheduleExpiry(state: StoreState, ctx: Context): void {
  const ageMs = expiryMs(ctx)
  const everyMs = Math.min(SWEEP_MS_MAX, Math.max(SWEEP_MS_MIN, ageMs / 4))
  const sweep = async (): Promise<void> => {
    // A full batch means more may be due: go on at once, but never past stop.
    for (let batches = 0; batches < SWEEP_BATCHES_MAX && !state.stopping; batches++) {
      const expired = await expireUploads(state, ctx, ctx.now() - ageMs)
      if (expired > 0) ctx.log.info({ expired }, 'expired multipart uploads removed')
      if (expired < EXPIRY_BATCH_UPLOADS) break
    }
  }
  const next = (): void => {
    if (state.stopping) return
    state.cancelExpiry = ctx.after(everyMs, () => {
      if (state.stopping) return
      track(state, ctx, 'expiry', sweep().finally(next))
    })
  }
  next()
}
