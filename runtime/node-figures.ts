/** @module What a node's actors are doing, from one gathering of their metrics (the console's
 * Actors page, `/admin/node/health`): each instance's liveness, restarts, mailbox depth, messages
 * handled and CPU, the actor table's links, and the HTTP totals of every ingress thread. Also each
 * thread's CPU as the supervisor counts it across restarts (ThreadCpu). */
import type { ActorFigures, ActorHealth, NodeFigures } from '../protocol/actor.js'
import type { MetricsJson } from './actor-metrics.js'
import type { GatheredMetrics } from './supervisor.js'

/** The CPU of one actor instance's threads: the current one's, as last seen, plus what each
 * earlier thread had used when last seen before it died, so the total never goes back. */
export class ThreadCpu {
  private carriedUs = 0
  private currentUs = 0

  /** The current thread's usage (user + system, microseconds since it started). */
  seen(us: number): void {
    this.currentUs = Math.max(this.currentUs, us)
  }

  /** The current thread ended: what it used is carried, and the next thread starts at zero. */
  ended(): void {
    this.carriedUs += this.currentUs
    this.currentUs = 0
  }

  get seconds(): number {
    return (this.carriedUs + this.currentUs) / 1e6
  }
}

/** The sum of a metric's samples per `actor` label, over every thread's metrics. */
function sumByActor(actors: readonly MetricsJson[], name: string): Map<string, number> {
  const sums = new Map<string, number>()
  for (const metrics of actors) {
    for (const metric of metrics) {
      if (metric.name !== name) continue
      for (const sample of metric.values) {
        const actor = String(sample.labels['actor'] ?? '')
        sums.set(actor, (sums.get(actor) ?? 0) + sample.value)
      }
    }
  }
  return sums
}

export function actorHealthOf(gathered: GatheredMetrics): Record<string, ActorHealth> {
  const depths = sumByActor(gathered.actors, 'svc_actor_mailbox_depth')
  const health: Record<string, ActorHealth> = {}
  for (const [actor, up] of Object.entries(gathered.up)) {
    health[actor] = {
      up,
      restarts: gathered.restarts[actor] ?? 0,
      mailbox_depth: depths.get(actor) ?? 0,
    }
  }
  return health
}

/** `replica-store` of `replica-store-2`: the roles of the actor table have no trailing number. */
function roleOf(instance: string, roles: ReadonlySet<string>): string {
  if (roles.has(instance)) return instance
  const role = instance.replace(/-\d+$/, '')
  return roles.has(role) ? role : instance
}

export function nodeFiguresOf(
  gathered: GatheredMetrics,
  links: readonly (readonly [string, string])[],
  roles: readonly string[],
): NodeFigures {
  const messages = sumByActor(gathered.actors, 'svc_actor_messages_total')
  const known = new Set(roles)
  const actors: Record<string, ActorFigures> = {}
  for (const [name, health] of Object.entries(actorHealthOf(gathered))) {
    actors[name] = {
      role: roleOf(name, known),
      ...health,
      messages_total: messages.get(name) ?? 0,
      cpu_seconds: gathered.cpuSeconds[name] ?? 0,
    }
  }
  const http = { requests: 0, errors: 0, client_errors: 0, seconds_sum: 0 }
  for (const metrics of gathered.actors) {
    for (const metric of metrics) {
      if (metric.name === 'svc_http_requests_total') {
        for (const sample of metric.values) {
          const status = Number(sample.labels['status'])
          http.requests += sample.value
          if (status >= 500) http.errors += sample.value
          else if (status >= 400) http.client_errors += sample.value
        }
      } else if (metric.name === 'svc_http_request_duration_seconds') {
        for (const sample of metric.values) {
          // A histogram's JSON names each sample's series (_bucket, _sum, _count).
          const series = (sample as { metricName?: string }).metricName
          if (series === 'svc_http_request_duration_seconds_sum') {
            http.seconds_sum += sample.value
          }
        }
      }
    }
  }
  return { actors, links: links.map(([from, to]) => [from, to]), http }
}
