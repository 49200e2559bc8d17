/** Goal: cluster mode's membership and administration, from outside. Three storage nodes and a
 * gateway find each other through their seeds; every node and the gateway show the same topology
 * (JSON of CLUSTER-INTERFACE.md) to a SuperUser, signed or with a token issued by another node;
 * /metrics has the seven svc_cluster_* series and the node-to-node bytes sent; a node's store
 * gauges are its own, the cluster's figures (each object once) are svc_cluster_objects and its
 * siblings, and a gateway exports neither, nor data volume gauges. A node killed
 * with SIGKILL is seen Dead by the others (the issue asks within 15 s), one stopped with SIGTERM
 * Left (within 5 s), a restarted one Alive again (within 15 s): once each, end to end, while the
 * gossiper's timings case by case (a partition that heals, a false suspicion refuted, a stop) are
 * checked on virtual time in test/unit/gossiper.test.ts, and the chaos partition route by the
 * cluster suites that cut a node off with it (hints, anti-entropy, convergence). A node stopped
 * with SIGTERM under four clients that retry as S3 clients do (through the gateway) fails none of
 * their requests, and exits 0.
 * Method: real nodes as child processes on 127.0.0.1 (test/support/cluster.ts), polled with bounds
 * above the times so that a loaded machine does not fail them; the measured times are
 * printed. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { login } from '../support/admin-client.js'
import {
  closeBrowser,
  findChromium,
  launchBrowser,
  signedIn,
  skipWithoutChromium,
} from '../support/console-browser.js'
import { ROOT_PASSWORD, ROOT_USERNAME, startCluster, type TestCluster } from '../support/cluster.js'
import { sample, seriesLines } from '../support/metrics-text.js'
import { keyShard } from '../../protocol/key-shard.js'
import { signedRequest } from '../support/signed-request.js'
import { ACCESS_KEY, SECRET_KEY, type TestServer } from '../support/server.js'
import type { ActorFigures } from '../../protocol/actor.js'
import { pollUntil, sleep } from '../support/wait.js'

/** Bounds of the polls: twice what the issue asks, so that only a real failure fails. */
const DEAD_WAIT_MS = 30_000
const LEFT_WAIT_MS = 10_000
const ALIVE_WAIT_MS = 30_000
/** Lines of a node's log a failure quotes. */
const LOG_LINES = 40
/** The load under a stop: clients at once, and each one's operations at most. */
const LOAD_CLIENTS = 4
const LOAD_OPS_PER_CLIENT_MAX = 400

