/** @module Claims on object keys (cluster mode): a conditional write (If-None-Match, If-Match)
 * holds its key on a majority of the key's replicas while it checks and writes, so that two
 * racing conditional writes are serialised: the second sees the first's object. A claim is held
 * in memory only, for KEY_CLAIM_TTL_MS at most, so one whose coordinator died frees its key soon;
 * past KEY_CLAIMS_MAX live claims a new one is refused (the writer waits and asks again). */
import { ok, type Result } from '../../../protocol/errors.js'
import type { StoreState } from '../store-state.js'

/** Longer than a conditional write of a small object takes; a large one's write may outlive it,
 * which only lets a racing writer in early (it then meets the older object and its stamp). */
export const KEY_CLAIM_TTL_MS = 10_000
export const KEY_CLAIMS_MAX = 10_000

function claimKey(at: { bucket: string; key: string }): string {
  return `${at.bucket}\0${at.key}`
}

export function claimKeyFor(
  state: StoreState,
  at: { bucket: string; key: string; claimant: string },
  nowMs: number,
): Result<{ granted: boolean }> {
  const name = claimKey(at)
  const held = state.keyClaims.get(name)
  if (held !== undefined && held.expiresMs > nowMs && held.claimant !== at.claimant) {
    return ok({ granted: false })
  }
  if (held === undefined && state.keyClaims.size >= KEY_CLAIMS_MAX) {
    for (const [other, claim] of state.keyClaims) {
      if (claim.expiresMs <= nowMs) state.keyClaims.delete(other)
    }
    if (state.keyClaims.size >= KEY_CLAIMS_MAX) return ok({ granted: false })
  }
  state.keyClaims.set(name, { claimant: at.claimant, expiresMs: nowMs + KEY_CLAIM_TTL_MS })
  return ok({ granted: true })
}

export function releaseKey(
  state: StoreState,
  at: { bucket: string; key: string; claimant: string },
): Result<null> {
  const name = claimKey(at)
  if (state.keyClaims.get(name)?.claimant === at.claimant) state.keyClaims.delete(name)
  return ok(null)
}
