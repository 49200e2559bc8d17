/** @module Read repair: a quorum read that met replicas with an older key stamp than the winner's
 * brings them up to date in the background: each is given the winner's stamped records of the key
 * to merge (merge-records.ts), whatever they are (an object, versions, markers, deletions, tags, a
 * multipart object), so the repaired replica ends with the same records (Last-Modified, ETag,
 * version ids). Repairs run at most REPAIRS_MAX at once; past that a stale replica waits for the
 * next read or for anti-entropy. */
import type { Context } from '../../protocol/actor.js'
import type { ClusterState } from './cluster-state.js'
import { bring } from './merge-records.js'
import type { GetMsg, ReplicaAnswer } from './reads.js'

const REPAIRS_MAX = 8
/** A repair's own deadline: it outlives the read that found the replica stale. */
const REPAIR_MS = 30_000

export function repairStale(
  cluster: ClusterState,
  ctx: Context,
  msg: GetMsg,
  winner: ReplicaAnswer,
  answers: readonly ReplicaAnswer[],
): void {
  const newest = winner.answer.keyStamp ?? null
  if (newest === null) return
  for (const stale of answers) {
    const held = stale.answer.keyStamp ?? null
    if (held !== null && held >= newest) continue
    if (cluster.repairsRunning >= REPAIRS_MAX) return
    const at = {
      bucket: msg.bucket,
      key: msg.key,
      requestId: msg.requestId,
      deadlineMs: ctx.now() + REPAIR_MS,
    }
    cluster.repairsRunning++
    void bring(cluster, ctx, winner.replica, stale.replica, at)
      .then((merged) => {
        if (merged.ok && merged.value.changed) cluster.counters.readRepairs++
        if (!merged.ok) ctx.log.warn({ key: msg.key, code: merged.code }, 'a read repair failed')
      })
      .finally(() => cluster.repairsRunning--)
  }
}