function md5(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

interface Topology {
  cluster: string
  pools: {
    name: string
    replication_factor: number
    write_quorum: number
    read_quorum: number
    nodes: {
      id: string
      status: string
      http_addr: string
      grpc_addr: string
      free_bytes: number
    }[]
  }[]
  gateways: { id: string; status: string; http_addr: string }[]
}

let cluster: TestCluster
const N3_COORDINATORS = 2

async function adminJson<T>(server: TestServer, method: string, path: string): Promise<T> {
  const answer = await signedRequest(server.url, { method, path })
  assert.is(answer.status, 200, `${method} ${path}: ${answer.body.toString()}`)
  return JSON.parse(answer.body.toString()) as T
}

async function statusSeen(from: TestServer, id: string): Promise<string | undefined> {
  const topology = await adminJson<Topology>(from, 'GET', '/admin/cluster/topology')
  const nodes = topology.pools.flatMap((pool) => pool.nodes)
  return [...nodes, ...topology.gateways].find((member) => member.id === id)?.status
}

/** Polls until every `observers` sees `id` in `status`; answers the time it took, or fails. */
async function waitStatus(
  observers: string[],
  id: string,
  status: string,
  boundMs: number,
): Promise<number> {
  const startedMs = Date.now()
  const seen = async () => {
    const statuses = await Promise.all(observers.map((o) => statusSeen(cluster.server(o), id)))
    return statuses.every((got) => got === status)
  }
  assert.ok(await pollUntil(seen, boundMs, 100), `${id} not ${status} at ${observers.join(', ')}`)
  return Date.now() - startedMs
}

test.before(async () => {
  cluster = await startCluster({
    nodes: 3,
    gateways: 1,
    env: { SVC_CHAOS: '1' },
    // n3 coordinates with two threads, each taking the keys that hash to it.
    envOf: { n3: { SVC_COORDINATORS: String(N3_COORDINATORS) } },
  })
})

test.after(async () => {
  // Undefined when the cluster did not start: the before hook's error says why.
  await (cluster as TestCluster | undefined)?.destroy()
})

test('every node and the gateway show the same topology, all Alive', async () => {
  for (const id of ['n1', 'n2', 'n3', 'g1']) {
    await waitStatus([id], 'g1', 'Alive', ALIVE_WAIT_MS)
    for (const node of ['n1', 'n2', 'n3']) await waitStatus([id], node, 'Alive', ALIVE_WAIT_MS)
    const topology = await adminJson<Topology>(cluster.server(id), 'GET', '/admin/cluster/topology')
    assert.is(topology.cluster, cluster.name)
    assert.is(topology.pools.length, 1)
    const pool = topology.pools[0]
    assert.equal(
      [pool?.name, pool?.replication_factor, pool?.write_quorum, pool?.read_quorum],
      ['p1', 3, 2, 2],
    )
    const nodes = pool?.nodes ?? []
    assert.equal(nodes.map((node) => node.id).sort(), ['n1', 'n2', 'n3'])
    for (const node of nodes) {
      const member = cluster.nodes.find((candidate) => candidate.id === node.id)
      assert.is(node.grpc_addr, `127.0.0.1:${member?.grpcPort}`)
      assert.is(node.http_addr, `127.0.0.1:${member?.httpPort}`)
    }
    assert.equal(
      topology.gateways.map((gateway) => gateway.id),
      ['g1'],
    )
  }
  // Free space travels by gossip, a report every 10 s: each node learns every node's.
  const everyFree = async () => {
    const topology = await adminJson<Topology>(
      cluster.server('n1'),
      'GET',
      '/admin/cluster/topology',
    )
    return topology.pools[0]?.nodes.every((node) => node.free_bytes > 0) === true
  }
  assert.ok(await pollUntil(everyFree, ALIVE_WAIT_MS, 200), 'free bytes not gossiped')
})

/** A node's health carries its figures: every actor's role and numbers, the actor table's links
 * between roles, and the HTTP totals. */
function assertFigures(health: {
  actors: Record<string, ActorFigures>
  links: [string, string][]
  http: Record<string, number>
}): void {
  assert.ok(health.links.length > 0, 'no links')
  for (const link of health.links) assert.ok(link.length === 2 && !link.includes(''), `${link}`)
  for (const [name, actor] of Object.entries(health.actors)) {
    assert.ok(actor.role !== '' && name.startsWith(actor.role), `${name}: role ${actor.role}`)
    for (const figure of [actor.restarts, actor.mailbox_depth, actor.messages_total]) {
      assert.ok(Number.isInteger(figure) && figure >= 0, `${name}: ${figure}`)
    }
    assert.ok(actor.cpu_seconds > 0, `${name}: CPU ${actor.cpu_seconds}`)
  }
  const { requests = -1, errors = -1, client_errors = -1, seconds_sum = -1 } = health.http
  assert.ok(errors >= 0 && client_errors >= 0 && errors + client_errors <= requests, 'http')
  assert.ok(seconds_sum >= 0, `seconds ${seconds_sum}`)
}

test('cluster health, node health and the cluster metrics', async () => {
  const health = await adminJson<{
    status: string
    nodes: Record<string, number>
    hints_pending: number
    max_clock_skew_ms: number
  }>(cluster.server('n2'), 'GET', '/admin/cluster/health')
  assert.is(health.status, 'healthy')
  assert.equal(health.nodes, { alive: 3, suspect: 0, dead: 0, left: 0 })
  assert.is(health.hints_pending, 0)
  assert.ok(health.max_clock_skew_ms < 500, `skew ${health.max_clock_skew_ms}`)
  const node = await adminJson<{
    id: string
    mode: string
    phase: string
    actors: Record<string, ActorFigures>
    links: [string, string][]
    http: Record<string, number>
  }>(cluster.server('n1'), 'GET', '/admin/node/health')
  assert.equal([node.id, node.mode, node.phase], ['n1', 'cluster', 'serving'])
  assertFigures(node)
  for (const actor of [
    'replica-store',
    'coordinator',
    'iam',
    'gossiper',
    'scrubber',
    'grpc-ingress',
    'hint-queue',
  ]) {
    assert.is(node.actors[actor]?.up, true, actor)
  }
  const gateway = await adminJson<{
    id: string
    mode: string
    actors: Record<string, ActorFigures>
    links: [string, string][]
    http: Record<string, number>
  }>(cluster.server('g1'), 'GET', '/admin/node/health')
  assert.equal([gateway.id, gateway.mode], ['g1', 'gateway'])
  assertFigures(gateway)
  const metrics = await (await fetch(`${cluster.server('n3').url}/metrics`)).text()
  assert.is(sample(metrics, 'svc_cluster_nodes_alive'), 3)
  for (const name of [
    'svc_cluster_quorum_writes_total',
    'svc_cluster_quorum_reads_total',
    'svc_cluster_hints_pending',
    'svc_cluster_blobs_scanned_total',
    'svc_cluster_corruptions_found_total',
    'svc_cluster_corruptions_healed_total',
  ]) {
    assert.is(sample(metrics, name), 0, name)
  }
  assert.is(sample(metrics, 'svc_actor_up', 'actor="gossiper"'), 1)
  // Gossip has pinged the others by now: the threads' node-to-node bytes come summed, unlabelled.
  const pings = sample(metrics, 'svc_cluster_peer_bytes_sent_total', 'method="Membership.Ping"')
  assert.ok(pings !== undefined && pings > 0, `Membership.Ping bytes ${pings}`)
  assert.is(sample(metrics, 'svc_actor_up', 'actor="grpc-ingress"'), 1)
})

test('a node exports its store and cluster gauges; a gateway neither, nor disk', async () => {
  const s3 = cluster.server('n1').client()
  const sizes = [10, 20, 300_000]
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'counted' }))
    for (const [index, size] of sizes.entries()) {
      const Body = randomBytes(size)
      await s3.send(new PutObjectCommand({ Bucket: 'counted', Key: `k${index}`, Body }))
    }
  } finally {
    s3.destroy()
  }
  const stats = async (id: string) =>
    (await (await fetch(`${cluster.server(id).url}/api/stats`)).json()) as Record<string, number>
  const scrape = async (id: string) => (await fetch(`${cluster.server(id).url}/metrics`)).text()
  // /api/stats is the cluster's, each object once; the third replica's write may still land.
  const total = await stats('n1')
  const bytes = sizes.reduce((sum, size) => sum + size, 0)
  assert.ok(total['objects_count'] !== undefined && total['objects_count'] >= sizes.length)
  const settled = async () => {
    const texts = await Promise.all(['n1', 'n2', 'n3'].map(scrape))
    return texts.every(
      (text) =>
        sample(text, 'svc_cluster_objects') === total['objects_count'] &&
        sample(text, 'svc_objects') === total['objects_count'],
    )
  }
  assert.ok(await pollUntil(settled, ALIVE_WAIT_MS, 200), 'the gauges did not settle')
  for (const id of ['n1', 'n2', 'n3']) {
    const text = await scrape(id)
    // Three nodes and three replicas: each node holds every object, counted as its own.
    assert.is(sample(text, 'svc_cluster_stored_bytes'), total['storage_used_bytes'], id)
    assert.is(sample(text, 'svc_stored_bytes'), total['storage_used_bytes'], id)
    assert.is(sample(text, 'svc_cluster_buckets'), total['buckets_count'], id)
    assert.ok((sample(text, 'svc_data_volume_size_bytes') ?? 0) > 0, id)
    assert.is(sample(text, 'svc_cluster_quorum_write_failures_total'), 0, id)
    assert.is(sample(text, 'svc_cluster_quorum_read_failures_total'), 0, id)
  }
  assert.ok((total['storage_used_bytes'] ?? 0) >= bytes)
  await assertCoordinatorsShareKeys()
  // The gateway has no data directory and no store: it says nothing of either.
  const gateway = await scrape('g1')
  assert.is(sample(gateway, 'svc_cluster_nodes_alive'), 3)
  for (const name of [
    'svc_data_volume_size_bytes',
    'svc_data_volume_free_bytes',
    'svc_data_volume_full',
    'svc_objects',
    'svc_stored_bytes',
    'svc_cluster_objects',
  ]) {
    assert.is(sample(gateway, name), undefined, `the gateway exports ${name}`)
  }
})

