/** @module The node's own store's figures as gauges on /metrics: what this node holds, read at
 * scrape time with one call to its store's counters, bounded like each actor's answer to a scrape.
 * On a single node they are those of /api/stats (http/stats.ts). In a cluster each node holds the
 * replicas of its partitions, so a node's gauges are its own and their sum over the nodes counts
 * each object once per replica: the cluster's figures are svc_cluster_objects and its siblings
 * (cluster-metrics.ts). A gateway has no store and exports none. One store per node, so no
 * `actor` label. When the store does not answer in time the scrape goes on without them;
 * `svc_actor_up` says which actor is missing. */
import { Gauge, Registry } from 'prom-client'
import type { Mesh } from '../protocol/actor.js'
import { storeFigures, type StoreFigures } from '../http/stats.js'
import { METRICS_GATHER_TIMEOUT_MS } from './knobs.js'

const GAUGES: readonly (readonly [name: string, help: string, figure: keyof StoreFigures])[] = [
  ['svc_buckets', 'Buckets this node knows (in a cluster, every node knows all)', 'buckets_count'],
  ['svc_objects', "Objects this node's store holds (in a cluster, its replicas)", 'objects_count'],
  [
    'svc_stored_bytes',
    "Sum of the sizes of the objects and of the parts of uploads in progress this node's store " +
      'holds',
    'storage_used_bytes',
  ],
  [
    'svc_dedup_unique_blobs',
    'Distinct blobs this node stores (content-addressed)',
    'dedup_unique_blobs',
  ],
  ['svc_dedup_references', 'References to the blobs this node stores', 'dedup_total_references'],
  [
    'svc_dedup_ratio',
    'References per distinct blob on this node; 0 while none is stored',
    'dedup_ratio',
  ],
]

/** Prometheus text of the node's store's gauges, or '' when it has none or it did not answer. */
export async function storeMetricsText(mesh: Mesh): Promise<string> {
  if (mesh.config['SVC_MODE'] === 'gateway') return ''
  const figures = await storeFigures(mesh, METRICS_GATHER_TIMEOUT_MS, 'replica-store')
  if (!figures.ok) return ''
  const registry = new Registry()
  for (const [name, help, figure] of GAUGES) {
    new Gauge({ name, help, registers: [registry] }).set(figures.value[figure])
  }
  return registry.metrics()
}
