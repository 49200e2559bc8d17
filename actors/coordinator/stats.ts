/** @module Figures across the cluster (/api/stats, the admin API's bucket statistics): every
 * reachable storage node reports its own, and each bucket's objects count once. A bucket's
 * objects are on every node of its pool when the pool has RF nodes (the default, and the only
 * layout where a node's counter is the bucket's): the largest counter among its nodes is the
 * bucket's, which also covers a replica that missed writes. Dedup figures (blobs, references)
 * are physical: the sum over nodes. */
import type { Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import type { BucketStats, StoreStats } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { askReplica } from './replica-calls.js'
import { membersNow, type Replica } from './replicas.js'

async function storageNodes(
  cluster: ClusterState,
  ctx: Context,
  deadlineMs: number,
): Promise<Result<Replica[]>> {
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
      askReplica<BucketStats[]>(ctx, node, { kind: 'bucket.stats', ...request }),
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
      askReplica<StoreStats>(ctx, node, { kind: 'system.stats', ...request }),
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
  for (const answer of answers) {
    if (!answer.ok) continue
    stats.uniqueBlobs += answer.value.uniqueBlobs
    stats.totalReferences += answer.value.totalReferences
  }
  return ok(stats)
}
