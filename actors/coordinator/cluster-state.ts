/** @module What the coordinator keeps in cluster mode: its settings, the hybrid clock that stamps
 * changes of object keys, a short-lived copy of gossip's membership and of buckets' pools, the
 * partition tables of the pools it has seen, and the counters /metrics shows. Everything else it
 * needs is asked for per request; a restart is a new state, as for every actor. */
import type { Context } from '../../protocol/actor.js'
import type { Member } from '../../protocol/cluster.js'
import { HlcClock, nodeTag } from '../../protocol/hlc.js'
import type { CoordinatorCounters } from '../../protocol/messages.js'
import { parsePoolNodes } from '../../protocol/placement.js'
import type { ReplicaAnswer } from './reads.js'

/** Version tokens count wall-clock microseconds: a stamp's counter must stay below 1,000. */
export const STAMP_LOGICAL_MAX = 999
/** How long a membership view or a bucket's pool is reused before it is asked for again. */
export const VIEW_TTL_MS = 500
export const BUCKET_POOL_TTL_MS = 5_000
/** Buckets whose pool is remembered at once; the oldest are forgotten past it. */
export const BUCKET_POOLS_MAX = 10_000

export interface ClusterSettings {
  nodeId: string
  poolName: string
  /** Ids of this node's pool, as SVC_POOL_NODES lists them. */
  poolIds: string[]
  rf: number
  writeQuorum: number
  readQuorum: number
}

export interface ClusterState {
  settings: ClusterSettings
  clock: HlcClock
  view: { members: Member[]; atMs: number } | null
  /** Partition tables by pool name and member ids. */
  tables: Map<string, string[][]>
  bucketPools: Map<string, { pool: string; atMs: number }>
  counters: CoordinatorCounters
  /** Read repairs in flight (repair.ts bounds them). */
  repairsRunning: number
  /** Quorum decisions of GETs' first looks, by request id, for their second request (reads.ts). */
  firstLooks: Map<string, { at: string; winner: ReplicaAnswer; atMs: number }>
}

/** The coordinator's cluster state, or null on a single node (or a config without a pool). */
export function clusterState(ctx: Context): ClusterState | null {
  if (ctx.config['SVC_MODE'] !== 'cluster') return null
  const nodeId = ctx.config['SVC_NODE_ID'] ?? ''
  const pool = parsePoolNodes(ctx.config['SVC_POOL_NODES'] ?? '')
  if (typeof pool === 'string') throw new Error(`SVC_POOL_NODES ${pool}`)
  const settings: ClusterSettings = {
    nodeId,
    poolName: ctx.config['SVC_POOL_NAME'] ?? '',
    poolIds: pool.map((node) => node.id),
    rf: Number(ctx.config['SVC_REPLICATION_FACTOR'] ?? '3'),
    writeQuorum: Number(ctx.config['SVC_WRITE_QUORUM'] ?? '2'),
    readQuorum: Number(ctx.config['SVC_READ_QUORUM'] ?? '2'),
  }
  return {
    settings,
    clock: new HlcClock(nodeTag(nodeId), () => ctx.now(), STAMP_LOGICAL_MAX),
    view: null,
    tables: new Map(),
    bucketPools: new Map(),
    counters: {
      quorumWrites: 0,
      quorumReads: 0,
      quorumWriteFailures: 0,
      quorumReadFailures: 0,
      readRepairs: 0,
    },
    repairsRunning: 0,
    firstLooks: new Map(),
  }
}
