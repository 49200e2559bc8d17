/** @module Coordinator: the seam between the ingress and the replicas in cluster mode (a single
 * node does not run it: its ingress sends requests to the store itself; without cluster settings
 * the coordinator passes each request to the local store unchanged). It owns the quorum path:
 * each change of an object key is stamped and sent to the key's replicas (writes.ts, copies.ts),
 * reads gather R answers and take the newest (reads.ts), listings and figures merge what the
 * pool's nodes answer (listing.ts, stats.ts); bucket settings stay with the local store, whose
 * catalog every node shares. Each message keeps the caller's deadline, which no hop may extend. */
import type { Actor, Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { CoordinatorMsg, TaggingResult } from '../../protocol/messages.js'
import { markerHasNoTags } from '../../protocol/s3-rules/versioning.js'
import { bringKey } from './bring.js'
import { syncKey } from './key-sync.js'
import { deleteBucket } from './bucket-delete.js'
import { clusterState, type ClusterState } from './cluster-state.js'
import { copyObject, copyPart } from './copies.js'
import { listObjects, listParts, listUploads, listVersions } from './listing.js'
import { clientAnswer, getObject, readQuorum } from './reads.js'
import { askReplica } from './replica-calls.js'
import { quorumMissed } from './quorum.js'
import { replicasOf } from './replicas.js'
import { bucketStats, storeStats } from './stats.js'
import { changeKey, deleteMany, writeBody } from './writes.js'

interface CoordinatorState {
  cluster: ClusterState | null
}

export const coordinator: Actor<CoordinatorState, CoordinatorMsg> = {
  name: 'coordinator',
  init: (ctx) => ({ cluster: clusterState(ctx) }),
  handle(state, msg, ctx: Context): Promise<Result<unknown>> {
    if (state.cluster === null) return ctx.call('replica-store', msg)
    return counted(state.cluster, coordinate(state.cluster, msg, ctx))
  },
}

/** Counts a request answered as a missed quorum, for /metrics. */
async function counted(
  cluster: ClusterState,
  answer: Promise<Result<unknown>>,
): Promise<Result<unknown>> {
  const result = await answer
  const missed = quorumMissed(result)
  if (missed === 'write') cluster.counters.quorumWriteFailures++
  if (missed === 'read') cluster.counters.quorumReadFailures++
  return result
}

async function coordinate(
  cluster: ClusterState,
  msg: CoordinatorMsg,
  ctx: Context,
): Promise<Result<unknown>> {
  switch (msg.kind) {
    case 'object.put':
    case 'upload.part':
      return writeBody(cluster, ctx, msg)
    case 'object.get':
      return getObject(cluster, ctx, msg)
    case 'object.delete':
    case 'object.tagging.put':
    case 'upload.create':
    case 'upload.complete':
    case 'upload.abort':
      return changeKey(cluster, ctx, msg)
    case 'object.delete-many':
      return deleteMany(cluster, ctx, msg)
    case 'object.copy':
      return copyObject(cluster, ctx, msg)
    case 'upload.part-copy':
      return copyPart(cluster, ctx, msg)
    case 'object.tagging.get':
      return taggingOf(cluster, ctx, msg)
    case 'object.list':
      return listObjects(cluster, ctx, msg)
    case 'object.list-versions':
      return listVersions(cluster, ctx, msg)
    case 'upload.list':
      return listUploads(cluster, ctx, msg)
    case 'upload.list-parts':
      return listParts(cluster, ctx, msg)
    case 'bucket.delete':
      return deleteBucket(cluster, ctx, msg)
    case 'bucket.stats':
      return bucketStats(cluster, ctx, msg)
    case 'system.stats':
      return storeStats(cluster, ctx, msg)
    case 'coordinator.counters':
      return ok({ ...cluster.counters })
    case 'key.bring':
      return bringKey(cluster, ctx, msg)
    case 'key.sync':
      return syncKey(cluster, ctx, msg)
    // The catalog: every node holds it, and the store publishes its changes.
    case 'bucket.create':
    case 'bucket.head':
    case 'bucket.list':
    case 'bucket.cors.put':
    case 'bucket.cors.get':
    case 'bucket.cors.delete':
    case 'bucket.versioning.put':
    case 'bucket.versioning.get':
    case 'bucket.tagging.put':
    case 'bucket.tagging.get':
    // Point checks of a merged listing, asked of a store directly.
    case 'object.stamps':
    case 'object.heads':
    case 'object.versions-deleted':
    case 'upload.states':
    case 'key.claim':
    case 'key.release':
    case 'hint.put':
    case 'hint.count':
    case 'node.bootstrap':
    case 'node.bootstrap-status':
    case 'hint.nodes':
    case 'hint.page':
    case 'hint.done':
      return ctx.call('replica-store', msg)
  }
}

/** GetObjectTagging: the tags of the version a quorum read finds newest. */
async function taggingOf(
  cluster: ClusterState,
  ctx: Context,
  msg: Extract<CoordinatorMsg, { kind: 'object.tagging.get' }>,
): Promise<Result<TaggingResult>> {
  const set = await replicasOf(cluster, ctx, msg, msg.deadlineMs)
  if (!set.ok) return set
  const head = { ...msg, kind: 'object.get' as const }
  const read = await readQuorum(cluster, ctx, head, set.value.reachable)
  if (!read.ok) return read
  const answer = clientAnswer(head, read.value.winner.answer)
  if (!answer.ok) return answer
  if ('marker' in answer.value) return markerHasNoTags(msg, answer.value.marker)
  const versionId = answer.value.info.versionId
  return askReplica<TaggingResult>(ctx, read.value.winner.replica, {
    ...msg,
    ...(versionId === undefined ? {} : { versionId }),
  })
}
