/** @module The lifecycle actor's series (`svc_lifecycle_*`), from its `lifecycle.status` at each
 * scrape, on single and cluster nodes. An actor that does not answer (restarting, or none: a
 * gateway) shows 0 rather than no series, so dashboards and alerts have them from the start. */
import { Counter, Gauge, Registry } from 'prom-client'
import type { Mesh } from '../protocol/actor.js'
import type { LifecycleStatus } from '../protocol/lifecycle.js'

/** A scrape waits this long for the actor. */
const STATUS_TIMEOUT_MS = 1_000

type CountField = Exclude<
  keyof LifecycleStatus,
  | 'pass_in_progress'
  | 'pass_progress'
  | 'buckets_with_rules'
  | 'last_pass_ended_at'
  | 'next_pass_at'
>

const COUNTERS: readonly [string, string, CountField][] = [
  [
    'svc_lifecycle_passes_total',
    'Lifecycle passes completed over every bucket',
    'passes_completed',
  ],
  [
    'svc_lifecycle_objects_expired_total',
    'Current versions a lifecycle rule expired',
    'objects_expired',
  ],
  [
    'svc_lifecycle_versions_expired_total',
    'Noncurrent versions a lifecycle rule removed',
    'versions_expired',
  ],
  [
    'svc_lifecycle_delete_markers_removed_total',
    'Expired delete markers a lifecycle rule removed',
    'delete_markers_removed',
  ],
  [
    'svc_lifecycle_uploads_aborted_total',
    'Incomplete multipart uploads a lifecycle rule aborted',
    'uploads_aborted',
  ],
  [
    'svc_lifecycle_locked_skipped_total',
    'Versions a rule would remove that object lock kept',
    'locked_skipped',
  ],
  [
    'svc_lifecycle_errors_total',
    'Lifecycle steps that failed (each retried after a backoff)',
    'errors',
  ],
]

export async function lifecycleMetricsText(mesh: Mesh): Promise<string> {
  const registry = new Registry()
  const registers = [registry]
  const status = await mesh.call('lifecycle', {
    kind: 'lifecycle.status',
    requestId: 'metrics',
    deadlineMs: mesh.now() + STATUS_TIMEOUT_MS,
  })
  for (const [name, help, field] of COUNTERS) {
    new Counter({ name, help, registers }).inc(status.ok ? status.value[field] : 0)
  }
  new Gauge({
    name: 'svc_lifecycle_pass_progress',
    help: 'How far the lifecycle pass is over the buckets, 0 to 1 (1 between passes)',
    registers,
  }).set(status.ok ? status.value.pass_progress : 0)
  return registry.metrics()
}
