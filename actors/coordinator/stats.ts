/** @module Figures across the cluster (/api/stats, the admin API's bucket statistics): every
 * reachable storage node reports its own, and each object counts once. A bucket's objects are on
 * its pool's nodes, each object on RF of them (min(RF, pool size)). When the pool has at most RF
 * nodes (the default layout), every node holds every object and its counter is the bucket's: the
 * largest among the nodes is taken, which also covers a replica that missed writes. A larger pool
 * spreads the partitions: each node holds RF/size of them, and the nodes' sum holds each object
 * RF times, so the bucket's figure is that sum over RF (exact once the replicas agree and every
 * node answered). Dedup figures (distinct blobs, references) are each pool's largest, summed over
 * pools: what one copy of the data holds. */
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

/** The storage nodes that answer for the figures, each with its pool and how many copies of an
 * object the pool keeps when it spreads its partitions (null: each node holds every object). */
async function storageNodes(
  cluster: ClusterState,
  ctx: Context,
  deadlineMs: number,
): Promise<Result<(Replica & { pool: string; spread: number | null })[]>> {
  const members = await membersNow(cluster, ctx, deadlineMs)
  if (!members.ok) return members
  // This node's pool as SVC_POOL_NODES lists it; another as gossip knows its members.
  const sizes = new Map<string, number>()
  for (const member of members.value) {
    if (member.kind !== 'node') continue
    sizes.set(member.pool ?? '', (sizes.get(member.pool ?? '') ?? 0) + 1)
  }
  sizes.set(cluster.settings.poolName, cluster.settings.poolIds.length)
  const rf = cluster.settings.rf
  const spreadOf = (pool: string): number | null => ((sizes.get(pool) ?? 0) > rf ? rf : null)
  return ok(
    members.value
      .filter((member) => member.kind === 'node')
      .filter((member) => member.id === cluster.settings.nodeId || member.status === 'Alive')
      .map((member) => ({
        id: member.id,
        local: member.id === cluster.settings.nodeId,
        target: { id: member.id, grpcAddr: member.grpcAddr },
        pool: member.pool ?? '',
        spread: spreadOf(member.pool ?? ''),
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
  // Per bucket and pool: the largest counter of a pool whose nodes hold everything, the sum of
  // one that spreads its partitions (divided once summed).
  const merged = new Map<string, { stats: BucketStats; pools: Map<string, Figures> }>()
  answers.forEach((answer, index) => {
    const node = nodes.value[index]
    if (!answer.ok || node === undefined) return
    for (const stats of answer.value) {
      const entry = merged.get(stats.name) ?? { stats, pools: new Map<string, Figures>() }
      const held = entry.pools.get(node.pool) ?? { objects: 0, bytes: 0, spread: node.spread }
      const add = (was: number, more: number) =>
        node.spread === null ? Math.max(was, more) : was + more
      held.objects = add(held.objects, stats.objectsCount)
      held.bytes = add(held.bytes, stats.storageUsedBytes)
      entry.pools.set(node.pool, held)
      merged.set(stats.name, entry)
    }
  })
  // Buckets are the catalog's: the local store lists exactly those that exist.
  const names = local?.ok === true ? local.value.map((stats) => stats.name) : [...merged.keys()]
  return ok(
    names.flatMap((name) => {
      const entry = merged.get(name)
      if (entry === undefined) return []
      let [objectsCount, storageUsedBytes] = [0, 0]
      for (const { objects, bytes, spread } of entry.pools.values()) {
        objectsCount += spread === null ? objects : Math.round(objects / spread)
        storageUsedBytes += spread === null ? bytes : Math.round(bytes / spread)
      }
      return [{ ...entry.stats, objectsCount, storageUsedBytes }]
    }),
  )
}

/** A bucket's figures on the nodes of one pool, as they are added up. */
interface Figures {
  objects: number
  bytes: number
  spread: number | null
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
