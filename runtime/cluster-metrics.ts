/** @module The seven `svc_cluster_*` series of SPEC.md, as this node sees them, for /metrics of a
 * cluster node or gateway, and the read repairs the coordinator made. Nodes alive come from gossip
 * at each scrape (storage nodes in Alive state, this one included); quorum reads and writes, read
 * repairs and hints kept from the coordinator and its store, hints delivered and expired from the
 * hint queue (a gateway coordinates nothing and keeps no hints: 0); the scrubber's three counters
 * from the scrubber (scrubber-metrics.ts, 0 on a gateway). */
import type { AntiEntropyStatus } from '../protocol/anti-entropy.js'
import { Counter, Gauge, Registry } from 'prom-client'
import { hintsPending, membershipView } from '../http/admin/cluster-app.js'
import type { Mesh } from '../protocol/actor.js'
import type { CoordinatorCounters, HintQueueCounters } from '../protocol/messages.js'
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
  const counted = await mesh.call<CoordinatorCounters>('coordinator', {
    kind: 'coordinator.counters',
    requestId: 'metrics',
    deadlineMs: mesh.now() + VIEW_TIMEOUT_MS,
  })
  for (const [name, help, field] of COORDINATOR_COUNTERS) {
    new Counter({ name, help, registers }).inc(counted.ok ? counted.value[field] : 0)
  }
  const hints = await mesh.call<HintQueueCounters>('hint-queue', {
    kind: 'hint-queue.counters',
    requestId: 'metrics',
    deadlineMs: mesh.now() + VIEW_TIMEOUT_MS,
  })
  for (const [name, help, field] of HINT_COUNTERS) {
    new Counter({ name, help, registers }).inc(hints.ok ? hints.value[field] : 0)
  }
  const repaired = await mesh.call<AntiEntropyStatus>('anti-entropy', {
    kind: 'anti-entropy.status',
    requestId: 'metrics',
    deadlineMs: mesh.now() + VIEW_TIMEOUT_MS,
  })
  new Counter({
    name: 'svc_cluster_ae_items_repaired_total',
    help: 'Changes anti-entropy replayed to a replica that lacked them',
    registers,
  }).inc(repaired.ok ? repaired.value.itemsRepaired : 0)
  return (await registry.metrics()) + (await scrubberMetricsText(mesh))
}
