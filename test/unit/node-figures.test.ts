/** Goal: the Actors page's figures are right: an actor's CPU never goes back across a restart of
 * its thread, messages and mailbox depths are summed per instance over every thread's metrics,
 * an instance gets its role (`replica-store-2` is a `replica-store`), and the HTTP totals count
 * requests, 5xx and 4xx apart and sum durations from the histogram's `_sum` alone.
 * Method: the pure functions of runtime/node-figures.ts on a gathering written by hand in the
 * shape prom-client's JSON has. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { MetricsJson } from '../../runtime/actor-metrics.js'
import { nodeFiguresOf, ThreadCpu } from '../../runtime/node-figures.js'
import type { GatheredMetrics } from '../../runtime/supervisor.js'

test('the CPU of an actor adds its dead threads to the live one, and never goes back', () => {
  const cpu = new ThreadCpu()
  cpu.seen(2_000_000)
  cpu.seen(1_500_000) // a late answer seen after a newer one
  assert.is(cpu.seconds, 2)
  cpu.ended()
  assert.is(cpu.seconds, 2)
  cpu.seen(500_000)
  assert.is(cpu.seconds, 2.5)
})

type Values = { labels: Record<string, string | number>; value: number; metricName?: string }[]

/** One metric as prom-client's getMetricsAsJSON gives it. */
function metric(name: string, values: Values): MetricsJson[number] {
  return {
    name,
    help: '',
    type: 'counter',
    aggregator: 'sum',
    values,
  } as unknown as MetricsJson[number]
}

test('figures per instance, with roles, links and the HTTP totals', () => {
  const store2: MetricsJson = [
    metric('svc_actor_messages_total', [
      { labels: { actor: 'replica-store-2', kind: 'object.put' }, value: 7 },
      { labels: { actor: 'replica-store-2', kind: 'object.get' }, value: 5 },
    ]),
    metric('svc_actor_mailbox_depth', [{ labels: { actor: 'replica-store-2' }, value: 3 }]),
  ]
  const ingress: MetricsJson = [
    metric('svc_http_requests_total', [
      { labels: { actor: 'http-ingress', status: '200' }, value: 10 },
      { labels: { actor: 'http-ingress', status: '404' }, value: 2 },
      { labels: { actor: 'http-ingress', status: '503' }, value: 1 },
    ]),
    metric('svc_http_request_duration_seconds', [
      { labels: { le: 0.1 }, value: 13, metricName: 'svc_http_request_duration_seconds_bucket' },
      { labels: {}, value: 0.75, metricName: 'svc_http_request_duration_seconds_sum' },
      { labels: {}, value: 13, metricName: 'svc_http_request_duration_seconds_count' },
    ]),
  ]
  const gathered: GatheredMetrics = {
    actors: [store2, ingress],
    node: '',
    up: { 'replica-store-2': true, 'http-ingress': true, iam: false },
    restarts: { 'replica-store-2': 1, 'http-ingress': 0, iam: 2 },
    cpuSeconds: { 'replica-store-2': 1.25, 'http-ingress': 0.5, iam: 0.1 },
  }
  const links = [['http-ingress', 'replica-store'] as const]
  const figures = nodeFiguresOf(gathered, links, ['http-ingress', 'replica-store', 'iam'])
  assert.equal(figures.actors['replica-store-2'], {
    role: 'replica-store',
    up: true,
    restarts: 1,
    mailbox_depth: 3,
    messages_total: 12,
    cpu_seconds: 1.25,
  })
  assert.equal(figures.actors['iam'], {
    role: 'iam',
    up: false,
    restarts: 2,
    mailbox_depth: 0,
    messages_total: 0,
    cpu_seconds: 0.1,
  })
  assert.equal(figures.links, [['http-ingress', 'replica-store']])
  assert.equal(figures.http, { requests: 13, errors: 1, client_errors: 2, seconds_sum: 0.75 })
})

test.run()
