/** @module prom-client's default metrics, split by what they measure. The process-wide ones
 * (resident and virtual memory, data segment, CPU seconds, descriptors, start time, Node's version)
 * read the same figure from whichever thread collects them: collected in every actor thread, a sum
 * over actors counted the process once per thread. The main thread alone reports them, once per
 * node (runtime/node-metrics.ts). The per-thread ones (V8 heap and its spaces, external memory,
 * event loop lag, GC, active handles, requests and resources) measure the isolate or event loop of
 * the thread that collects them, so each actor reports its own with its `actor` label. */
import { collectDefaultMetrics, type Registry } from 'prom-client'

export const PROCESS_WIDE_METRICS: ReadonlySet<string> = new Set([
  'process_cpu_user_seconds_total',
  'process_cpu_system_seconds_total',
  'process_cpu_seconds_total',
  'process_start_time_seconds',
  'process_resident_memory_bytes',
  'process_virtual_memory_bytes',
  'process_heap_bytes',
  'process_open_fds',
  'process_max_fds',
  'nodejs_version_info',
])

/** Gauges of the default set named like counters, which promtool reports ("non-counter metrics
 * should not have _total suffix"). Each is the sum of a gauge by type that stays
 * (nodejs_active_handles{type}, and likewise for requests and resources). */
const MISNAMED_DEFAULT_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]

/** The per-thread part of the default set, for an actor thread's registry. */
export function collectThreadMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry })
  for (const name of [...PROCESS_WIDE_METRICS, ...MISNAMED_DEFAULT_GAUGES]) {
    registry.removeSingleMetric(name)
  }
}

/** The process-wide part of the default set, for the main thread's registry. The per-thread
 * metrics it drops keep their event loop monitor and GC observer, which cost nothing measurable. */
export function collectProcessMetrics(registry: Registry): void {
  const before = new Set(registry.getMetricsAsArray().map((metric) => metric.name))
  collectDefaultMetrics({ register: registry })
  for (const { name } of registry.getMetricsAsArray()) {
    if (!before.has(name) && !PROCESS_WIDE_METRICS.has(name)) registry.removeSingleMetric(name)
  }
}
