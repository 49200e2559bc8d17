/** Goal: /metrics counts every S3 request under the operation it named, with its method and
 * status, and shows every actor (up, restarts, mailbox, messages) in one valid text exposition,
 * even while an actor is dead; figures of the whole process appear once, so that they add up, and
 * the store's figures and the build are gauges; a single node shows the scrubber's three counters
 * and the lifecycle actor's series.
 * Method: a real server; known requests, then exact
 * counter values from a scrape, each metric family's HELP and TYPE appearing exactly once, one
 * unlabelled series per process-wide metric whose resident memory is the process's own (its
 * /proc status), the store gauges equal to /api/stats after puts and deletes, `promtool check
 * metrics` on a real scrape, and scrapes right after chaos kills of iam and of replica-store.
 * promtool comes from Debian's prometheus package (.ci/test-deps); CI requires it, elsewhere its
 * absence is said. */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { signedRequest } from '../support/signed-request.js'
import { startServer, waitHealthy, type TestServer } from '../support/server.js'
import { sample, seriesLines } from '../support/metrics-text.js'
import { pollUntil } from '../support/wait.js'

let server: TestServer
let s3: S3Client

const ACTORS = ['replica-store', 'iam', 'scrubber', 'lifecycle', 'http-ingress']
/** How long a killed store stays down before its restart, so that scrapes meet it gone. */
const STORE_DOWN_MS = 2_000
/** Figures every thread of the process reads alike: once per node, or a sum counts them again. */
const PROCESS_WIDE = [
  'process_resident_memory_bytes',
  'process_virtual_memory_bytes',
  'process_heap_bytes',
  'process_cpu_user_seconds_total',
  'process_cpu_system_seconds_total',
  'process_cpu_seconds_total',
  'process_open_fds',
  'process_max_fds',
  'process_start_time_seconds',
  'nodejs_version_info',
]
/** Figures of one thread's isolate or event loop: one series per actor. */
const PER_THREAD = [
  'nodejs_heap_size_used_bytes',
  'nodejs_heap_size_total_bytes',
  'nodejs_external_memory_bytes',
  'nodejs_eventloop_lag_p99_seconds',
]
/** Each store gauge and the /api/stats field it shows. */
const STORE_GAUGES = [
  ['svc_buckets', 'buckets_count'],
  ['svc_objects', 'objects_count'],
  ['svc_stored_bytes', 'storage_used_bytes'],
  ['svc_dedup_unique_blobs', 'dedup_unique_blobs'],
  ['svc_dedup_references', 'dedup_total_references'],
  ['svc_dedup_ratio', 'dedup_ratio'],
] as const

async function scrape(): Promise<string> {
  const response = await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(10_000) })
  assert.is(response.status, 200)
  return response.text()
}

async function stats(): Promise<Record<string, number>> {
  const response = await fetch(`${server.url}/api/stats`, { signal: AbortSignal.timeout(10_000) })
  assert.is(response.status, 200)
  return (await response.json()) as Record<string, number>
}

test.before(async () => {
  server = await startServer({ env: { SVC_CHAOS: '1' } })
  s3 = server.client()
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

test('S3 requests are counted by operation, method and status', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'metered' }))
  for (let i = 0; i < 3; i++) {
    await s3.send(new PutObjectCommand({ Bucket: 'metered', Key: `k${i}`, Body: 'x' }))
  }
  await s3.send(new GetObjectCommand({ Bucket: 'metered', Key: 'k0' }))
  await s3.send(new GetObjectCommand({ Bucket: 'metered', Key: 'absent' })).catch(() => undefined)
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const labels = (op: string, method: string, status: number): string =>
    `operation="${op}",method="${method}",status="${status}"`
  assert.is(sample(text, 'svc_http_requests_total', labels('CreateBucket', 'PUT', 200)), 1)
  assert.is(sample(text, 'svc_http_requests_total', labels('PutObject', 'PUT', 200)), 3)
  assert.is(sample(text, 'svc_http_requests_total', labels('GetObject', 'GET', 200)), 1)
  assert.is(sample(text, 'svc_http_requests_total', labels('GetObject', 'GET', 404)), 1)
  assert.is(sample(text, 'svc_http_request_duration_seconds_count', 'operation="PutObject"'), 3)
  assert.is(
    sample(text, 'svc_http_response_bytes_total', 'operation="GetObject"') !== undefined,
    true,
  )
})

