/** @module The store's figures as gauges on /metrics: those of /api/stats (http/stats.ts), read at
 * scrape time with one call to the store's counters, bounded like each actor's answer to a scrape.
 * One store per node, so no `actor` label. When the store does not answer in time the scrape goes
 * on without them; `svc_actor_up` says which actor is missing. */
import { Gauge, Registry } from 'prom-client'
import type { Mesh } from '../protocol/actor.js'
import { storeFigures, type StoreFigures } from '../http/stats.js'
import { METRICS_GATHER_TIMEOUT_MS } from './knobs.js'

const GAUGES: readonly (readonly [name: string, help: string, figure: keyof StoreFigures])[] = [
  ['svc_buckets', 'Buckets stored', 'buckets_count'],
  ['svc_objects', 'Objects stored', 'objects_count'],
  [
    'svc_stored_bytes',
    'Sum of object sizes and of the parts of uploads in progress',
    'storage_used_bytes',
  ],
  ['svc_dedup_unique_blobs', 'Distinct blobs stored (content-addressed)', 'dedup_unique_blobs'],
  ['svc_dedup_references', 'References to stored blobs', 'dedup_total_references'],
  ['svc_dedup_ratio', 'References per distinct blob; 0 while no blob is stored', 'dedup_ratio'],
]

/** Prometheus text of the store's gauges, or '' when the store did not answer. */
export async function storeMetricsText(mesh: Mesh): Promise<string> {
  const figures = await storeFigures(mesh, METRICS_GATHER_TIMEOUT_MS)
  if (!figures.ok) return ''
  const registry = new Registry()
  for (const [name, help, figure] of GAUGES) {
    new Gauge({ name, help, registers: [registry] }).set(figures.value[figure])
  }
  return registry.metrics()
}