/** PUTs through n3, whose two coordinator threads each take the keys of their hash: each handles
 * its own, and the node's quorum counters add both up. */
async function assertCoordinatorsShareKeys(): Promise<void> {
  const node = cluster.server('n3')
  const before = sample(await (await fetch(`${node.url}/metrics`)).text(), QUORUM_WRITES) ?? 0
  const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((letter) => `through-n3-${letter}`)
  const owners = new Set(keys.map((key) => keyShard('counted', key, N3_COORDINATORS)))
  assert.is(owners.size, N3_COORDINATORS, 'the keys hash to both coordinators')
  const s3 = node.client()
  try {
    for (const Key of keys) {
      await s3.send(new PutObjectCommand({ Bucket: 'counted', Key, Body: randomBytes(64) }))
    }
  } finally {
    s3.destroy()
  }
  const text = await (await fetch(`${node.url}/metrics`)).text()
  assert.is((sample(text, QUORUM_WRITES) ?? 0) - before, keys.length)
  for (let n = 1; n <= N3_COORDINATORS; n++) {
    const puts = seriesLines(text, 'svc_actor_messages_total').filter(
      (line) => line.includes(`actor="coordinator-${n}"`) && line.includes('kind="object.put"'),
    )
    const handled = puts.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' '))), 0)
    assert.ok(handled > 0, `coordinator-${n} handled no PUT`)
  }
}