test('every actor is in one valid exposition', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  for (const actor of ACTORS) {
    assert.is(sample(text, 'svc_actor_up', `actor="${actor}"`), 1, actor)
    assert.is(sample(text, 'svc_actor_restarts_total', `actor="${actor}"`), 0, actor)
    // Every thread has run its start-up at least: its CPU is counted, above zero.
    const cpu = sample(text, 'svc_actor_cpu_seconds_total', `actor="${actor}"`) ?? 0
    assert.ok(cpu > 0, `${actor} CPU ${cpu}`)
  }
  assert.match(text, /svc_actor_messages_total\{kind="object.put",actor="replica-store"\} \d+/)
  for (const name of [
    'svc_cluster_blobs_scanned_total',
    'svc_cluster_corruptions_found_total',
    'svc_cluster_corruptions_healed_total',
    'svc_lifecycle_objects_expired_total',
    'svc_lifecycle_versions_expired_total',
    'svc_lifecycle_delete_markers_removed_total',
    'svc_lifecycle_uploads_aborted_total',
    'svc_lifecycle_locked_skipped_total',
    'svc_lifecycle_errors_total',
  ]) {
    assert.is(sample(text, name), 0, name)
  }
  const progress = sample(text, 'svc_lifecycle_pass_progress')
  assert.ok(progress !== undefined, 'svc_lifecycle_pass_progress')
  const seen = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const key = line.split(' ').slice(0, 3).join(' ')
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
  }
  const repeated = [...seen.entries()].filter(([, count]) => count > 1).map(([key]) => key)
  assert.equal(repeated, [])
})

/** Every kind's svc_actor_messages_total of one actor, summed. */
function messagesOf(text: string, actor: string): number {
  return seriesLines(text, 'svc_actor_messages_total')
    .filter((line) => line.includes(`actor="${actor}"`))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0)
}

test("a burst of PUTs grows the store's CPU and messages", async () => {
  const before = await (await fetch(`${server.url}/metrics`)).text()
  await s3.send(new CreateBucketCommand({ Bucket: 'burst' }))
  const body = 'b'.repeat(64 * 1024)
  for (let i = 0; i < 40; i++) {
    await s3.send(new PutObjectCommand({ Bucket: 'burst', Key: `k${i}`, Body: body }))
  }
  const after = await (await fetch(`${server.url}/metrics`)).text()
  const cpu = (text: string): number =>
    sample(text, 'svc_actor_cpu_seconds_total', 'actor="replica-store"') ?? 0
  assert.ok(cpu(after) > cpu(before), `store CPU ${cpu(before)} -> ${cpu(after)}`)
  const [was, now] = [messagesOf(before, 'replica-store'), messagesOf(after, 'replica-store')]
  assert.ok(now >= was + 40, `store messages ${was} -> ${now}`)
})

test('a real scrape passes promtool check metrics', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const found = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 10_000 })
  if (found.error !== undefined) {
    assert.is(process.env['CI'], undefined, 'CI installs promtool (.ci/test-deps)')
    console.log('promtool not installed here (bash .ci/test-deps installs it): check not run')
    return
  }
  const checked = spawnSync('promtool', ['check', 'metrics'], {
    input: text,
    encoding: 'utf8',
    timeout: 30_000,
  })
  assert.is(checked.status, 0, `${checked.stdout}${checked.stderr}`)
  assert.is(`${checked.stdout}${checked.stderr}`.trim(), '', 'promtool finds nothing to report')
})

test('per-actor mailbox depth and handling time, and Node metrics per thread', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  for (const actor of ACTORS) {
    assert.ok(sample(text, 'svc_actor_mailbox_depth', `actor="${actor}"`) !== undefined, actor)
    for (const name of PER_THREAD) {
      assert.ok(sample(text, name, `actor="${actor}"`) !== undefined, `${name} of ${actor}`)
    }
  }
  for (const name of PER_THREAD) assert.is(seriesLines(text, name).length, ACTORS.length, name)
  const count = sample(
    text,
    'svc_actor_message_duration_seconds_count',
    'kind="object.put",actor="replica-store"',
  )
  assert.ok(count !== undefined && count >= 3, `object.put handled ${count} times`)
})

