/** @module The seven `svc_cluster_*` series of SPEC.md, as this node sees them, for /metrics of a
 * cluster node or gateway. Nodes alive come from gossip at each scrape (storage nodes in Alive
 * state, this one included). The other six count work of the quorum coordinator, the hint queue
 * and the scrubber; until those run on this node nothing was counted, and they read 0 rather
 * than being absent, so dashboards and alerts have their series from the start. */
import { Counter, Gauge, Registry } from 'prom-client'
import { membershipView } from '../http/admin/cluster-app.js'
import type { Mesh } from '../protocol/actor.js'

/** A scrape waits this long for gossip; without an answer the gauge is left out. */
const VIEW_TIMEOUT_MS = 1_000

const COUNTERS: readonly [string, string][] = [
  ['svc_cluster_quorum_writes_total', 'Writes coordinated here that reached the write quorum'],
  ['svc_cluster_quorum_reads_total', 'Reads coordinated here that reached the read quorum'],
  ['svc_cluster_blobs_scanned_total', 'Blobs whose CRC32 the scrubber checked'],
  ['svc_cluster_corruptions_found_total', 'Blob copies the scrubber found corrupt'],
  ['svc_cluster_corruptions_healed_total', 'Corrupt blob copies replaced from a replica'],
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
  }).set(0)
  for (const [name, help] of COUNTERS) new Counter({ name, help, registers })
  return registry.metrics()
}
