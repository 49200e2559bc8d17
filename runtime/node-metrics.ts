/** @module The node's own metrics, kept on the main thread and served once per node without an
 * `actor` label: the process-wide part of Node's default metrics (runtime/default-metrics.ts) and
 * `svc_build_info{version,mode}` 1, the version of package.json and the node's configured mode. */
import { Gauge, Registry } from 'prom-client'
import { collectProcessMetrics } from './default-metrics.js'
import { version } from './usage.js'

export class NodeMetrics {
  private readonly registry = new Registry()

  constructor(mode: string) {
    collectProcessMetrics(this.registry)
    const build = new Gauge({
      name: 'svc_build_info',
      help: 'The running build: its version and the node mode; always 1',
      labelNames: ['version', 'mode'],
      registers: [this.registry],
    })
    build.set({ version: version(), mode }, 1)
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }
}
