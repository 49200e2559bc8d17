/** @module Quorum writes (CLUSTER.md section 5): every change of an object key goes to all of its
 * reachable replicas at once, stamped (stamps.ts), and is answered once W of them acknowledged it
 * durably. Fewer reachable replicas than W: 503 at once, before the body is read. A body is read
 * once and fanned out (fan-out.ts). A replica that misses the write (down, cut off, too slow)
 * keeps the older state until repair brings it the change. */
import type { ByteSource, Context } from '../../protocol/actor.js'
import {
  evaluateWriteConditions,
  type WriteConditions,
} from '../../protocol/s3-rules/conditions.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import {
  END_STAMP_TRAILER,
  type DecidedVersioning,
  type DeleteManyResult,
  type DeletedEntry,
  type ObjectMsg,
  type PartInfo,
  type PutResult,
} from '../../protocol/messages.js'
import { partitionOf } from '../../protocol/placement.js'
import type { ClusterState } from './cluster-state.js'
import { fanOut, sendInline } from './fan-out.js'
import { gather, quorumFailure, unreachable } from './quorum.js'
import { readQuorum } from './reads.js'
import { askReplica, writeToReplica, type ReplicaMsg } from './replica-calls.js'
import { poolLayout, replicasOf, type Replica, type ReplicaSet } from './replicas.js'
import { hintMisses, type Change } from './hints.js'
import { holdKey, type Release } from './key-hold.js'
import { freshStamp, stampAbove } from './stamps.js'
import { decideVersioning } from './versioning.js'

type BodyMsg = Extract<ObjectMsg, { kind: 'object.put' | 'upload.part' }>

/** Drops the replica's own remark that it held a newer change: the client's answer is the
 * write's, whichever replica answered first. */
function firstAnswer<T>(oks: { value: T }[]): T {
  const staleOf = (value: T): boolean =>
    typeof value === 'object' && value !== null && (value as { stale?: true }).stale === true
  const chosen = (oks.find(({ value }) => !staleOf(value)) ?? oks[0]) as { value: T }
  if (!staleOf(chosen.value)) return chosen.value
  const { stale: _stale, ...answer } = chosen.value as T & { stale?: true }
  return answer as T
}

/** Waits for the write quorum of a change sent to replicas; records hints for the replicas of
 * `all` that miss it. A change of an upload and not of its key (a new upload, a part, an abort)
 * is `null`: a hint names a key's state, which those leave as it was, and a hint under the key
 * with their stamp would replace the key's own (one hint per replica and key) with one that no
 * key state ever reaches. */
async function writeQuorumOf<T>(
  cluster: ClusterState,
  ctx: Context,
  sent: { replica: Replica; answer: Promise<Result<T>> }[],
  change: Change | null,
  all: readonly string[],
): Promise<Result<T>> {
  const need = cluster.settings.writeQuorum
  const gathered = await gather(
    sent.map((one) => one.answer),
    need,
  )
  if (change !== null) await hintMisses(ctx, change, all, sent, gathered.oks.length > 0)
  if (gathered.oks.length < need) return quorumFailure('write', gathered, need)
  cluster.counters.quorumWrites++
  return ok(firstAnswer(gathered.oks))
}

/** The key's current object as a read quorum holds it (null: none, or a delete marker), which a
 * write's conditions are checked against. */
async function currentObject(
  cluster: ClusterState,
  ctx: Context,
  at: { bucket: string; key: string; deadlineMs: number; requestId: string },
  replicas: readonly Replica[],
): Promise<Result<{ etag: string; lastModifiedMs: number } | null>> {
  const read = await readQuorum(
    cluster,
    ctx,
    { kind: 'object.get', bucket: at.bucket, key: at.key, ...ids(at) },
    replicas,
  )
  if (!read.ok) return read
  const winner = read.value.winner.answer
  if (!('info' in winner)) return ok(null)
  return ok({ etag: winner.info.etag, lastModifiedMs: winner.info.lastModifiedMs })
}