const QUORUM_WRITES = 'svc_cluster_quorum_writes_total'

test('an admin token issued by one node is valid on the others and the gateway', async () => {
  const token = await login(cluster.server('n1'), ROOT_USERNAME, ROOT_PASSWORD)
  for (const id of ['n2', 'n3', 'g1']) {
    const answer = await fetch(`${cluster.server(id).url}/admin/cluster/health`, {
      headers: { authorization: `Bearer ${token}` },
    })
    assert.is(answer.status, 200, id)
  }
  const anonymous = await fetch(`${cluster.server('n2').url}/admin/cluster/topology`)
  assert.ok(anonymous.status === 401 || anonymous.status === 403, `${anonymous.status}`)
})

test('the web console of a node shows every member and every actor of the cluster', async () => {
  const executablePath = findChromium()
  if (executablePath === undefined) {
    skipWithoutChromium()
    return
  }
  const browser = await launchBrowser(executablePath)
  try {
    const origin = cluster.server('n1').url
    const user = await signedIn(browser, origin, ROOT_USERNAME, ROOT_PASSWORD)
    const { page } = user
    await page.getByRole('link', { name: 'Cluster', exact: true }).click()
    for (const id of ['n1', 'n2', 'n3', 'g1']) {
      await page.locator(`tr[data-node="${id}"]`).getByText('Alive').waitFor()
    }
    await page.locator('[data-repair="hints"]').waitFor()
    await page.locator('[data-repair="lifecycle"]').getByText('passes completed').waitFor()
    await page.getByRole('link', { name: 'Actors', exact: true }).click()
    // Every member's actors, each asked of that member by the node serving the page.
    for (const id of ['n1', 'n2', 'n3', 'g1']) {
      await page.locator(`section[data-node="${id}"] tr[data-actor="gossiper"]`).waitFor()
    }
    const circles = await page.locator('svg.mesh g[data-node] circle').count()
    assert.ok(circles >= 4 * 3, `${circles} actors drawn`)
    // The gateway serves the console too (a node answers it through the gateway), live feed
    // included.
    const gateway = cluster.server('g1').url
    const throughGateway = await signedIn(browser, gateway, ROOT_USERNAME, ROOT_PASSWORD)
    await throughGateway.page.getByRole('link', { name: 'Actors', exact: true }).click()
    await throughGateway.page.locator('section[data-node="g1"] tr[data-actor="gossiper"]').waitFor()
    for (const seen of [user, throughGateway]) {
      assert.equal(seen.offsite, [])
      assert.equal(seen.pageErrors, [])
    }
  } finally {
    await closeBrowser(browser)
  }
})

