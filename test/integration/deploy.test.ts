/** Goal: what deploy/ ships is valid and fits the node it deploys: the Prometheus configuration
 * and alert rules load, every alert fires and stays quiet where its tests say; the Grafana
 * dashboard parses and queries only metrics the node exposes; the systemd unit verifies and its
 * exposure stays at most 4; the Dockerfile passes a linter and builds a non-root, production-only
 * image on Node 24; the compose file is valid and mounts files that exist. Method: the real tools
 * (promtool, systemd-analyze, dockerlinter, docker-compose; .ci/test-deps installs them, CI
 * requires them) on the files, and a real scrape of a running node for the metric names. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { startServer } from '../support/server.js'
import { metricNamesOf, ruleExpressions } from '../support/promql.js'
import { runTool, toolFound } from '../support/tools.js'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const deploy = (...path: string[]): string => join(root, 'deploy', ...path)
const read = (...path: string[]): string => readFileSync(deploy(...path), 'utf8')

/** Metrics being added beside this change (store and data volume gauges, build info): the
 * dashboard and alerts may use them before a scrape shows them. */
const PENDING_METRICS = [
  'svc_buckets',
  'svc_objects',
  'svc_stored_bytes',
  'svc_dedup_unique_blobs',
  'svc_dedup_references',
  'svc_dedup_ratio',
  'svc_build_info',
  'svc_data_volume_size_bytes',
  'svc_data_volume_free_bytes',
  'svc_data_volume_full',
]
/** Series Prometheus makes itself for every target. */
const SCRAPE_SERIES = ['up']

interface Panel {
  type: string
  title: string
  targets?: { expr: string }[]
}

const dashboard = JSON.parse(read('grafana', 'dashboards', 'svc-object-store.json')) as {
  uid: string
  panels: Panel[]
}
const dashboardExpressions = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr))
const alertExpressions = ruleExpressions(read('prometheus', 'alerts.yml'))

test('promtool accepts the Prometheus configuration and its alert rules', () => {
  if (!toolFound('promtool')) return
  const rules = runTool('promtool', ['check', 'rules', deploy('prometheus', 'alerts.yml')])
  assert.is(rules.status, 0, rules.output)
  // The rule reader below must see every rule promtool sees.
  assert.match(rules.output, `SUCCESS: ${alertExpressions.length} rules found`)
  const config = runTool('promtool', ['check', 'config', deploy('prometheus', 'prometheus.yml')])
  assert.is(config.status, 0, config.output)
})

test('every alert fires on its series and stays quiet on the others (promtool test rules)', () => {
  if (!toolFound('promtool')) return
  const tested = runTool('promtool', ['test', 'rules', 'alerts.test.yml'], {
    cwd: deploy('prometheus'),
  })
  assert.is(tested.status, 0, tested.output)
  const alerts = [...read('prometheus', 'alerts.yml').matchAll(/- alert: (\w+)/g)].map((m) => m[1])
  const testedAlerts = read('prometheus', 'alerts.test.yml')
  for (const alert of alerts) assert.match(testedAlerts, `alertname: ${alert}\n`, alert)
})

