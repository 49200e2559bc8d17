/** @module The scrubber's three counters of SPEC.md (`svc_cluster_blobs_scanned_total`,
 * `svc_cluster_corruptions_found_total`, `svc_cluster_corruptions_healed_total`), from its
 * `scrubber.status` at each scrape, on single nodes as on cluster nodes: the names say cluster,
 * but a single node scrubs and reports too. A scrubber that does not answer (restarting, or none:
 * a gateway) shows 0 rather than no series, so dashboards and alerts have them from the start. */
import { Counter, Registry } from 'prom-client'
import type { Mesh } from '../protocol/actor.js'
import type { ScrubberStatus } from '../protocol/scrubbing.js'

/** A scrape waits this long for the scrubber. */
const STATUS_TIMEOUT_MS = 1_000

const COUNTERS: readonly [string, string, keyof ScrubberStatus][] = [
  ['svc_cluster_blobs_scanned_total', 'Blobs whose CRC32 the scrubber checked', 'blobs_scanned'],
  [
    'svc_cluster_corruptions_found_total',
    'Blob copies the scrubber found corrupt',
    'corruptions_found',
  ],
  [
    'svc_cluster_corruptions_healed_total',
    'Corrupt blob copies replaced by a verified copy from another node',
    'corruptions_healed',
  ],
]

export async function scrubberMetricsText(mesh: Mesh): Promise<string> {
  const registry = new Registry()
  const registers = [registry]
  const status = await mesh.call('scrubber', {
    kind: 'scrubber.status',
    requestId: 'metrics',
    deadlineMs: mesh.now() + STATUS_TIMEOUT_MS,
  })
  for (const [name, help, field] of COUNTERS) {
    new Counter({ name, help, registers }).inc(status.ok ? status.value[field] : 0)
  }
  return registry.metrics()
}
