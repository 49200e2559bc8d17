/** @module Coordinator: the seam between the ingress and the replicas in cluster mode (a single
 * node does not run it: its ingress sends requests to the store itself; without cluster settings
 * the coordinator passes each request to the local store unchanged). It owns the quorum path:
 * each change of an object key is stamped and sent to the key's replicas (writes.ts, copies.ts),
 * reads gather R answers and take the newest (reads.ts), listings and figures merge what the
 * pool's nodes answer (listing.ts, stats.ts); bucket settings stay with the local store, whose
 * catalog every node shares. Each message keeps the caller's deadline, which no hop may extend. */
import assert from 'node:assert/strict'
import type { Actor, Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type {
  AttributesResult,
  DeleteManyResult,
  DeleteResult,
  CoordinatorMsg,
  PartInfo,
  PutResult,
} from '../../protocol/messages.js'
import type { Handled, KindOf, MessageOf, ReplyOf } from '../../protocol/protocols.js'
import { markerHasNoAttributes } from '../../protocol/s3-rules/versioning.js'
import { bringKey } from './bring.js'
import { syncKey } from './key-sync.js'
import { deleteBucket } from './bucket-delete.js'
import { clusterState, type ClusterState } from './cluster-state.js'
import { copyObject, copyPart } from './copies.js'
import { listObjects, listParts, listUploads, listVersions } from './listing.js'
import { clientAnswer, getObject, readQuorum, type QuorumRead } from './reads.js'
import { askReplica } from './replica-calls.js'
import { quorumMissed } from './quorum.js'
import { replicasOf } from './replicas.js'
import { aheadOfClock, observeHeld } from './stamps.js'
import { bucketStats, storeStats } from './stats.js'
import { changeKey, deleteMany, writeBody } from './writes.js'
import { hasObjectLock, judgeVersionDelete } from './object-lock.js'

interface CoordinatorState {
  cluster: ClusterState | null
}

export const coordinator: Actor<CoordinatorState, 'coordinator'> = {
  name: 'coordinator',
  init: (ctx) => ({ cluster: clusterState(ctx) }),
  around(state, msg, ctx, next) {
    if (state.cluster === null) return passOn(ctx, msg)
    return counted(state.cluster, next())
  },
  handlers: {
    // A put's and a part's bodies reach every replica as they come.
    'object.put': (state, msg, ctx) =>
      writeBody(inCluster(state), ctx, msg) as Promise<Result<PutResult>>,
    'upload.part': (state, msg, ctx) =>
      writeBody(inCluster(state), ctx, msg) as Promise<Result<PartInfo>>,
    'object.get': (state, msg, ctx) => getObject(inCluster(state), ctx, msg),
    'object.delete': (state, msg, ctx) => deleteKey(inCluster(state), ctx, msg),
    'object.attributes.put': (state, msg, ctx) => changeAttributes(inCluster(state), ctx, msg),
    'upload.create': (state, msg, ctx) => changeKey(inCluster(state), ctx, msg),
    'upload.complete': (state, msg, ctx) => changeKey(inCluster(state), ctx, msg),
    'upload.abort': (state, msg, ctx) => changeKey(inCluster(state), ctx, msg),
    'object.delete-many': (state, msg, ctx) => deleteJudged(inCluster(state), ctx, msg),
    'object.copy': (state, msg, ctx) => copyObject(inCluster(state), ctx, msg),
    'upload.part-copy': (state, msg, ctx) => copyPart(inCluster(state), ctx, msg),
    'object.attributes.get': (state, msg, ctx) => attributesOf(inCluster(state), ctx, msg),
    'object.list': (state, msg, ctx) => listObjects(inCluster(state), ctx, msg),
    'object.list-versions': (state, msg, ctx) => listVersions(inCluster(state), ctx, msg),
    'upload.list': (state, msg, ctx) => listUploads(inCluster(state), ctx, msg),
    'upload.list-parts': (state, msg, ctx) => listParts(inCluster(state), ctx, msg),
    'bucket.delete': (state, msg, ctx) => deleteBucket(inCluster(state), ctx, msg),
    'bucket.stats': (state, msg, ctx) => bucketStats(inCluster(state), ctx, msg),
    'system.stats': (state, msg, ctx) => storeStats(inCluster(state), ctx, msg),
    'coordinator.counters': (state) => ok({ ...inCluster(state).counters }),
    'key.bring': (state, msg, ctx) => bringKey(inCluster(state), ctx, msg),
    'key.sync': (state, msg, ctx) => syncKey(inCluster(state), ctx, msg),
    // The catalog: every node holds it, and the store publishes its changes.
    'bucket.create': storeAnswers,
    'bucket.head': storeAnswers,
    'bucket.list': storeAnswers,
    'bucket.setting.put': storeAnswers,
    'bucket.setting.get': storeAnswers,
    'bucket.setting.delete': storeAnswers,
    'bucket.versioning.put': storeAnswers,
    'bucket.versioning.get': storeAnswers,
    // Point checks of a merged listing, asked of a store directly.
    'object.stamps': storeAnswers,
    'object.heads': storeAnswers,
    'object.versions-deleted': storeAnswers,
    'upload.states': storeAnswers,
    'key.claim': storeAnswers,
    'key.release': storeAnswers,
    'hint.put': storeAnswers,
    'hint.count': storeAnswers,
    'node.bootstrap': storeAnswers,
    'node.bootstrap-status': storeAnswers,
    'hint.nodes': storeAnswers,
    'hint.page': storeAnswers,
    'hint.done': storeAnswers,
  },
}

/** The cluster of a handler's state: `around` answers every request itself without one. */
function inCluster(state: CoordinatorState): ClusterState {
  assert(state.cluster !== null, 'a quorum handler ran without cluster settings')
  return state.cluster
}

/** Kinds the coordinator serves only in a cluster: the store takes none of them. */
const CLUSTER_ONLY_KINDS = new Set<KindOf<'coordinator'>>([
  'coordinator.counters',
  'key.bring',
  'key.sync',
])

type StoreKind = KindOf<'coordinator'> & KindOf<'replica-store'>

/** Without cluster settings a request goes to the local store unchanged. */
function passOn<K extends KindOf<'coordinator'>>(
  ctx: Context,
  msg: MessageOf<'coordinator', K>,
): Promise<Result<ReplyOf<'coordinator', K>>> {
  if (CLUSTER_ONLY_KINDS.has(msg.kind as KindOf<'coordinator'>)) {
    return Promise.resolve(fail('invalid_request', `${msg.kind} needs cluster mode`))
  }
  // Every other kind the coordinator takes, the store takes and answers alike.
  const local = msg as MessageOf<'replica-store', StoreKind>
  return ctx.call('replica-store', local) as Promise<Result<ReplyOf<'coordinator', K>>>
}

/** A request the local store answers as it is. */
function storeAnswers<K extends StoreKind>(
  _state: CoordinatorState,
  msg: MessageOf<'replica-store', K> & { kind: K },
  ctx: Context,
): Promise<Result<ReplyOf<'replica-store', K>>> {
  return ctx.call('replica-store', msg)
}

/** Counts a request answered as a missed quorum, for /metrics. */
async function counted<T>(cluster: ClusterState, answer: Handled<T>): Promise<Result<T>> {
  const result = await answer
  const missed = quorumMissed(result)
  if (missed === 'write') cluster.counters.quorumWriteFailures++
  if (missed === 'read') cluster.counters.quorumReadFailures++
  return result
}

/** The version an attributes request is of, as a read quorum finds it: the one it names, else the
 * key's current one; its id (when it has one) and the stamp of the write that made it. */
async function versionOf(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<CoordinatorMsg, { kind: 'object.attributes.get' | 'object.attributes.put' }>,
): Promise<Result<{ read: QuorumRead; versionId?: string; stamp?: string }>> {
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return set
  const { bucket, key, versionId: named, requestId, deadlineMs } = msg
  const head = {
    kind: 'object.get' as const,
    ...{ bucket, key, requestId, deadlineMs },
    ...(named === undefined ? {} : { versionId: named }),
  }
  const read = await readQuorum(cluster, ctx, head, set.value.reachable)
  if (!read.ok) return read
  const answer = clientAnswer(head, read.value.winner.answer)
  if (!answer.ok) return answer
  if ('marker' in answer.value) return markerHasNoAttributes(msg, answer.value.marker)
  const { versionId, stamp } = answer.value.info
  return ok({
    read: read.value,
    ...(versionId === undefined ? {} : { versionId }),
    ...(stamp === undefined ? {} : { stamp }),
  })
}

/** GetObjectAttributes' kin: the attributes of the version a quorum read finds newest. */
async function attributesOf(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<CoordinatorMsg, { kind: 'object.attributes.get' }>,
): Promise<Result<AttributesResult>> {
  const version = await versionOf(cluster, ctx, msg)
  if (!version.ok) return version
  const { read, versionId } = version.value
  return askReplica<AttributesResult>(ctx, read.winner.replica, {
    ...msg,
    ...(versionId === undefined ? {} : { versionId }),
  })
}

/** A change of a version's attributes goes to that version only, named by the stamp of the write
 * that made it: a replica where another write is current (one that missed the write a quorum
 * read found) does not change its own version, and is hinted the change instead. */
async function changeAttributes(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<CoordinatorMsg, { kind: 'object.attributes.put' }>,
): Promise<Result<AttributesResult>> {
  const version = await versionOf(cluster, ctx, msg)
  if (!version.ok) return version
  const { versionId, stamp, read } = version.value
  assert(stamp !== undefined, 'a replica answered a version without its write stamp')
  // An attribute change leaves the key's stamp, which the change's own stamp is chosen above: it
  // is chosen above the attribute changes this read quorum holds too, so that an acknowledged
  // change of an attribute is followed by a newer one whatever the coordinators' clocks.
  for (const { answer } of read.answers) {
    if ('changeStamp' in answer && !observeHeld(cluster, answer.changeStamp)) return aheadOfClock()
  }
  const named = { ...msg, versionStamp: stamp, ...(versionId === undefined ? {} : { versionId }) }
  return changeKey(cluster, ctx, named)
}

/** A delete; one of a version by id in a bucket with object lock is judged first
 * (object-lock.ts). */
async function deleteKey(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<CoordinatorMsg, { kind: 'object.delete' }>,
): Promise<Result<DeleteResult>> {
  if (msg.versionId !== undefined) {
    const locked = await hasObjectLock(ctx, msg)
    if (!locked.ok) return locked
    if (locked.value) {
      const target = { ...msg, versionId: msg.versionId }
      const judged = await judgeVersionDelete(cluster, ctx, target, (read) =>
        attributesOf(cluster, ctx, read),
      )
      if (!judged.ok) return judged
    }
  }
  return changeKey(cluster, ctx, msg)
}

/** Versions judged at once by a delete-many, so that its quorum reads stay bounded. */
const JUDGED_AT_ONCE = 16

/** DeleteObjects: each version by id in a bucket with object lock is judged first; the refused
 * are its errors, the rest are deleted. */
async function deleteJudged(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<CoordinatorMsg, { kind: 'object.delete-many' }>,
): Promise<Result<DeleteManyResult>> {
  const byId = msg.objects.filter((object) => object.versionId !== undefined)
  if (byId.length === 0) return deleteMany(cluster, ctx, msg)
  const locked = await hasObjectLock(ctx, msg)
  if (!locked.ok) return locked
  if (!locked.value) return deleteMany(cluster, ctx, msg)
  const refused: DeleteManyResult['errors'] = []
  const allowed: typeof msg.objects = msg.objects.filter((object) => object.versionId === undefined)
  for (let at = 0; at < byId.length; at += JUDGED_AT_ONCE) {
    const batch = byId.slice(at, at + JUDGED_AT_ONCE)
    const judged = await Promise.all(
      batch.map((object) =>
        judgeVersionDelete(
          cluster,
          ctx,
          { ...msg, key: object.key, versionId: object.versionId ?? 'null' },
          (read) => attributesOf(cluster, ctx, read),
        ),
      ),
    )
    judged.forEach((verdict, index) => {
      const object = batch[index] as (typeof msg.objects)[number]
      if (verdict.ok) allowed.push(object)
      else refused.push({ key: object.key, code: verdict.code, detail: verdict.detail })
    })
  }
  const deleted =
    allowed.length === 0
      ? ok<DeleteManyResult>({ deleted: [], errors: [] })
      : await deleteMany(cluster, ctx, { ...msg, objects: allowed })
  if (!deleted.ok) return deleted
  const order = new Map(msg.objects.map((object, index) => [object.key, index]))
  const errors = [...deleted.value.errors, ...refused]
  errors.sort((a, b) => (order.get(a.key) ?? 0) - (order.get(b.key) ?? 0))
  return ok({ deleted: deleted.value.deleted, errors })
}
