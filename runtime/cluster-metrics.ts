/** @module The seven `svc_cluster_*` series of SPEC.md, as this node sees them, for /metrics of a
 * cluster node or gateway, and the quorum failures and read repairs the coordinator made. Nodes
 * alive come from gossip at each scrape (storage nodes in Alive state, this one included); quorum
 * reads and writes, their failures, read repairs and hints kept from the coordinator and its store,
 * hints delivered and expired from the hint queue (a gateway coordinates nothing and keeps no
 * hints: 0); the scrubber's three counters from the scrubber (scrubber-metrics.ts, 0 on a
 * gateway). Counters and pending hints are this node's own (a dashboard sums them over nodes).
 * A storage node also exports the cluster's figures (svc_cluster_buckets, _objects, _stored_bytes:
 * each object once, as /api/stats counts them), the same on every node that sees the same members:
 * a dashboard takes their max over nodes, never their sum. */
import type { AntiEntropyStatus } from '../protocol/anti-entropy.js'
import { Counter, Gauge, Registry } from 'prom-client'
import { hintsPending, membershipView } from '../http/admin/cluster-app.js'
import type { Mesh } from '../protocol/actor.js'
import type { CoordinatorCounters, HintQueueCounters } from '../protocol/messages.js'
import { storeFigures, type StoreFigures } from '../http/stats.js'
import { METRICS_GATHER_TIMEOUT_MS } from './knobs.js'
import { scrubberMetricsText } from './scrubber-metrics.js'

/** A scrape waits this long for gossip; without an answer the gauge is left out. */
const VIEW_TIMEOUT_MS = 1_000

const COORDINATOR_COUNTERS: readonly [string, string, keyof CoordinatorCounters][] = [
  [
    'svc_cluster_quorum_writes_total',
    'Writes coordinated here that reached the write quorum',
    'quorumWrites',
  ],
  [
    'svc_cluster_quorum_reads_total',
    'Reads coordinated here that reached the read quorum',
    'quorumReads',
  ],
  [
    'svc_cluster_quorum_write_failures_total',
    'Writes coordinated here refused 503 because too few replicas acknowledged',
    'quorumWriteFailures',
  ],
  [
    'svc_cluster_quorum_read_failures_total',
    'Reads coordinated here refused 503 because too few replicas answered',
    'quorumReadFailures',
  ],
  [
    'svc_cluster_read_repairs_total',
    'Stale replicas a read coordinated here brought up to date',
    'readRepairs',
  ],
]

const HINT_COUNTERS: readonly [string, string, keyof HintQueueCounters][] = [
  [
    'svc_cluster_hints_delivered_total',
    'Hints whose replica this node brought up to date',
    'delivered',
  ],
  [
    'svc_cluster_hints_expired_total',
    'Hints dropped undelivered after SVC_HINT_TTL_HOURS',
    'expired',
  ],
]

export async function clusterMetricsText(mesh: Mesh): Promise<string> {
  const registry = new Registry()
  const registers = [registry]
  const view = await membershipView(mesh, mesh.now() + VIEW_TIMEOUT_MS)
  if (view.ok) {
    const alive = view.value.members.filter(
      (member) => member.kind === 'node' && member.status === 'Alive',
    )
    new Gauge({
      name: 'svc_cluster_nodes_alive',
      help: 'Storage nodes this node sees Alive through gossip, itself included',
      registers,
    }).set(alive.length)
  }
  new Gauge({
    name: 'svc_cluster_hints_pending',
    help: 'Hints this node keeps for replicas that missed writes',
    registers,
  }).set(await hintsPending(mesh))
  // Each coordinator thread counts its own keys' requests.
  const counted = await mesh.callEach('coordinator', {
    kind: 'coordinator.counters',
    requestId: 'metrics',
    deadlineMs: mesh.now() + VIEW_TIMEOUT_MS,
  })
  for (const [name, help, field] of COORDINATOR_COUNTERS) {
    const sum = counted.reduce((total, each) => total + (each.ok ? each.value[field] : 0), 0)
    new Counter({ name, help, registers }).inc(sum)
  }
  const hints = await mesh.call('hint-queue', {
    kind: 'hint-queue.counters',
    requestId: 'metrics',
    deadlineMs: mesh.now() + VIEW_TIMEOUT_MS,
  })
  for (const [name, help, field] of HINT_COUNTERS) {
    new Counter({ name, help, registers }).inc(hints.ok ? hints.value[field] : 0)
  }
  const repaired = await mesh.call('anti-entropy', {
    kind: 'anti-entropy.status',
    requestId: 'metrics',
    deadlineMs: mesh.now() + VIEW_TIMEOUT_MS,
  })
  new Counter({
    name: 'svc_cluster_ae_items_repaired_total',
    help: 'Changes anti-entropy replayed to a replica that lacked them',
    registers,
  }).inc(repaired.ok ? repaired.value.itemsRepaired : 0)
  await clusterFigures(mesh, registers)
  return (await registry.metrics()) + (await scrubberMetricsText(mesh))
}

const CLUSTER_FIGURES: readonly (readonly [string, string, keyof StoreFigures])[] = [
  ['svc_cluster_buckets', 'Buckets of the cluster', 'buckets_count'],
  ['svc_cluster_objects', 'Objects of the cluster, each counted once', 'objects_count'],
  [
    'svc_cluster_stored_bytes',
    'Sum of the sizes of the objects and uploads in progress of the cluster, each counted once',
    'storage_used_bytes',
  ],
]

/** The cluster's figures as this storage node's coordinator adds them up (a gateway has none);
 * left out when it does not answer in time. */
async function clusterFigures(mesh: Mesh, registers: Registry[]): Promise<void> {
  if (mesh.config['SVC_MODE'] === 'gateway') return
  const figures = await storeFigures(mesh, METRICS_GATHER_TIMEOUT_MS, 'coordinator')
  if (!figures.ok) return
  for (const [name, help, figure] of CLUSTER_FIGURES) {
    new Gauge({ name, help, registers }).set(figures.value[figure])
  }
}