test('the dashboard covers requests, actors and storage, in PromQL that promtool parses', () => {
  const titles = dashboard.panels.map((p) => p.title)
  for (const title of [
    'Request rate by operation',
    'Errors by operation',
    'Latency p99 by operation',
    'Actor up',
    'Restarts',
    'Mailbox depth',
    'Stored bytes',
    'Data volume',
  ]) {
    assert.ok(titles.includes(title), title)
  }
  if (!toolFound('promtool')) return
  // Each query as a recording rule, Grafana's variables given values, for promtool to parse.
  const rules = dashboardExpressions.map((expr, at) => {
    const plain = expr.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*')
    return `      - record: dashboard:query_${at}\n        expr: ${JSON.stringify(plain)}\n`
  })
  const dir = mkdtempSync(join(tmpdir(), 'svc-dashboard-'))
  try {
    const file = join(dir, 'queries.yml')
    writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('')}`)
    const checked = runTool('promtool', ['check', 'rules', file])
    assert.is(checked.status, 0, checked.output)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the dashboard and the alerts query only metrics the node exposes', async () => {
  const server = await startServer()
  const s3 = server.client()
  let text: string
  try {
    // Labelled HTTP series appear once counted: requests, with bodies both ways for the bytes.
    await s3.send(new CreateBucketCommand({ Bucket: 'scraped' }))
    await s3.send(new PutObjectCommand({ Bucket: 'scraped', Key: 'k', Body: 'x' }))
    const got = await s3.send(new GetObjectCommand({ Bucket: 'scraped', Key: 'k' }))
    await got.Body?.transformToString()
    text = await (await fetch(`${server.url}/metrics`)).text()
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
  const exposed = new Set(
    text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line)?.[0]),
  )
  const known = (name: string): boolean =>
    exposed.has(name) || PENDING_METRICS.includes(name) || SCRAPE_SERIES.includes(name)
  const used = [...dashboardExpressions, ...alertExpressions].flatMap(metricNamesOf)
  assert.ok(used.includes('svc_http_requests_total'), 'the PromQL reader finds metric names')
  assert.equal([...new Set(used.filter((name) => !known(name)))], [])
})

test('the systemd unit verifies and its exposure is at most 4', () => {
  if (!toolFound('systemd-analyze')) return
  const unit = deploy('svc-object-store.service')
  const verified = runTool('systemd-analyze', ['verify', unit])
  assert.is(verified.status, 0, verified.output)
  assert.is(verified.output.trim(), '', 'systemd-analyze verify has nothing to report')
  // --offline reads the unit file itself (systemd 250 and later), no running systemd needed.
  const security = runTool('systemd-analyze', ['security', '--offline=true', unit])
  if (/unrecognized option/.test(security.output)) {
    console.log('systemd-analyze before 250 has no --offline: exposure not checked')
    return
  }
  const exposure = /Overall exposure level for [^:]+: ([\d.]+)/.exec(security.output)
  assert.ok(exposure !== null, security.output)
  assert.ok(Number(exposure[1]) <= 4, `exposure ${exposure[1]}`)
})

test('the Dockerfile passes the linter with nothing to report', () => {
  if (!toolFound('dockerlinter')) return
  // dockerlinter writes each RUN line to a scratch file in its working directory for shellcheck.
  const dir = mkdtempSync(join(tmpdir(), 'svc-dockerlinter-'))
  try {
    const linted = runTool('dockerlinter', ['-f', deploy('Dockerfile'), '-e', 'info'], { cwd: dir })
    assert.is(linted.status, 0, linted.output)
    assert.is(linted.output.trim(), '', 'the linter has nothing to report')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the image runs as non-root on Node 24 with production dependencies only', () => {
  const dockerfile = read('Dockerfile')
  const stages = dockerfile.split(/^(?=FROM )/m).filter((s) => s.startsWith('FROM '))
  for (const stage of stages) assert.match(stage, /^FROM node:24-bookworm-slim\b/)
  const image = stages.at(-1) ?? ''
  const user = /^USER (\S+)/m.exec(image)?.[1] ?? 'root'
  assert.ok(!/^(root|0)(:|$)/.test(user), `USER ${user}`)
  // The node_modules the image gets come from a stage that installed without dev dependencies.
  const from = /^COPY --from=(\S+) \/app\/node_modules node_modules$/m.exec(image)?.[1]
  const source = stages.find((s) => s.startsWith(`FROM node:24-bookworm-slim AS ${from}\n`))
  assert.match(source ?? '', /^RUN npm ci --omit=dev\b/m)
  assert.not.match(image, /COPY --from=\S+ \/app\/dist (?!\S)/, 'the tests stay out of the image')
  // The data volume exists, owned by that user, before VOLUME declares it.
  assert.match(image, new RegExp(`chown ${user} /data[^]*VOLUME /data`))
  assert.match(image, /^HEALTHCHECK [^]*CMD \["node", "dist\/runtime\/healthcheck.js"\]/m)
  assert.ok(existsSync(join(root, 'runtime', 'healthcheck.ts')))
})

test('the compose file is valid and mounts files that exist', () => {
  const compose = read('compose.yaml')
  for (const match of compose.matchAll(/- \.\/(\S+):\/\S+/g)) {
    assert.ok(existsSync(deploy(match[1] ?? '')), `mounted ${match[1]}`)
  }
  if (!toolFound('docker-compose', ['version'])) return
  const checked = runTool('docker-compose', ['-f', deploy('compose.yaml'), 'config', '-q'], {
    env: { GRAFANA_ADMIN_PASSWORD: 'checked-only' },
  })
  assert.is(checked.status, 0, checked.output)
})

test.run()
