/** @module key.bring: a hint's delivery. Every reachable replica of the key (the named one among
 * them) is asked for its stamped records; the newest key stamp must be at least the hinted
 * change's (else it rests on replicas out of reach, and the hint waits), unless every replica
 * answered. The named replica then merges the records of each other replica that holds what it
 * lacks (merge-records.ts), whatever they are: objects, versions, markers, deletions, tags,
 * multipart objects. A deletion of a key the replica never received is given to it too (so that
 * it keeps the tombstone), unless it is past the grace (SVC_GC_GRACE_DAYS): then the replica may
 * have purged it, and it is current. Whatever it brings, the replica's uploads of the key that
 * another replica holds as ended are aborted there first (else the hint waits): a complete it
 * missed left their parts counting in its bucket's storage (ended-uploads.ts). */
import type { Context } from '../../protocol/actor.js'
import { gcGraceMs, type KeyRecords } from '../../protocol/anti-entropy.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { changeStampOf } from '../../protocol/object-attributes.js'
import type { CoordinatorMsg, KeyBrought } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { abortEnded } from './ended-uploads.js'
import { mergeInto, recordsOf, unpurged } from './merge-records.js'
import { replicasOf, type Replica } from './replicas.js'

type BringMsg = Extract<CoordinatorMsg, { kind: 'key.bring' }>

interface Held {
  replica: Replica
  records: KeyRecords
}

/** A delivery that failed on the way (a replica's store restarting, a call lost) is tried again
 * this many times, this long apart, within its deadline: a hint left for the queue's next pass
 * waits far longer. */
const BRING_ATTEMPTS_MAX = 3
const BRING_RETRY_MS = 1_000

export async function bringKey(
  cluster: ClusterState,
  ctx: Context,
  msg: BringMsg,
): Promise<Result<KeyBrought>> {
  let brought = await bringOnce(cluster, ctx, msg)
  for (let attempt = 1; attempt < BRING_ATTEMPTS_MAX; attempt++) {
    if (brought.ok || brought.code !== 'unavailable') break
    if (ctx.now() + 2 * BRING_RETRY_MS >= msg.deadlineMs) break
    await new Promise<void>((resolve) => ctx.after(BRING_RETRY_MS, resolve))
    brought = await bringOnce(cluster, ctx, msg)
  }
  return brought
}

async function bringOnce(
  cluster: ClusterState,
  ctx: Context,
  msg: BringMsg,
): Promise<Result<KeyBrought>> {
  const at = { bucket: msg.bucket, key: msg.key, requestId: msg.requestId }
  const asked = { ...at, deadlineMs: msg.deadlineMs }
  const replicas = await replicasOf(cluster, ctx, at, msg.deadlineMs)
  if (!replicas.ok) return replicas
  if (!replicas.value.all.includes(msg.node)) return ok('current')
  const reachable = replicas.value.reachable
  const target = reachable.find((replica) => replica.id === msg.node)
  if (target === undefined) return fail('unavailable', `${msg.node} is not reachable`)
  // Every answer, each bounded by the deadline: one replica's failure leaves the others' records.
  const read = await Promise.all(reachable.map((replica) => recordsOf(ctx, replica, asked)))
  const answers: Held[] = []
  read.forEach((records, index) => {
    if (records.ok) answers.push({ replica: reachable[index] as Replica, records: records.value })
  })
  const held = answers.find((one) => one.replica.id === msg.node)
  if (held === undefined) return fail('unavailable', `${msg.node} did not answer`)
  const others = answers.filter((one) => one !== held)
  // A complete the replica missed leaves it the upload open, whatever came after: ended there,
  // or the hint waits (it may be the only record that the replica missed the complete).
  const replicasOfOthers = others.map((one) => one.replica)
  if (others.length > 0 && !(await abortEnded(cluster, ctx, target, replicasOfOthers, asked))) {
    return fail('unavailable', `${msg.node} keeps an ended upload open`)
  }
  // The hinted change may rest on replicas out of reach now: then nothing here can bring it. When
  // every replica answered and none holds it, it is nowhere (a change none kept, its hint left
  // from a write that failed): the newest state there is is what the replica is brought.
  const newest = answers.reduce((top, one) => max(top, newestChange(one.records)), '')
  const everyReplica = answers.length === replicas.value.all.length
  if (newest < msg.stamp && !everyReplica) {
    return fail('unavailable', 'no reachable replica holds the change')
  }
  const graceMs = gcGraceMs(ctx.config)
  let changed = false
  for (const other of others) {
    const sent = unpurged(other.records, held.records, ctx.now(), graceMs)
    if (JSON.stringify(sent) === JSON.stringify(held.records)) continue
    const merged = await mergeInto(ctx, target, other.replica, asked, sent)
    if (!merged.ok) return fail('unavailable', `${msg.node} was not brought up to date`)
    changed ||= merged.value.changed
  }
  if (!changed) return ok('current')
  cluster.counters.readRepairs++
  return ok('repaired')
}

function max(a: string, b: string): string {
  return a > b ? a : b
}

/** The newest change a replica's records hold: the key's stamp, or a later change of a version's
 * attributes, which leaves the key's stamp as it is. The records are the store's (their schema
 * leaves them opaque here): the stamps are read as the store writes them. */
function newestChange(records: KeyRecords): string {
  return records.versions.reduce(
    (top, { record }) => max(top, changeStampOf(record as Parameters<typeof changeStampOf>[0])),
    records.stamp ?? '',
  )
}
