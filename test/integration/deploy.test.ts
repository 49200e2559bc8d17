/** Goal: what deploy/ ships is valid and fits the node it deploys: the Prometheus configuration
 * and alert rules load, every alert fires and stays quiet where its tests say; the Grafana
 * dashboard parses, queries only metrics a node exposes, and counts each object once over the
 * nodes of a cluster as on a single node; the systemd unit verifies, its exposure stays at most 4
 * and an install step of deploy/README.md puts its Node.js in place; the Dockerfile passes a
 * linter and builds a non-root, production-only image on Node 24; the compose files are valid and
 * mount files that exist; the cluster's compose file and Kubernetes manifests give every member
 * the variables it needs, one pool naming the nodes as the others reach them, and health checks on
 * /health; the pods run under the default seccomp profile on a read-only root, spread over
 * machines, under disruption budgets, with a preStop delay inside their grace period, and with
 * node-to-node TLS files from a Secret. Method: the real tools (promtool,
 * systemd-analyze, dockerlinter, docker-compose; .ci/test-deps installs them, CI requires them) on
 * the files, a real scrape of a running node for the metric names, and the YAML read as data. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { startServer } from '../support/server.js'
import { metricNamesOf, ruleExpressions } from '../support/promql.js'
import { runTool, toolFound } from '../support/tools.js'
import {
  containerEnv,
  manifestOf,
  podOf,
  selects,
  yamlDocuments,
  type Container,
  type Manifest,
} from '../support/manifests.js'

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
/** Series only a cluster node (or a gateway) exports, which the single node scraped below does
 * not: cluster-membership.test.ts scrapes them from a cluster. */
