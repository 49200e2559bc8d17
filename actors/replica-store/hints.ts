/** @module Hints (cluster mode): a change a replica missed (it was down, cut off or failed) is
 * recorded by the node that coordinated it, durably before the client's answer when the miss was
 * known then, so nothing acknowledged rests on the other replicas alone without a record of what
 * the missing one lacks. One record per replica and key (`J\0`), the newest stamp kept: the
 * replica will need the key's newest state, not every change. The hint queue delivers them; here
 * they are kept and counted (the count is read at start and kept by every batch). */
import type { Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { Hint } from '../../protocol/messages.js'
import { HINT_END, HINT_PREFIX, hintKey } from './keys.js'
import { durably, type StoreState } from './store-state.js'

/** Hints one request records at most (a DeleteObjects batch of 1000 keys for two replicas). */
export const HINTS_PER_REQUEST_MAX = 2_000
/** Hints kept at most (CLUSTER.md section 6): past it new ones are refused and logged, and the
 * replicas they name wait for anti-entropy, which finds every difference without them. */
export const HINTS_MAX = 4_000_000
/** Rows read per scan when counting the hints at start. */
const COUNT_SCAN_ROWS = 10_000

export async function putHints(
  state: StoreState,
  ctx: Context,
  hints: readonly Hint[],
): Promise<Result<null>> {
  const ops = []
  const seen = new Set<string>()
  for (const hint of hints.slice(0, HINTS_PER_REQUEST_MAX)) {
    const key = hintKey(hint.node, hint.bucket, hint.key)
    const held = ctx.kv.get(key)
    const heldStamp = held === undefined ? '' : Buffer.from(held).toString('utf8')
    if (heldStamp >= hint.stamp || seen.has(key)) continue
    if (held === undefined && state.hintsPending >= HINTS_MAX) {
      ctx.log.error({ node: hint.node, bucket: hint.bucket }, 'hint refused: too many kept')
      continue
    }
    if (held === undefined) state.hintsPending++
    seen.add(key)
    ops.push({ type: 'put' as const, key, value: new Uint8Array(Buffer.from(hint.stamp, 'utf8')) })
  }
  if (ops.length > 0) await durably(state, ctx, ctx.kv.commit(ops))
  return ok(null)
}

/** The hints kept, counted once at start. */
export function countHints(ctx: Context): number {
  let count = 0
  let from: { gte: string } | { gt: string } = { gte: HINT_PREFIX }
  for (;;) {
    const rows = ctx.kv.scan({ ...from, lt: HINT_END, limit: COUNT_SCAN_ROWS })
    count += rows.length
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < COUNT_SCAN_ROWS) return count
    from = { gt: last[0] }
  }
}
