/** @module Per-actor metrics: each actor thread keeps its own prom-client registry (mailbox depth,
 * messages handled, handling time, rejections, and the per-thread part of Node's default metrics,
 * runtime/default-metrics.ts); the ingress gathers them over the supervisor. What leaves here must
 * pass `promtool check metrics`. */
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  type MetricObjectWithValues,
  type MetricValue,
} from 'prom-client'
import { collectThreadMetrics } from './default-metrics.js'

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[]

export class ActorMetrics {
  readonly registry = new Registry()
  readonly depth: Gauge
  readonly handled: Counter<'kind'>
  readonly rejected: Counter
  readonly expired: Counter
  readonly duration: Histogram<'kind'>
  /** Registries of the actor's own (the ingress's HTTP metrics), served with these. Without the
   * `actor` label, so that the instances of a role add up. */
  private readonly included: Registry[] = []

  constructor(actor: string) {
    this.registry.setDefaultLabels({ actor })
    // Node's own metrics per thread: heap and external memory are per isolate, so each actor's
    // line shows what that thread holds.
    collectThreadMetrics(this.registry)
    const registers = [this.registry]
    this.depth = new Gauge({
      name: 'svc_actor_mailbox_depth',
      help: 'Requests the actor is handling now',
      registers,
    })
    this.handled = new Counter({
      name: 'svc_actor_messages_total',
      help: 'Requests handled by the actor',
      labelNames: ['kind'],
      registers,
    })
    this.rejected = new Counter({
      name: 'svc_actor_mailbox_rejections_total',
      help: 'Requests answered busy because the mailbox was full',
      registers,
    })
    this.expired = new Counter({
      name: 'svc_actor_expired_total',
      help: 'Requests dropped because they arrived after their deadline',
      registers,
    })
    this.duration = new Histogram({
      name: 'svc_actor_message_duration_seconds',
      help: 'Time to handle one request',
      labelNames: ['kind'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    })
  }

  include(registry: Registry): void {
    this.included.push(registry)
  }

  async json(): Promise<MetricsJson> {
    const own = (await this.registry.getMetricsAsJSON()) as MetricsJson
    const included = await Promise.all(this.included.map((r) => r.getMetricsAsJSON()))
    return [...own, ...included.flat()] as MetricsJson
  }
}