const CLUSTER_METRICS = [
  'svc_cluster_nodes_alive',
  'svc_cluster_hints_pending',
  'svc_cluster_quorum_write_failures_total',
  'svc_cluster_quorum_read_failures_total',
  'svc_cluster_buckets',
  'svc_cluster_objects',
  'svc_cluster_stored_bytes',
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

/** Each store gauge of three cluster nodes of 24 objects (RF 3: each holds every object), and of
 * a single node of 24, as a promtool test's input series. */
const STORE_SERIES = ['buckets', 'objects', 'stored_bytes'].flatMap((figure) => [
  ...['n1', 'n2', 'n3'].flatMap((node) => [
    { series: `svc_${figure}{instance="${node}:9000", job="cluster"}`, values: '24x5' },
    { series: `svc_cluster_${figure}{instance="${node}:9000", job="cluster"}`, values: '24x5' },
  ]),
  { series: `svc_${figure}{instance="single:9000", job="single"}`, values: '24x5' },
])

test("the dashboard's storage figures count each object once, of a cluster or a node", () => {
  if (!toolFound('promtool')) return
  const panels = ['Buckets', 'Objects', 'Stored bytes'].map((title) => {
    const expr = dashboard.panels.find((p) => p.title === title)?.targets?.[0]?.expr
    assert.ok(expr !== undefined, title)
    return { title, expr }
  })
  const dir = mkdtempSync(join(tmpdir(), 'svc-dashboard-'))
  try {
    // Each panel's query as Grafana sends it, for the cluster's nodes and for the single node.
    const tests = ['cluster', 'single'].map((job) => ({
      interval: '1m',
      input_series: STORE_SERIES,
      promql_expr_test: panels.map(({ expr }) => ({
        expr: expr
          .replaceAll('$instance', `.*`)
          .replaceAll('{instance=~', `{job="${job}", instance=~`),
        eval_time: '2m',
        exp_samples: [{ labels: '{}', value: 24 }],
      })),
    }))
    writeFileSync(join(dir, 'rules.yml'), 'groups: []\n')
    writeFileSync(
      join(dir, 'test.yml'),
      JSON.stringify({ rule_files: ['rules.yml'], evaluation_interval: '1m', tests }),
    )
    const tested = runTool('promtool', ['test', 'rules', 'test.yml'], { cwd: dir })
    assert.is(tested.status, 0, tested.output)
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
    exposed.has(name) ||
    PENDING_METRICS.includes(name) ||
    CLUSTER_METRICS.includes(name) ||
    SCRAPE_SERIES.includes(name)
  const used = [...dashboardExpressions, ...alertExpressions].flatMap(metricNamesOf)
  assert.ok(used.includes('svc_http_requests_total'), 'the PromQL reader finds metric names')
  assert.equal([...new Set(used.filter((name) => !known(name)))], [])
})

test('the systemd unit verifies and its exposure is at most 4', () => {
  if (!toolFound('systemd-analyze')) return
  const unit = deploy('svc-object-store.service')
  const text = readFileSync(unit, 'utf8')
  const node = /^ExecStart=(\S+)/m.exec(text)?.[1] ?? ''
  // The binary the unit runs is one that an install step puts there.
  assert.ok(
    read('README.md').includes(` ${node}\n`),
    `no step of deploy/README.md installs ${node}`,
  )
  // verify wants the binary to exist: where it is not installed, a copy of the unit runs this node.
  const scratch = mkdtempSync(join(tmpdir(), 'svc-unit-'))
  const copy = join(scratch, 'svc-object-store.service')
  writeFileSync(
    copy,
    existsSync(node) ? text : text.replace(`ExecStart=${node}`, `ExecStart=${process.execPath}`),
  )
  const verified = runTool('systemd-analyze', ['verify', copy])
  rmSync(scratch, { recursive: true, force: true })
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

/** What a gateway must be given (CLUSTER-INTERFACE.md); a storage node also needs its pool and
 * data directory. SVC_ROOT_USERNAME has a default, the same on every member. */
const GATEWAY_VARIABLES = [
  'SVC_MODE',
  'SVC_CLUSTER_NAME',
  'SVC_CLUSTER_SECRET',
  'SVC_NODE_ID',
  'SVC_NODE_HTTP_ADDR',
  'SVC_NODE_GRPC_ADDR',
  'SVC_SEEDS',
  'SVC_ACCESS_KEY_ID',
  'SVC_SECRET_ACCESS_KEY',
  'SVC_ROOT_PASSWORD',
]
const NODE_VARIABLES = [...GATEWAY_VARIABLES, 'SVC_POOL_NAME', 'SVC_POOL_NODES', 'SVC_DATA_DIR']
const SHARED_VARIABLES = ['SVC_CLUSTER_NAME', 'SVC_CLUSTER_SECRET', 'SVC_ACCESS_KEY_ID']

const missing = (env: Map<string, string>, names: string[]): string[] =>
  names.filter((name) => (env.get(name) ?? '') === '')

/** `id:host:port` entries of SVC_POOL_NODES, and host:port entries of SVC_SEEDS. */
const poolEntries = (value: string): string[][] => value.split(',').map((entry) => entry.split(':'))
const listed = (value: string): string[] => value.split(',')

interface ComposeService {
  build?: { dockerfile?: string }
  environment?: Record<string, string>
  healthcheck?: { test?: string[] }
  volumes?: string[]
  ports?: string[]
  depends_on?: Record<string, { condition?: string }>
}

test('cluster compose file: one pool of 3 nodes on their own volumes, a gateway on 9000', () => {
  const [compose] = yamlDocuments(deploy('compose.cluster.yaml'))
  const services = (compose?.['services'] ?? {}) as Record<string, ComposeService>
  const envOf = (service: string): Map<string, string> =>
    new Map(Object.entries(services[service]?.environment ?? {}))
  const nodes = Object.keys(services).filter((name) => envOf(name).get('SVC_MODE') === 'cluster')
  const gateways = Object.keys(services).filter((name) => envOf(name).get('SVC_MODE') === 'gateway')
  assert.equal([nodes.length, gateways.length], [3, 1])
  const volumes = Object.keys((compose?.['volumes'] ?? {}) as object)
  const grpcOf = new Map(nodes.map((name) => [envOf(name).get('SVC_NODE_ID'), name]))
  for (const name of nodes) {
    const env = envOf(name)
    assert.equal(missing(env, NODE_VARIABLES), [], name)
    // The addresses the others reach it at: its service name on the compose network.
    assert.is(env.get('SVC_NODE_HTTP_ADDR')?.split(':')[0], name)
    assert.is(env.get('SVC_NODE_GRPC_ADDR')?.split(':')[0], name)
    const mounted = (services[name]?.volumes ?? []).map((volume) => volume.split(':'))
    assert.ok(
      mounted.some(([volume, path]) => volumes.includes(volume ?? '') && path === '/data'),
      `${name} has a named volume at /data`,
    )
    assert.is(env.get('SVC_DATA_DIR'), '/data')
    const pool = poolEntries(env.get('SVC_POOL_NODES') ?? '')
    assert.equal(pool.map(([id]) => grpcOf.get(id)).sort(), [...nodes].sort(), 'pool: every node')
    for (const [id, host, port] of pool) {
      const node = grpcOf.get(id) ?? ''
      assert.is(`${host}:${port}`, envOf(node).get('SVC_NODE_GRPC_ADDR'), `${id} in the pool`)
    }
    assert.equal(
      listed(env.get('SVC_SEEDS') ?? '').sort(),
      nodes.map((node) => envOf(node).get('SVC_NODE_GRPC_ADDR')).sort(),
    )
  }
  const mountedVolumes = nodes.map((name) => services[name]?.volumes?.[0]?.split(':')[0])
  assert.is(new Set(mountedVolumes).size, 3, 'a volume of its own for each node')
  const [gateway] = gateways
  const gatewayEnv = envOf(gateway ?? '')
  assert.equal(missing(gatewayEnv, GATEWAY_VARIABLES), [])
  assert.is(gatewayEnv.get('SVC_SEEDS'), envOf(nodes[0] ?? '').get('SVC_SEEDS'))
  assert.ok(services[gateway ?? '']?.ports?.includes('9000:9000'), 'the gateway publishes 9000')
  for (const name of [...nodes, ...gateways]) {
    assert.equal(services[name]?.healthcheck?.test, ['CMD', 'node', 'dist/runtime/healthcheck.js'])
    assert.is(services[name]?.build?.dockerfile, 'deploy/Dockerfile')
    for (const shared of SHARED_VARIABLES) {
      assert.is(envOf(name).get(shared), gatewayEnv.get(shared), `${shared} of ${name}`)
    }
  }
})

test('docker-compose takes the cluster file with the example secrets, not without them', () => {
  const compose = read('compose.cluster.yaml')
  const required = [...compose.matchAll(/\$\{(\w+):\?/g)].map((match) => match[1] ?? '')
  assert.ok(required.includes('SVC_CLUSTER_SECRET'), 'the cluster secret has no default')
  const example = read('cluster.env.example')
  for (const name of required) assert.match(example, new RegExp(`^${name}=\\S+$`, 'm'), name)
  if (!toolFound('docker-compose', ['version'])) return
  const file = deploy('compose.cluster.yaml')
  const unset = Object.fromEntries(required.map((name) => [name, '']))
  // Variables of the environment would win over the file's: these checks set none of them.
  const checked = runTool('docker-compose', [
    '-f',
    file,
    '--env-file',
    deploy('cluster.env.example'),
    'config',
    '-q',
  ])
  assert.is(checked.status, 0, checked.output)
  const refused = runTool('docker-compose', ['-f', file, 'config', '-q'], { env: unset })
  assert.is.not(refused.status, 0)
  assert.match(refused.output, 'SVC_')
})

const kubernetesDir = deploy('kubernetes')
const kubernetesFiles = readdirSync(kubernetesDir).filter((name) => name.endsWith('.yaml'))
const manifests = kubernetesFiles
  .filter((name) => name !== 'kustomization.yaml')
  .flatMap((name) => yamlDocuments(join(kubernetesDir, name)))

function httpPortOf(container: Container, port: number | string | undefined): number | undefined {
  return typeof port === 'number'
    ? port
    : container.ports?.find((candidate) => candidate.name === port)?.containerPort
}

/** Probes on /health at the port the member serves HTTP on, requests of CPU and memory, every
 * variable set; returns its variables. */
function checkMember(container: Container, variables: string[]): Map<string, string> {
  const env = containerEnv(container, manifests)
  assert.equal(missing(env, variables), [], container.name)
  assert.is(env.get('SVC_NODE_ID'), '<from metadata.name>')
  const httpPort = Number(env.get('SVC_NODE_HTTP_ADDR')?.split(':').at(-1))
  for (const probe of [container.readinessProbe, container.livenessProbe]) {
    assert.is(probe?.httpGet?.path, '/health', container.name)
    assert.is(httpPortOf(container, probe?.httpGet?.port), httpPort, container.name)
  }
  assert.ok(container.resources?.requests?.['cpu'], `${container.name} requests CPU`)
  assert.ok(container.resources?.requests?.['memory'], `${container.name} requests memory`)
  return env
}

test('the Kubernetes manifests parse, are all applied, and hold the kinds a cluster needs', () => {
  const [kustomization] = yamlDocuments(join(kubernetesDir, 'kustomization.yaml'))
  const resources = (kustomization?.['resources'] ?? []) as string[]
  assert.equal(
    [...resources].sort(),
    kubernetesFiles.filter((name) => name !== 'kustomization.yaml').sort(),
  )
  const kinds = manifests.map((manifest) => manifest.kind).sort()
  for (const kind of ['Deployment', 'Secret', 'Service', 'StatefulSet']) {
    assert.ok(kinds.includes(kind), kind)
  }
  assert.is(kinds.filter((kind) => kind === 'Service').length, 2)
})

test('Kubernetes: the StatefulSet behind its headless Service, the gateways behind theirs', () => {
  const nodes = manifestOf(manifests, 'StatefulSet')
  const headless = manifestOf(manifests, 'Service', nodes.spec?.['serviceName'] as string)
  assert.is(headless.spec?.['clusterIP'], 'None')
  assert.is(headless.spec?.['publishNotReadyAddresses'], true, 'names resolve while nodes join')
  assert.ok(selects(headless.spec?.['selector'] as Record<string, string>, podOf(nodes).labels))
  const gateways = manifestOf(manifests, 'Deployment')
  const front = manifests.find(
    (manifest) =>
      manifest.kind === 'Service' &&
      manifest !== headless &&
      selects(manifest.spec?.['selector'] as Record<string, string>, podOf(gateways).labels),
  )
  assert.ok(front !== undefined, 'a Service selects the gateways')
  assert.is.not(front.spec?.['clusterIP'], 'None')
  assert.not.ok(
    selects(front.spec?.['selector'] as Record<string, string>, podOf(nodes).labels),
    'the gateways Service does not select storage nodes',
  )
  const claims = (nodes.spec?.['volumeClaimTemplates'] ?? []) as Manifest[]
  const [node] = podOf(nodes).containers
  assert.ok(node !== undefined)
  const env = checkMember(node, NODE_VARIABLES)
  assert.is(env.get('SVC_MODE'), 'cluster')
  const mount = node.volumeMounts?.find((volume) => volume.name === claims[0]?.metadata?.name)
  assert.ok(mount !== undefined, 'the volumeClaimTemplate is mounted')
  assert.ok(env.get('SVC_DATA_DIR')?.startsWith(mount.mountPath), 'the data is on the volume')
  const [gateway] = podOf(gateways).containers
  assert.ok(gateway !== undefined)
  const gatewayEnv = checkMember(gateway, GATEWAY_VARIABLES)
  assert.is(gatewayEnv.get('SVC_MODE'), 'gateway')
  for (const shared of [...SHARED_VARIABLES, 'SVC_SEEDS']) {
    assert.is(gatewayEnv.get(shared), env.get(shared), shared)
  }
})

test("Kubernetes: the pool and the seeds are the StatefulSet's pods by their DNS names", () => {
  const nodes = manifestOf(manifests, 'StatefulSet')
  const name = nodes.metadata?.name ?? ''
  const service = nodes.spec?.['serviceName'] as string
  const replicas = nodes.spec?.['replicas'] as number
  const [node] = podOf(nodes).containers
  assert.ok(node !== undefined)
  const env = containerEnv(node, manifests)
  const grpcPort = Number(env.get('SVC_NODE_GRPC_ADDR')?.split(':').at(-1))
  assert.ok(node.ports?.some((port) => port.containerPort === grpcPort))
  const pods = Array.from({ length: replicas }, (_, ordinal) => `${name}-${ordinal}`)
  assert.equal(
    poolEntries(env.get('SVC_POOL_NODES') ?? ''),
    pods.map((pod) => [pod, `${pod}.${service}`, String(grpcPort)]),
  )
  assert.equal(
    listed(env.get('SVC_SEEDS') ?? ''),
    pods.map((pod) => `${pod}.${service}:${grpcPort}`),
  )
  assert.ok(replicas >= 3, 'three replicas of every object need three nodes')
})

/** A workload's pod spec as written, for the fields podOf leaves out. */
interface PodSpec {
  securityContext?: { seccompProfile?: { type?: string }; fsGroup?: number }
  topologySpreadConstraints?: {
    topologyKey?: string
    whenUnsatisfiable?: string
    labelSelector?: { matchLabels?: Record<string, string> }
  }[]
  terminationGracePeriodSeconds?: number
  volumes?: { name: string; secret?: { secretName?: string } }[]
  containers?: (Container & {
    securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean }
    lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds?: number } } }
  })[]
}

const podSpecOf = (workload: Manifest): PodSpec =>
  ((workload.spec?.['template'] as { spec?: PodSpec } | undefined)?.spec ?? {}) as PodSpec

test('Kubernetes: pods hardened, spread, budgeted, ending gently, on mutual TLS', () => {
  const budgets = manifests.filter((manifest) => manifest.kind === 'PodDisruptionBudget')
  for (const workload of [
    manifestOf(manifests, 'StatefulSet'),
    manifestOf(manifests, 'Deployment'),
  ]) {
    const name = workload.metadata?.name ?? ''
    const labels = podOf(workload).labels
    const pod = podSpecOf(workload)
    assert.is(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault', name)
    const spread = pod.topologySpreadConstraints?.find(
      (constraint) => constraint.topologyKey === 'kubernetes.io/hostname',
    )
    assert.ok(spread !== undefined, `${name}: spread over machines`)
    assert.ok(selects(spread.labelSelector?.matchLabels ?? {}, labels), `${name}: spreads itself`)
    assert.ok(
      budgets.some((budget) =>
        selects(
          (budget.spec?.['selector'] as { matchLabels?: Record<string, string> }).matchLabels ?? {},
          labels,
        ),
      ),
      `${name}: a PodDisruptionBudget`,
    )
    const [container] = pod.containers ?? []
    assert.ok(container !== undefined)
    assert.is(container.securityContext?.readOnlyRootFilesystem, true, name)
    const preStop = container.lifecycle?.preStop
    const delaySecs = Number(preStop?.exec?.command?.[1] ?? preStop?.sleep?.seconds)
    assert.ok(delaySecs > 0, `${name}: a preStop delay`)
    // The delay, then the node's drain of up to 30 s, within the grace period.
    assert.ok((pod.terminationGracePeriodSeconds ?? 30) >= delaySecs + 30, name)
    // Node-to-node TLS: the three files, from a mounted Secret, readable by the pod's group.
    const env = containerEnv(container, manifests)
    const files = ['SVC_GRPC_TLS_CERT', 'SVC_GRPC_TLS_KEY', 'SVC_GRPC_TLS_CA'].map(
      (variable) => env.get(variable) ?? '',
    )
    const mount = container.volumeMounts?.find((volume) =>
      files.every((file) => file.startsWith(`${volume.mountPath}/`)),
    )
    assert.ok(mount !== undefined, `${name}: the TLS files are on a mounted volume`)
    assert.is((mount as { readOnly?: boolean }).readOnly, true, name)
    const volume = pod.volumes?.find((candidate) => candidate.name === mount.name)
    assert.ok(volume?.secret?.secretName !== undefined, `${name}: the TLS files are a Secret`)
    assert.is(pod.securityContext?.fsGroup, 1000, name)
  }
})

test.run()