/** The write's If-Match / If-None-Match, checked against what a read quorum holds. */
async function checkConditions(
  cluster: ClusterState,
  ctx: Context,
  at: { bucket: string; key: string; deadlineMs: number; requestId: string },
  replicas: readonly Replica[],
  conditions: WriteConditions,
): Promise<Result<null>> {
  const current = await currentObject(cluster, ctx, at, replicas)
  if (!current.ok) return current
  const refused = evaluateWriteConditions(current.value ?? undefined, conditions)
  return refused === null ? ok(null) : fail(refused, 'the write condition failed')
}

function ids(msg: { requestId: string; deadlineMs: number }) {
  return { requestId: msg.requestId, deadlineMs: msg.deadlineMs }
}

/** object.put and upload.part: the body to every reachable replica of the key. The body is the
 * message's own (inline or its stream), or `bodySource` (a copy's source bytes). */
export async function writeBody(
  cluster: ClusterState,
  ctx: Context,
  msg: BodyMsg,
  bodySource?: ByteSource,
): Promise<Result<PutResult | PartInfo>> {
  const source =
    bodySource ?? (msg.stream === undefined ? null : ctx.source(msg.stream, msg.deadlineMs))
  const refuse = <T>(result: Result<T>): Result<T> => {
    if (!result.ok) source?.cancel(result.code, result.detail)
    return result
  }
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return refuse(set)
  const { reachable } = set.value
  const need = cluster.settings.writeQuorum
  if (reachable.length < need) return refuse(unreachable('write', reachable.length, need))
  const conditions = msg.kind === 'object.put' ? msg.conditions : undefined
  let release: Release = () => Promise.resolve()
  if (conditions !== undefined) {
    const held = await holdKey(cluster, ctx, msg, reachable)
    if (!held.ok) return refuse(held)
    release = held.value
    const checked = await checkConditions(cluster, ctx, msg, reachable, conditions)
    if (!checked.ok) {
      await release()
      return refuse(checked)
    }
  }
  try {
    return await stampAndWrite(cluster, ctx, msg, set.value, source, refuse)
  } finally {
    await release()
  }
}

async function stampAndWrite(
  cluster: ClusterState,
  ctx: Context,
  msg: BodyMsg,
  { reachable, all }: ReplicaSet,
  source: ByteSource | null,
  refuse: <T>(result: Result<T>) => Result<T>,
): Promise<Result<PutResult | PartInfo>> {
  const need = cluster.settings.writeQuorum
  // A part is named by its upload: no earlier change of the key orders it.
  const stamp =
    msg.kind === 'upload.part'
      ? ok(freshStamp(cluster))
      : await stampAbove(
          cluster,
          ctx,
          reachable,
          { bucket: msg.bucket, keys: [msg.key] },
          msg.deadlineMs,
        )
  if (!stamp.ok) return refuse(stamp)
  const { conditions: _conditions, ...unconditional } = msg as BodyMsg & {
    conditions?: WriteConditions
  }
  let stamped = { ...unconditional, stamp: stamp.value } as BodyMsg
  if (msg.kind === 'object.put') {
    const versioning = await decideVersioning(ctx, msg.bucket, msg)
    if (!versioning.ok) return refuse(versioning)
    stamped = { ...stamped, versioning: versioning.value } as BodyMsg
  }
  const writes = reachable.map((replica) =>
    writeToReplica<PutResult | PartInfo>(ctx, replica, stamped),
  )
  // A part's stamp is taken when its body ends: of two uploads of one part, the last to end
  // counts, as in S3 (the head's stamp only marks the write as stamped).
  const endTrailers = (): Record<string, string> =>
    msg.kind === 'upload.part' ? { [END_STAMP_TRAILER]: freshStamp(cluster) } : {}
  const sinks = writes.map((write) => write.sink)
  if (source !== null) {
    const sent = await fanOut(source, sinks, need, endTrailers)
    if (!sent.ok) {
      // The replicas' own refusal (a checksum, a missing upload) says more than the cut body.
      const gathered = await gather(
        writes.map((write) => write.answer),
        writes.length,
      )
      if (gathered.oks.length >= need) return ok(firstAnswer(gathered.oks))
      const refused = quorumFailure('write', gathered, need)
      return refused.ok || refused.code === 'unavailable' ? sent : refused
    }
  } else {
    await sendInline(msg.body ?? new Uint8Array(0), sinks, endTrailers())
  }
  const change =
    msg.kind === 'upload.part' ? null : { bucket: msg.bucket, keys: [msg.key], stamp: stamp.value }
  return writeQuorumOf(cluster, ctx, writes, change, all)
}