test('the cluster actors can be killed: they restart and the node is Alive again', async () => {
  for (const actor of ['gossiper', 'grpc-ingress', 'hint-queue']) {
    const killed = await signedRequest(cluster.server('n2').url, {
      method: 'POST',
      path: `/admin/chaos/kill/${actor}`,
    })
    assert.is(killed.status, 200, `${actor}: ${killed.body.toString()}`)
    const restarted = async () => {
      const text = await (await fetch(`${cluster.server('n2').url}/metrics`)).text()
      const restarts = sample(text, 'svc_actor_restarts_total', `actor="${actor}"`) ?? 0
      return restarts >= 1 && sample(text, 'svc_actor_up', `actor="${actor}"`) === 1
    }
    // A failure quotes the node's last log lines: why the restart did not happen is in them.
    const log = (): string => cluster.server('n2').output().split('\n').slice(-LOG_LINES).join('\n')
    assert.ok(await pollUntil(restarted, ALIVE_WAIT_MS, 100), `${actor} not restarted:\n${log()}`)
    await waitStatus(['n1', 'n3'], 'n2', 'Alive', ALIVE_WAIT_MS)
    await waitStatus(['n2'], 'n1', 'Alive', ALIVE_WAIT_MS)
    // The node still serves: a restarted gossiper does not announce it as joining again.
    const serving = async () => (await fetch(`${cluster.server('n2').url}/health`)).status === 200
    assert.ok(await pollUntil(serving, ALIVE_WAIT_MS, 100), `${actor}: n2 no longer serves`)
  }
})

test('SIGKILL: Dead at the others; restart: Alive again', async () => {
  await cluster.server('n3').kill()
  const deadMs = await waitStatus(['n1', 'n2'], 'n3', 'Dead', DEAD_WAIT_MS)
  console.log(`  a killed node was seen Dead after ${deadMs} ms`)
  const health = await adminJson<{ status: string; nodes: Record<string, number> }>(
    cluster.server('n1'),
    'GET',
    '/admin/cluster/health',
  )
  assert.is(health.status, 'degraded')
  assert.is(health.nodes['dead'], 1)
  const restartedMs = Date.now()
  await cluster.restart('n3')
  await waitStatus(['n1', 'n2'], 'n3', 'Alive', ALIVE_WAIT_MS)
  // From the start of the process: its threads, its join, its catalog pull.
  console.log(`  a restarted node was seen Alive ${Date.now() - restartedMs} ms after its start`)
})

test('SIGTERM under load: no request of retrying clients fails, exit 0, Left', async () => {
  // Four clients as applications run them (the SDK's standard retries) PUT and GET through the
  // gateway while n2 stops: it first tells gossip, serves on while gateways learn it, then drains.
  const s3 = new S3Client({
    endpoint: cluster.server('g1').url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  })
  await s3.send(new CreateBucketCommand({ Bucket: 'stopping' }))
  const written = new Map<string, string>()
  const failures: string[] = []
  let loading = true
  let retried = 0
  const client = async (id: number): Promise<void> => {
    for (let op = 0; op < LOAD_OPS_PER_CLIENT_MAX && loading; op++) {
      const Key = `c${id}-${op}`
      const Body = randomBytes(op % 10 === 0 ? 300_000 : 2_000)
      try {
        const put = await s3.send(new PutObjectCommand({ Bucket: 'stopping', Key, Body }))
        written.set(Key, md5(Body))
        const got = await s3.send(new GetObjectCommand({ Bucket: 'stopping', Key }))
        const bytes = (await got.Body?.transformToByteArray()) ?? new Uint8Array(0)
        if (md5(bytes) !== md5(Body)) failures.push(`${Key}: other bytes read back`)
        retried += (put.$metadata.attempts ?? 1) - 1 + (got.$metadata.attempts ?? 1) - 1
      } catch (error) {
        failures.push(`${Key}: ${String(error)}`)
      }
    }
  }
  const load = Promise.all(Array.from({ length: LOAD_CLIENTS }, (_, id) => client(id)))
  await sleep(1_500)
  const stopped = cluster.server('n2').stop()
  const leftMs = await waitStatus(['n1', 'n3'], 'n2', 'Left', LEFT_WAIT_MS)
  console.log(`  a stopped node was seen Left after ${leftMs} ms`)
  assert.is(await stopped, 0)
  await sleep(1_500)
  loading = false
  await load
  console.log(`  ${written.size} writes under the stop, ${retried} retries`)
  assert.equal(failures, [])
  assert.ok(written.size > LOAD_CLIENTS * 5, `only ${written.size} writes`)
  for (const [Key, sum] of written) {
    const got = await s3.send(new GetObjectCommand({ Bucket: 'stopping', Key }))
    assert.is(md5((await got.Body?.transformToByteArray()) ?? new Uint8Array(0)), sum, Key)
  }
  await cluster.restart('n2')
  await waitStatus(['n1', 'n3'], 'n2', 'Alive', ALIVE_WAIT_MS)
})

test.run()
