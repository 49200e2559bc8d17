/** @module key.bring: a hint's delivery. Every reachable replica of the key (the named one among
 * them) is asked for its stamped state; the newest must be at least the hinted change (else it
 * rests on replicas out of reach, and the hint waits), unless every replica answered. When the
 * named replica's key stamp is older than the newest, read repair's change (repair.ts) is
 * replayed to it alone: a deletion, or a plain object with its bytes from the replica that holds
 * the newest. A newest state repair does not replay (a version, a marker, tags) is synced as
 * anti-entropy syncs a key (key-sync.ts); what that cannot replay either (a multipart object) is
 * `unsupported`, and the hint waits until it expires. A deletion of a key the replica never
 * received is replayed too (read repair need not: both show nothing), so that it keeps the
 * tombstone, unless it is past the grace (SVC_GC_GRACE_DAYS): then the replica may have purged it,
 * as anti-entropy's key sync judges too, and it is current. Whatever state it brings, the
 * replica's uploads of the key that another replica holds as ended are aborted there first (else
 * the hint waits): a complete it missed left their parts counting in its bucket's storage. */
import type { Context } from '../../protocol/actor.js'
import { gcGraceMs, pastGrace } from '../../protocol/anti-entropy.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { CoordinatorMsg, KeyBrought } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { gather } from './quorum.js'
import type { GetMsg, ReplicaAnswer, StampedAnswer } from './reads.js'
import { syncKey } from './key-sync.js'
import { abortEnded } from './multipart-replay.js'
import { repairOne } from './repair.js'
import { askReplica } from './replica-calls.js'
import { replicasOf } from './replicas.js'

type BringMsg = Extract<CoordinatorMsg, { kind: 'key.bring' }>

export async function bringKey(
  cluster: ClusterState,
  ctx: Context,
  msg: BringMsg,
): Promise<Result<KeyBrought>> {
  const at = { bucket: msg.bucket, key: msg.key }
  const replicas = await replicasOf(cluster, ctx, at, msg.deadlineMs)
  if (!replicas.ok) return replicas
  if (!replicas.value.all.includes(msg.node)) return ok('current')
  const reachable = replicas.value.reachable
  const target = reachable.find((replica) => replica.id === msg.node)
  if (target === undefined) return fail('unavailable', `${msg.node} is not reachable`)
  const read: GetMsg = {
    kind: 'object.get',
    ...at,
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
  }
  const head: GetMsg = { ...read, stamped: true }
  const gathered = await gather(
    reachable.map((replica) => askReplica<StampedAnswer>(ctx, replica, head)),
    reachable.length,
  )
  const answers: ReplicaAnswer[] = gathered.oks.map(({ index, value }) => ({
    replica: reachable[index] as (typeof reachable)[number],
    answer: value,
  }))
  const held = answers.find((one) => one.replica.id === msg.node)
  if (held === undefined) return fail('unavailable', `${msg.node} did not answer`)
  let winner = held
  for (const one of answers) {
    if ((one.answer.keyStamp ?? '') > (winner.answer.keyStamp ?? '')) winner = one
  }
  const newest = winner.answer.keyStamp ?? ''
  // A complete the replica missed leaves it the upload open, whatever came after: ended there,
  // or the hint waits (it may be the only record that the replica missed the complete).
  const other = answers.find((one) => one !== held)
  const ended =
    other === undefined ||
    (await abortEnded(cluster, ctx, { from: other.replica, to: held.replica }, read))
  if (!ended) return fail('unavailable', `${msg.node} keeps an ended upload open`)
  // The hinted change may rest on replicas out of reach now: then nothing here can bring it. When
  // every replica answered and none holds it, it is nowhere (a change none kept, its hint left
  // from a write that failed): the newest state there is is what the replica is brought.
  const everyReplica = answers.length === replicas.value.all.length
  if (newest < msg.stamp && !everyReplica) {
    return fail('unavailable', 'no reachable replica holds the change')
  }
  if ((held.answer.keyStamp ?? '') >= newest) return ok('current')
  if (purgedThere(ctx, winner, held)) return ok('current')
  const repair =
    'absent' in winner.answer && 'absent' in held.answer
      ? await keepTombstone(ctx, msg, held, newest)
      : repairOne(ctx, read, winner, held, newest)
  if (repair === null) return syncWith(cluster, ctx, msg, winner)
  if (!(await repair)) return fail('unavailable', `${msg.node} was not brought up to date`)
  cluster.counters.readRepairs++
  return ok('repaired')
}

/** The newest state is a tombstone past the grace and the replica holds nothing of the key: it
 * may have purged it (actors/anti-entropy/tombstone-gc.ts), and replayed it would come back. */
function purgedThere(ctx: Context, winner: ReplicaAnswer, held: ReplicaAnswer): boolean {
  const stamp = winner.answer.keyStamp ?? null
  if (!('absent' in winner.answer) || !('absent' in held.answer) || stamp === null) return false
  return held.answer.keyStamp === null && pastGrace(stamp, ctx.now(), gcGraceMs(ctx.config))
}

/** A state read repair does not replay (versions, a marker, tags): anti-entropy's sync of the key
 * between the replica and the one holding the newest state gives it what it lacks. */
async function syncWith(
  cluster: ClusterState,
  ctx: Context,
  msg: BringMsg,
  winner: ReplicaAnswer,
): Promise<Result<KeyBrought>> {
  const synced = await syncKey(cluster, ctx, {
    kind: 'key.sync',
    bucket: msg.bucket,
    key: msg.key,
    nodes: [winner.replica.id, msg.node],
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
  })
  if (!synced.ok) return synced
  if (synced.value.unsupported > 0) return ok('unsupported')
  cluster.counters.readRepairs++
  return ok('repaired')
}

/** A key deleted while the replica held nothing of it: it is shown the same, but without the
 * tombstone a write older than the deletion, arriving late, would bring the key back there. In a
 * bucket without versioning the deletion is replayed; with versions, anti-entropy's to bring. */
async function keepTombstone(
  ctx: Context,
  msg: BringMsg,
  held: ReplicaAnswer,
  newest: string,
): Promise<Promise<boolean> | null> {
  const versioning = await ctx.call('replica-store', {
    kind: 'bucket.versioning.get',
    bucket: msg.bucket,
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
  })
  if (!versioning.ok || versioning.value.status !== null) return null
  return askReplica(ctx, held.replica, {
    kind: 'object.delete',
    bucket: msg.bucket,
    key: msg.key,
    stamp: newest,
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
  }).then((result) => result.ok)
}
