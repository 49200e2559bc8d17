/** @module Stamping a change of a key (CLUSTER.md section 5, with the read before the write): the
 * stamp is above every stamp a read quorum of the key's replicas holds. A write acknowledged by W
 * replicas is held by at least one of any R replicas (W + R > RF), so every change that starts
 * after an acknowledgement is stamped above it, whatever the skew between coordinators' clocks:
 * acknowledged changes of a key keep their order on every replica. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { compareHlc, hlcString, parseHlc } from '../../protocol/hlc.js'
import type { ClusterState } from './cluster-state.js'
import { askInTurn, quorumFailure } from './quorum.js'
import { askReplica } from './replica-calls.js'
import type { Replica } from './replicas.js'

/** A stamp above every stamp R of `replicas` hold for `keys` of `bucket`. */
export async function stampAbove(
  cluster: ClusterState,
  ctx: Context,
  replicas: readonly Replica[],
  at: { bucket: string; keys: string[] },
  deadlineMs: number,
): Promise<Result<string>> {
  const need = Math.min(cluster.settings.readQuorum, replicas.length)
  const gathered = await askInTurn(
    replicas,
    need,
    (replica) =>
      askReplica<(string | null)[]>(ctx, replica, {
        kind: 'object.stamps',
        bucket: at.bucket,
        keys: at.keys,
        requestId: 'stamp',
        deadlineMs,
      }),
    (ms, task) => ctx.after(ms, task),
  )
  if (gathered.oks.length < need) return quorumFailure('write', gathered, need)
  for (const { value } of gathered.oks) {
    for (const held of value) {
      if (!observeHeld(cluster, held)) return aheadOfClock()
    }
  }
  return ok(hlcString(cluster.clock.tick()))
}

/** Moves this node's clock past `held`, a stamp a replica holds, so that the next stamp is above
 * it; false when it is too far ahead to be believed. */
export function observeHeld(cluster: ClusterState, held: string | null | undefined): boolean {
  const stamp = held === null || held === undefined ? null : parseHlc(held)
  if (stamp === null) return true
  return compareHlc(stamp, cluster.clock.current()) <= 0 || cluster.clock.observe(stamp)
}

export function aheadOfClock(): Result<never> {
  return fail('unavailable', 'a replica holds a stamp more than 60 s ahead of this clock')
}

/** A fresh stamp, for changes that no earlier change of the key can race (a new upload). */
export function freshStamp(cluster: ClusterState): string {
  return hlcString(cluster.clock.tick())
}