type KeyChangeMsg = Extract<
  ObjectMsg,
  {
    kind:
      | 'object.delete'
      | 'object.attributes.put'
      | 'upload.complete'
      | 'upload.abort'
      | 'upload.create'
  }
>

/** A change without a body to every reachable replica of the key. Deletions and completions are
 * stamped above the key's newest change; a new upload or an abort needs no order. */
export async function changeKey<T>(
  cluster: ClusterState,
  ctx: Context,
  msg: KeyChangeMsg,
): Promise<Result<T>> {
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return set
  const { reachable } = set.value
  const need = cluster.settings.writeQuorum
  if (reachable.length < need) return unreachable('write', reachable.length, need)
  // Completing and aborting an upload hold its key: replicas that saw a complete and an abort in
  // different orders would end with different outcomes and no quorum for either.
  if (msg.kind === 'upload.complete' || msg.kind === 'upload.abort') {
    const held = await holdKey(cluster, ctx, msg, reachable)
    if (!held.ok) return held
    try {
      // A completion's conditions are checked by each replica where a single node checks them
      // (after its parts, not for a completion sent again), against the object a quorum holds.
      if (msg.kind === 'upload.complete' && msg.conditions !== undefined) {
        const current = await currentObject(cluster, ctx, msg, reachable)
        if (!current.ok) return current
        const judged = { ...msg, judgedOn: current.value }
        return await stampAndChange<T>(cluster, ctx, judged, set.value)
      }
      return await stampAndChange<T>(cluster, ctx, msg, set.value)
    } finally {
      await held.value()
    }
  }
  return stampAndChange<T>(cluster, ctx, msg, set.value)
}

async function stampAndChange<T>(
  cluster: ClusterState,
  ctx: Context,
  msg: KeyChangeMsg,
  { reachable, all }: ReplicaSet,
): Promise<Result<T>> {
  const ordered = msg.kind !== 'upload.create' && msg.kind !== 'upload.abort'
  const stamp = ordered
    ? await stampAbove(
        cluster,
        ctx,
        reachable,
        { bucket: msg.bucket, keys: [msg.key] },
        msg.deadlineMs,
      )
    : ok(freshStamp(cluster))
  if (!stamp.ok) return stamp
  let stamped: ReplicaMsg = { ...msg, stamp: stamp.value }
  if (msg.kind === 'object.delete' || msg.kind === 'upload.complete') {
    const versioning = await decideVersioning(ctx, msg.bucket, msg)
    if (!versioning.ok) return versioning
    stamped = { ...msg, stamp: stamp.value, versioning: versioning.value }
  }
  if (msg.kind === 'upload.create') {
    stamped = { ...msg, stamp: stamp.value, uploadId: uploadIdOf(ctx, stamp.value) }
  }
  const sent = reachable.map((replica) => ({
    replica,
    answer: askReplica<T>(ctx, replica, stamped),
  }))
  const change = ordered ? { bucket: msg.bucket, keys: [msg.key], stamp: stamp.value } : null
  const written = await writeQuorumOf<T>(cluster, ctx, sent, change, all)
  if (written.ok && msg.kind === 'upload.complete')
    endUploadWhereRefused(ctx, msg, stamp.value, sent)
  return written
}

/** A complete the quorum took, which a replica refused (it lacked a part, or failed): the upload
 * is over in the cluster, but that replica still holds it open with its parts, which would count
 * in its bucket's storage until the upload expired, and once more with the object a hint or
 * anti-entropy brings it. It is aborted there, in the background, stamped so that a part of it
 * arriving late finds it ended. */
