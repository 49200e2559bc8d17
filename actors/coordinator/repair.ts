/** @module Read repair: a quorum read that met replicas with an older key stamp than the winner's
 * (or, of one version, an older change of its attributes) brings them up to date in the background:
 * each is given the winner's stamped records of the key to merge (merge-records.ts), whatever they
 * are (an object, versions, markers, deletions, tags, a multipart object), so the repaired replica
 * ends with the same records (Last-Modified, ETag, version ids). Repairs run at most REPAIRS_MAX at
 * once; past that a stale replica waits for the next read or for anti-entropy. */
import type { Context } from '../../protocol/actor.js'
import type { ClusterState } from './cluster-state.js'
import { bring } from './merge-records.js'
import { newerAnswer, type GetMsg, type ReplicaAnswer } from './reads.js'

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
  if ((winner.answer.keyStamp ?? null) === null) return
  for (const stale of answers) {
    if (!newerAnswer(winner.answer, stale.answer)) continue
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
