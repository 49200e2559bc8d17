/** @module key.sync: anti-entropy found two replicas of a key whose digests differ. Each is given
 * the other's stamped records of the key to merge (records.get, then records.merge both ways:
 * merge-records.ts), whatever S3 operations made them, so both end with the same records; a
 * replica fetches the blobs it lacks from the other, and first aborts its uploads of the key the
 * other holds as ended (a complete it missed). Tombstones the receiver may have purged are not
 * sent to it (merge-records.ts `unpurged`). Read repair and a hint's delivery merge alike. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { CoordinatorMsg, KeySynced } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { bring, recordsOf } from './merge-records.js'
import { localReplica, replicasOf, type Replica } from './replicas.js'

type SyncMsg = Extract<CoordinatorMsg, { kind: 'key.sync' }>

export async function syncKey(
  cluster: ClusterState,
  ctx: Context,
  msg: SyncMsg,
): Promise<Result<KeySynced>> {
  const at = { bucket: msg.bucket, key: msg.key }
  const replicas = await replicasOf(cluster, ctx, at, msg.deadlineMs)
  if (!replicas.ok) return replicas
  const pair: Replica[] = []
  for (const id of msg.nodes) {
    // This node's own store even while it is bootstrapped (then it counts in no quorum).
    const own =
      id === cluster.settings.nodeId && replicas.value.all.includes(id)
        ? localReplica(id)
        : undefined
    const replica = own ?? replicas.value.reachable.find((one) => one.id === id)
    if (replica === undefined) return fail('unavailable', `${id} is not a reachable replica`)
    pair.push(replica)
  }
  const [first, second] = pair as [Replica, Replica]
  const asked = { ...at, requestId: msg.requestId, deadlineMs: msg.deadlineMs }
  const [one, other] = await Promise.all([
    recordsOf(ctx, first, asked),
    recordsOf(ctx, second, asked),
  ])
  if (!one.ok) return one
  if (!other.ok) return other
  const synced: KeySynced = { replayed: 0, bytes: 0 }
  for (const [from, to, source, target] of [
    [first, second, one.value, other.value],
    [second, first, other.value, one.value],
  ] as const) {
    const merged = await bring(cluster, ctx, from, to, asked, { source, target })
    if (!merged.ok) return merged
    if (merged.value.changed) synced.replayed++
    synced.bytes += merged.value.bytes
  }
  return ok(synced)
}