function endUploadWhereRefused<T>(
  ctx: Context,
  msg: Extract<KeyChangeMsg, { kind: 'upload.complete' }>,
  stamp: string,
  sent: readonly { replica: Replica; answer: Promise<Result<T>> }[],
): void {
  const { bucket, key, uploadId, requestId, deadlineMs } = msg
  for (const { replica, answer } of sent) {
    void answer.then(async (result) => {
      if (result.ok) return
      const aborted = await askReplica(ctx, replica, {
        kind: 'upload.abort',
        ...{ bucket, key, uploadId, stamp, requestId, deadlineMs },
      })
      // Out of reach now: its hint's delivery or anti-entropy ends it once it has the object.
      if (!aborted.ok && !['no_such_upload', 'unavailable'].includes(aborted.code)) {
        ctx.log.warn({ key, node: replica.id, code: aborted.code }, 'an ended upload stays open')
      }
    })
  }
}

/** An upload id equal on every replica: the stamp (its time first, so one key's uploads list in
 * the order they began) and random bits. */
function uploadIdOf(ctx: Context, stamp: string): string {
  return stamp + Buffer.from(ctx.randomBytes(4)).toString('hex')
}

/** DeleteObjects: the keys grouped by partition, each group stamped and sent to its replicas. */
export async function deleteMany(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<ObjectMsg, { kind: 'object.delete-many' }>,
): Promise<Result<DeleteManyResult>> {
  const layout = await poolLayout(cluster, ctx, msg.bucket, msg.deadlineMs)
  if (!layout.ok) return layout
  // One versioning for the whole request, whichever group a key falls in.
  const versioning = await decideVersioning(ctx, msg.bucket, msg)
  if (!versioning.ok) return versioning
  const groups = new Map<number, typeof msg.objects>()
  for (const object of msg.objects) {
    const p = partitionOf(msg.bucket, object.key)
    const group = groups.get(p) ?? []
    group.push(object)
    groups.set(p, group)
  }
  const results = await Promise.all(
    [...groups].map(async ([p, objects]) => {
      const all = layout.value.table[p] as string[]
      const reachable = layout.value.reachable.filter((replica) => all.includes(replica.id))
      return deleteGroup(cluster, ctx, msg, objects, versioning.value, { all, reachable })
    }),
  )
  const merged: DeleteManyResult = { deleted: [], errors: [] }
  for (const result of results) {
    merged.deleted.push(...result.deleted)
    merged.errors.push(...result.errors)
  }
  // The answer lists keys in the request's order, as a single store does.
  const order = new Map(msg.objects.map((object, index) => [object.key, index]))
  const rank = (entry: { key: string }): number => order.get(entry.key) ?? 0
  merged.deleted.sort((a: DeletedEntry, b: DeletedEntry) => rank(a) - rank(b))
  merged.errors.sort((a, b) => rank(a) - rank(b))
  return ok(merged)
}

async function deleteGroup(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<ObjectMsg, { kind: 'object.delete-many' }>,
  objects: typeof msg.objects,
  versioning: DecidedVersioning,
  { reachable, all }: ReplicaSet,
): Promise<DeleteManyResult> {
  const failed = (detail: string): DeleteManyResult => ({
    deleted: [],
    errors: objects.map((object) => ({ key: object.key, code: 'unavailable', detail })),
  })
  const need = cluster.settings.writeQuorum
  if (reachable.length < need) {
    return failed(`write quorum ${reachable.length}/${need}: too few replicas`)
  }
  const keys = objects.map((object) => object.key)
  const stamp = await stampAbove(
    cluster,
    ctx,
    reachable,
    { bucket: msg.bucket, keys },
    msg.deadlineMs,
  )
  if (!stamp.ok) return failed(stamp.detail)
  const decided = { objects, stamp: stamp.value, versioning }
  const sent = reachable.map((replica) => ({
    replica,
    answer: askReplica<DeleteManyResult>(ctx, replica, { ...msg, ...decided }),
  }))
  const change = { bucket: msg.bucket, keys, stamp: stamp.value }
  const result = await writeQuorumOf(cluster, ctx, sent, change, all)
  return result.ok ? result.value : failed(result.detail)
}
