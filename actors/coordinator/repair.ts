/** @module Read repair: a quorum read that met replicas with an older key stamp than the winner's
 * brings them up to date in the background, with the same stamped change the winner holds, so the
 * repaired replica ends with the same record (Last-Modified, ETag, version id). What it repairs:
 * a deletion (the winner holds a tombstone) and a plain object (one blob, no tags, no version:
 * its bytes are written again under its own stamp). Other divergence (multipart objects, versions,
 * tags) is left to anti-entropy, which exchanges records rather than replays changes. Repairs run
 * at most REPAIRS_MAX at once; past that a stale replica waits for the next read or for
 * anti-entropy. */
import type { Context } from '../../protocol/actor.js'
import { ok } from '../../protocol/errors.js'
import type { GetResult, PutResult } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import type { Tag } from '../../protocol/tagging.js'
import type { GetMsg, ReplicaAnswer } from './reads.js'
import type { Replica } from './replicas.js'
import { askReplica, copyRange, writeToReplica } from './replica-calls.js'

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
  if (msg.versionId !== undefined) return
  const newest = winner.answer.keyStamp ?? null
  if (newest === null) return
  for (const stale of answers) {
    const held = stale.answer.keyStamp ?? null
    if (held !== null && held >= newest) continue
    if (cluster.repairsRunning >= REPAIRS_MAX) return
    const repair = repairOne(ctx, msg, winner, stale, newest)
    if (repair === null) continue
    cluster.repairsRunning++
    void repair
      .then((repaired) => {
        if (repaired) cluster.counters.readRepairs++
      })
      .finally(() => cluster.repairsRunning--)
  }
}

/** Brings `stale` to the winner's state, or null when that state is not one repair replays. */
export function repairOne(
  ctx: Context,
  msg: GetMsg,
  winner: ReplicaAnswer,
  stale: ReplicaAnswer,
  newest: string,
): Promise<boolean> | null {
  const deadlineMs = ctx.now() + REPAIR_MS
  const at = { bucket: msg.bucket, key: msg.key }
  const answer = winner.answer
  if ('absent' in answer) {
    // A tombstone: only where no versions are kept (a stale object without a version id).
    const staleAnswer = stale.answer
    if (!('info' in staleAnswer) || staleAnswer.info.versionId !== undefined) return null
    return askReplica(ctx, stale.replica, {
      kind: 'object.delete',
      ...at,
      stamp: newest,
      requestId: 'read-repair',
      deadlineMs,
    }).then((result) => result.ok)
  }
  if (!('info' in answer)) return null
  const { info } = answer
  const plain =
    info.versionId === undefined &&
    info.partsCount === undefined &&
    info.tagCount === undefined &&
    info.stamp !== undefined
  if (!plain) return null
  return copyObject(ctx, msg, winner.replica, stale.replica, answer, deadlineMs)
}

/** Writes the version `answer` describes (an object of one blob), read from `from`, to `to`
 * under its own stamp, with `tags` when it carries any. */
export async function copyObject(
  ctx: Context,
  msg: GetMsg,
  from: Replica,
  to: Replica,
  answer: GetResult,
  deadlineMs: number,
  tags?: Tag[],
): Promise<boolean> {
  const { info } = answer
  const checksums = info.checksumType === 'COMPOSITE' ? {} : info.checksums
  const write = writeToReplica<PutResult>(ctx, to, {
    kind: 'object.put',
    bucket: msg.bucket,
    key: msg.key,
    http: info.http,
    userMeta: info.userMeta,
    ...(tags === undefined ? {} : { tags }),
    expect: { checksums, size: info.size },
    stamp: info.stamp as string,
    requestId: msg.requestId,
    deadlineMs,
  })
  const read: GetMsg = {
    kind: 'object.get',
    bucket: msg.bucket,
    key: msg.key,
    ...(msg.versionId === undefined ? {} : { versionId: msg.versionId }),
    requestId: msg.requestId,
    deadlineMs,
  }
  const range = { start: 0, end: info.size - 1 }
  const expected = (head: GetResult): boolean => head.info.etag === info.etag
  const result = await copyRange(ctx, from, read, range, expected, write)
  if (!result.ok) ctx.log.warn({ key: msg.key, code: result.code }, 'an object copy failed')
  return result.ok
}