test('process-wide figures appear once per node, without an actor label', async () => {
  const text = await scrape()
  for (const name of PROCESS_WIDE) {
    const lines = seriesLines(text, name)
    assert.is(lines.length, 1, `${name}: ${lines.join(' | ')}`)
    assert.not.match(lines[0] ?? '', /actor=/, name)
  }
  // What a dashboard's sum(process_resident_memory_bytes) shows: the process, counted once. RSS
  // moves between two reads, never by half or double.
  const status = `/proc/${server.child.pid}/status`
  if (!existsSync(status)) {
    console.log('no /proc here: resident memory not compared')
    return
  }
  const summed = seriesLines(text, 'process_resident_memory_bytes')
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)))
    .reduce((a, b) => a + b, 0)
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(status, 'utf8'))?.[1])
  assert.ok(summed > kib * 512 && summed < kib * 2048, `summed ${summed} bytes, VmRSS ${kib} kB`)
})

test('svc_build_info names the version and the mode', async () => {
  const packageFile = new URL('../../../package.json', import.meta.url)
  const { version } = JSON.parse(readFileSync(packageFile, 'utf8')) as { version: string }
  const text = await scrape()
  assert.equal(seriesLines(text, 'svc_build_info'), [
    `svc_build_info{version="${version}",mode="single"} 1`,
  ])
})

test('the store gauges show what /api/stats shows, after puts and deletes', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'gauged' }))
  const before = await stats()
  const bodies = { a: 'shared bytes', b: 'shared bytes', c: 'other bytes', d: 'gone soon' }
  for (const [key, body] of Object.entries(bodies)) {
    await s3.send(new PutObjectCommand({ Bucket: 'gauged', Key: key, Body: body }))
  }
  await s3.send(new DeleteObjectCommand({ Bucket: 'gauged', Key: 'd' }))
  const after = await stats()
  assert.is(after['objects_count'], (before['objects_count'] ?? NaN) + 3)
  assert.is(after['storage_used_bytes'], (before['storage_used_bytes'] ?? NaN) + 35)
  const text = await scrape()
  for (const [name, field] of STORE_GAUGES) {
    assert.equal(seriesLines(text, name), [`${name} ${after[field]}`], name)
  }
})

test('a dead actor shows svc_actor_up 0 and the scrape still answers 200', async () => {
  // Held down for 5 s: a scrape sees it down however long the machine takes to restart a thread.
  const killed = await signedRequest(server.url, {
    method: 'POST',
    path: '/admin/chaos/kill/iam',
    query: { down_ms: '5000' },
  })
  assert.is(killed.status, 200)
  let sawDown = false
  const deadline = Date.now() + 5_000
  for (let scrapes = 0; scrapes < 500 && !sawDown && Date.now() < deadline; scrapes++) {
    const response = await fetch(`${server.url}/metrics`)
    assert.is(response.status, 200)
    const text = await response.text()
    sawDown = sample(text, 'svc_actor_up', 'actor="iam"') === 0
    if (sawDown) assert.is(sample(text, 'svc_actor_up', 'actor="replica-store"'), 1)
  }
  assert.ok(sawDown, 'no scrape saw iam down')
  await waitHealthy(server.url)
  let text = ''
  const scrapeShowsUp = async (): Promise<boolean> => {
    text = await (
      await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(5_000) })
    ).text()
    return sample(text, 'svc_actor_up', 'actor="iam"') === 1
  }
  await pollUntil(scrapeShowsUp, 10_000, 50)
  assert.is(sample(text, 'svc_actor_up', 'actor="iam"'), 1)
  assert.is(sample(text, 'svc_actor_restarts_total', 'actor="iam"'), 1)
})

test('without the store a scrape answers 200 without its gauges; they come back', async () => {
  // Held down a while: a store back within milliseconds could leave no scrape without it.
  const killed = await signedRequest(server.url, {
    method: 'POST',
    path: '/admin/chaos/kill/replica-store',
    query: { down_ms: String(STORE_DOWN_MS) },
  })
  assert.is(killed.status, 200)
  let sawWithout = false
  const deadline = Date.now() + 5_000
  for (let scrapes = 0; scrapes < 500 && !sawWithout && Date.now() < deadline; scrapes++) {
    const text = await scrape()
    sawWithout = sample(text, 'svc_buckets') === undefined
    if (sawWithout) {
      assert.is(sample(text, 'svc_actor_up', 'actor="iam"'), 1)
      assert.is(seriesLines(text, 'process_resident_memory_bytes').length, 1)
    }
  }
  assert.ok(sawWithout, 'no scrape went without the store gauges')
  await waitHealthy(server.url)
  await pollUntil(async () => sample(await scrape(), 'svc_buckets') !== undefined, 10_000, 50)
  const text = await scrape()
  assert.is(sample(text, 'svc_buckets'), (await stats())['buckets_count'])
})

test.run()
