/** @module Where a key lives, as this coordinator sees it now: the bucket's pool (from the local
 * catalog, chosen at the bucket's creation for good), the pool's partition table (a pure function
 * of its member ids, protocol/placement.ts), and which of the key's replicas gossip shows
 * reachable (Alive or Suspect). The membership view and buckets' pools are reused for a short
 * while, so a request costs no extra hop in the common case. */
import type { Context } from '../../protocol/actor.js'
import type { Member, NodePhase, PeerTarget } from '../../protocol/cluster.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { BucketInfo } from '../../protocol/objects.js'
import { partitionOf, partitionTable, PARTITIONS } from '../../protocol/placement.js'
import {
  BUCKET_POOL_TTL_MS,
  BUCKET_POOLS_MAX,
  VIEW_TTL_MS,
  type ClusterState,
} from './cluster-state.js'

/** One replica of a key: this node's own store, or another node reached over gRPC. */
export interface Replica {
  id: string
  local: boolean
  target: PeerTarget
}

/** The replicas of one partition, by preference, and those of them that may answer now. */
export interface ReplicaSet {
  all: string[]
  reachable: Replica[]
}

/** A pool's nodes with the partitions each replicates: what a listing asks. */
export interface PoolLayout {
  table: string[][]
  /** The pool's nodes that may answer now. */
  reachable: Replica[]
}

export async function membersNow(
  cluster: ClusterState,
  ctx: Context,
  deadlineMs: number,
): Promise<Result<Member[]>> {
  const cached = cluster.view
  if (cached !== null && ctx.now() - cached.atMs < VIEW_TTL_MS) return ok(cached.members)
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: 'coordinator',
    deadlineMs: Math.min(deadlineMs, ctx.now() + 1_000),
  })
  if (!view.ok) return fail('unavailable', `membership unknown: ${view.detail}`)
  cluster.view = { members: view.value.members, atMs: ctx.now() }
  return ok(view.value.members)
}

/** The pool that holds `bucket`'s objects; no_such_bucket when the catalog has no such bucket. */
export async function poolOf(
  cluster: ClusterState,
  ctx: Context,
  bucket: string,
  deadlineMs: number,
): Promise<Result<string>> {
  const cached = cluster.bucketPools.get(bucket)
  if (cached !== undefined && ctx.now() - cached.atMs < BUCKET_POOL_TTL_MS) return ok(cached.pool)
  const head = await ctx.call('replica-store', {
    kind: 'bucket.head',
    bucket,
    requestId: 'coordinator',
    deadlineMs,
  })
  if (!head.ok) return head
  const pool = head.value.pool ?? cluster.settings.poolName
  if (cluster.bucketPools.size >= BUCKET_POOLS_MAX) cluster.bucketPools.clear()
  cluster.bucketPools.set(bucket, { pool, atMs: ctx.now() })
  return ok(pool)
}

function poolIds(cluster: ClusterState, pool: string, members: readonly Member[]): string[] {
  if (pool === cluster.settings.poolName) return cluster.settings.poolIds
  return members.filter((m) => m.kind === 'node' && m.pool === pool).map((m) => m.id)
}

function tableOf(cluster: ClusterState, pool: string, ids: readonly string[]): string[][] {
  const name = `${pool}\0${[...ids].sort().join(',')}`
  let table = cluster.tables.get(name)
  if (table === undefined) {
    table = partitionTable(ids, Math.min(cluster.settings.rf, ids.length))
    cluster.tables.set(name, table)
  }
  return table
}

function replicaOf(cluster: ClusterState, id: string, members: readonly Member[]): Replica | null {
  const member = members.find((m) => m.id === id)
  // A node that must be bootstrapped (or is being) may hold what was deleted since: it counts in
  // no quorum, its own node's included (rejoin.ts).
  if (member !== undefined && STALE_PHASES.has(member.phase)) return null
  if (id === cluster.settings.nodeId) return localReplica(id)
  if (member === undefined || (member.status !== 'Alive' && member.status !== 'Suspect')) {
    return null
  }
  return { id, local: false, target: { id, grpcAddr: member.grpcAddr } }
}

/** This node's own store, named `id`. */
export function localReplica(id: string): Replica {
  return { id, local: true, target: { id, grpcAddr: '' } }
}

const STALE_PHASES: ReadonlySet<NodePhase> = new Set(['needs_bootstrap', 'bootstrapping'])

function reachableOf(cluster: ClusterState, ids: readonly string[], members: readonly Member[]) {
  const replicas: Replica[] = []
  for (const id of ids) {
    const replica = replicaOf(cluster, id, members)
    if (replica !== null) replicas.push(replica)
  }
  // The local store answers first and cheapest.
  return replicas.sort((a, b) => Number(b.local) - Number(a.local))
}

/** The replicas of `bucket`/`key`. */
export async function replicasOf(
  cluster: ClusterState,
  ctx: Context,
  at: { bucket: string; key: string },
  deadlineMs: number,
): Promise<Result<ReplicaSet>> {
  const layout = await poolLayout(cluster, ctx, at.bucket, deadlineMs)
  if (!layout.ok) return layout
  const all = layout.value.table[partitionOf(at.bucket, at.key)] as string[]
  const reachable = layout.value.reachable.filter((replica) => all.includes(replica.id))
  return ok({ all, reachable })
}

/** The layout of the pool that holds `bucket`. */
export async function poolLayout(
  cluster: ClusterState,
  ctx: Context,
  bucket: string,
  deadlineMs: number,
): Promise<Result<PoolLayout>> {
  const pool = await poolOf(cluster, ctx, bucket, deadlineMs)
  if (!pool.ok) return pool
  const members = await membersNow(cluster, ctx, deadlineMs)
  if (!members.ok) return members
  const ids = poolIds(cluster, pool.value, members.value)
  if (ids.length === 0) return fail('unavailable', `no node of pool ${pool.value} is known`)
  const table = tableOf(cluster, pool.value, ids)
  return ok({ table, reachable: reachableOf(cluster, ids, members.value) })
}

/** Whether the nodes in `answered` cover every partition of `table` with at least `need` of its
 * replicas each (a listing is whole only then). */
export function covers(table: readonly string[][], answered: ReadonlySet<string>, need: number) {
  for (let p = 0; p < PARTITIONS; p++) {
    const replicas = table[p] as string[]
    if (replicas.filter((id) => answered.has(id)).length < Math.min(need, replicas.length)) {
      return false
    }
  }
  return true
}
