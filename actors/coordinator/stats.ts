/** @module Figures across the cluster (/api/stats, the admin API's bucket statistics): every
 * reachable storage node reports its own, and each object counts once. A bucket's objects are on
 * every node of its pool when the pool has RF nodes (the default, and the layout where a node's
 * counter is the bucket's): the largest counter among its nodes is the bucket's, which also
 * covers a replica that missed writes. Dedup figures (distinct blobs, references) are each
 * pool's largest, summed over pools: what one copy of the data holds. */
import type { Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { BucketStats, StoreStats } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { askReplica } from './replica-calls.js'
import { membersNow, type Replica } from './replicas.js'

/** Only the request's ids: the message it came in is another kind. */
function ids(request: { requestId: string; deadlineMs: number }) {
  return { requestId: request.requestId, deadlineMs: request.deadlineMs }
}

async function storageNodes(
  cluster: ClusterState,
  ctx: Context,
  deadlineMs: number,
): Promise<Result<(Replica & { pool: string })[]>> {
  const members = await membersNow(cluster, ctx, deadlineMs)
  if (!members.ok) return members
  return ok(
    members.value
      .filter((member) => member.kind === 'node')
      .filter((member) => member.id === cluster.settings.nodeId || member.status === 'Alive')
      .map((member) => ({
        id: member.id,
        local: member.id === cluster.settings.nodeId,
        target: { id: member.id, grpcAddr: member.grpcAddr },
        pool: member.pool ?? '',
      })),
  )
}

export async function bucketStats(
  cluster: ClusterState,
  ctx: Context,
  request: { requestId: string; deadlineMs: number },
): Promise<Result<BucketStats[]>> {
  const nodes = await storageNodes(cluster, ctx, request.deadlineMs)
  if (!nodes.ok) return nodes
  const answers = await Promise.all(
    nodes.value.map((node) =>
      askReplica<BucketStats[]>(ctx, node, { ...ids(request), kind: 'bucket.stats' }),
    ),
  )
  const local = answers[nodes.value.findIndex((node) => node.local)]
  if (local !== undefined && !local.ok) return local
  const merged = new Map<string, BucketStats>()
  for (const answer of answers) {
    if (!answer.ok) continue
    for (const stats of answer.value) {
      const held = merged.get(stats.name)
      merged.set(stats.name, {
        ...stats,
        objectsCount: Math.max(stats.objectsCount, held?.objectsCount ?? 0),
        storageUsedBytes: Math.max(stats.storageUsedBytes, held?.storageUsedBytes ?? 0),
      })
    }
  }
  // Buckets are the catalog's: the local store lists exactly those that exist.
  const names = local?.ok === true ? local.value.map((stats) => stats.name) : [...merged.keys()]
  return ok(names.map((name) => merged.get(name) as BucketStats))
}

export async function storeStats(
  cluster: ClusterState,
  ctx: Context,
  request: { requestId: string; deadlineMs: number },
): Promise<Result<StoreStats>> {
  const nodes = await storageNodes(cluster, ctx, request.deadlineMs)
  if (!nodes.ok) return nodes
  const [buckets, ...answers] = await Promise.all([
    bucketStats(cluster, ctx, request),
    ...nodes.value.map((node) =>
      askReplica<StoreStats>(ctx, node, { ...ids(request), kind: 'system.stats' }),
    ),
  ])
  if (!buckets.ok) return buckets
  const stats: StoreStats = {
    bucketsCount: buckets.value.length,
    objectsCount: 0,
    storageUsedBytes: 0,
    uniqueBlobs: 0,
    totalReferences: 0,
  }
  for (const bucket of buckets.value) {
    stats.objectsCount += bucket.objectsCount
    stats.storageUsedBytes += bucket.storageUsedBytes
  }
  // Each pool's nodes hold the same blobs (pool = RF): the largest count is the pool's.
  const pools = new Map<string, { blobs: number; refs: number }>()
  answers.forEach((answer, index) => {
    if (!answer.ok) return
    const pool = nodes.value[index]?.pool ?? ''
    const held = pools.get(pool) ?? { blobs: 0, refs: 0 }
    held.blobs = Math.max(held.blobs, answer.value.uniqueBlobs)
    held.refs = Math.max(held.refs, answer.value.totalReferences)
    pools.set(pool, held)
  })
  for (const pool of pools.values()) {
    stats.uniqueBlobs += pool.blobs
    stats.totalReferences += pool.refs
  }
  return ok(stats)
}
