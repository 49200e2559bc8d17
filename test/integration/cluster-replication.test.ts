/** Goal: every object operation of a 3-node cluster is replicated with quorums (W = R = 2 of RF =
 * 3). A PUT through one node reads back through the others and the gateway with the same ETag,
 * Last-Modified and version id; a SIGKILL of one node under a concurrent PUT load loses no
 * acknowledged write (each reads back bit-exact through every live node, and through the node once
 * restarted); with two nodes down, writes and reads answer 503 ServiceUnavailable with Retry-After
 * rather than hang; a deleted key stays deleted when read through the node that missed the delete,
 * and an object stays whole when read through a node that missed it (its ingress reads the bytes
 * from a node that holds them).
 * Method: three real nodes and a gateway (test/support/cluster.ts) driven by the AWS SDK. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { createPlainAndVersioned, startCluster, type TestCluster } from '../support/cluster.js'
import { failure } from '../support/s3-failure.js'
import { ACCESS_KEY, SECRET_KEY } from '../support/server.js'
import { signedRequest } from '../support/signed-request.js'
import { sample } from '../support/metrics-text.js'
import { pollUntil, sleep } from '../support/wait.js'

let cluster: TestCluster
/** How long a case keeps a node's hints from being delivered: past its read and repair. */
const HINTS_HELD_MS = 45_000
/** Past the reads of an object a node missed, short of the next case's own hold. */
const MISSED_HINTS_HELD_MS = 15_000

/** Keeps `id`'s hint-queue down for `ms` (chaos), once a hold an earlier case asked for ended. */
async function holdHints(id: string, ms: number): Promise<void> {
  const hold = () =>
    signedRequest(cluster.server(id).url, {
      method: 'POST',
      path: '/admin/chaos/kill/hint-queue',
      query: { down_ms: String(ms) },
    })
  let held = await hold()
  for (let tries = 0; held.status === 404 && tries < HINTS_HELD_MS / 500; tries++) {
    await sleep(500)
    held = await hold()
  }
  assert.is(held.status, 200, held.body.toString())
}

test.before(async () => {
  // Chaos routes on: one case holds a node's hint delivery back.
  cluster = await startCluster({ nodes: 3, gateways: 1, env: { SVC_CHAOS: '1' } })
  const s3 = cluster.server('n1').client()
  await createPlainAndVersioned(s3)
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

function md5(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

async function read(s3: S3Client, Bucket: string, Key: string, VersionId?: string) {
  const got = await s3.send(new GetObjectCommand({ Bucket, Key, VersionId }))
  const body = await got.Body?.transformToByteArray()
  return {
    etag: got.ETag,
    lastModified: got.LastModified?.getTime(),
    versionId: got.VersionId,
    md5: body === undefined ? '' : md5(body),
  }
}

const MEMBERS = ['n1', 'n2', 'n3', 'g1']

test('a PUT through n1 reads back the same through n2, n3 and the gateway', async () => {
  for (const [Bucket, size] of [
    ['plain', 4096],
    ['plain', 3 * 2 ** 20],
    ['versioned', 4096],
    ['versioned', 3 * 2 ** 20],
  ] as const) {
    const Key = `same-everywhere-${size}`
    const body = randomBytes(size)
    const put = await cluster
      .server('n1')
      .client()
      .send(new PutObjectCommand({ Bucket, Key, Body: body }))
    for (const id of MEMBERS) {
      const got = await read(cluster.server(id).client(), Bucket, Key)
      assert.is(got.etag, put.ETag, `${Bucket}/${Key} through ${id}`)
      assert.is(got.md5, md5(body), `${Bucket}/${Key} through ${id}`)
      assert.is(got.versionId, put.VersionId, `${Bucket}/${Key} through ${id}`)
      const first = await read(cluster.server('n1').client(), Bucket, Key)
      assert.is(got.lastModified, first.lastModified, `${Bucket}/${Key} through ${id}`)
    }
  }
})

test('an old version written through n2 reads back by id through every member', async () => {
  const Key = 'two-versions'
  const first = await cluster
    .server('n2')
    .client()
    .send(new PutObjectCommand({ Bucket: 'versioned', Key, Body: 'first' }))
  await cluster
    .server('n3')
    .client()
    .send(new PutObjectCommand({ Bucket: 'versioned', Key, Body: 'second' }))
  for (const id of MEMBERS) {
    const got = await read(cluster.server(id).client(), 'versioned', Key, first.VersionId)
    assert.is(got.etag, first.ETag, id)
    assert.is(got.versionId, first.VersionId, id)
  }
})

/** Puts objects through every running node until `stop` says so; returns those acknowledged. */
async function putLoad(
  members: () => string[],
  stop: () => boolean,
  prefix: string,
): Promise<Map<string, string>> {
  const acknowledged = new Map<string, string>()
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; i < 400 && !stop(); i++) {
      const live = members()
      const id = live[(w + i) % live.length] as string
      const Key = `${prefix}-${w}-${i}`
      const body = randomBytes(1024 + ((w * 7919 + i * 104729) % (256 * 1024)))
      try {
        await cluster
          .server(id)
          .client()
          .send(new PutObjectCommand({ Bucket: 'plain', Key, Body: body }))
        acknowledged.set(Key, md5(body))
      } catch {
        // Not acknowledged (its node was killed, or the quorum was out of reach): no promise made.
      }
    }
  }
  await Promise.all([0, 1, 2, 3].map(writer))
  return acknowledged
}

/** Restarts a killed node and waits until `viewer` sees it Alive again. */
async function restartMember(id: string, viewer = 'n1'): Promise<void> {
  await cluster.restart(id)
  const alive = await pollUntil(async () => {
    const topology = await signedRequest(cluster.server(viewer).url, {
      method: 'GET',
      path: '/admin/cluster/topology',
    })
    const { pools } = JSON.parse(topology.body.toString()) as {
      pools: { nodes: { id: string; status: string }[] }[]
    }
    return pools.some((pool) => pool.nodes.some((n) => n.id === id && n.status === 'Alive'))
  }, 30_000)
  assert.ok(alive, `${viewer} does not see ${id} Alive again`)
}

/** A client that retries 503s as the SDK does by default (tests' clients answer once). */
function retrying(url: string): S3Client {
  return new S3Client({
    endpoint: url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: 5,
  })
}

/** Marks a member stopped after its process was killed. */
async function killMember(id: string): Promise<void> {
  await cluster.server(id).kill()
  const node = cluster.nodes.find((member) => member.id === id)
  if (node !== undefined) node.server = null
}

test('a SIGKILL of one node under a PUT load loses no acknowledged write', async () => {
  let running = ['n1', 'n2', 'n3']
  let done = false
  const load = putLoad(
    () => running,
    () => done,
    'load',
  )
  // The load runs on three nodes, then on two once n3 is killed in the middle of it.
  await sleep(1_500)
  running = ['n1', 'n2']
  await killMember('n3')
  await sleep(3_000)
  done = true
  const acknowledged = await load
  assert.ok(acknowledged.size >= 10, `only ${acknowledged.size} writes acknowledged`)
  // The writes n3 missed are recorded, by the nodes that coordinated them.
  let hints = 0
  for (const id of ['n1', 'n2']) {
    const health = await signedRequest(cluster.server(id).url, {
      method: 'GET',
      path: '/admin/cluster/health',
    })
    hints += (JSON.parse(health.body.toString()) as { hints_pending: number }).hints_pending
  }
  assert.ok(hints > 0, 'no hint kept for the writes n3 missed')
  for (const id of ['n1', 'n2']) {
    const s3 = cluster.server(id).client()
    for (const [Key, sum] of acknowledged) {
      assert.is((await read(s3, 'plain', Key)).md5, sum, `${Key} through ${id}`)
    }
  }
  await cluster.restart('n3')
  const s3 = cluster.server('n3').client()
  for (const [Key, sum] of acknowledged) {
    assert.is((await read(s3, 'plain', Key)).md5, sum, `${Key} through n3 restarted`)
  }
})

/** Every key under `prefix`, listed through `id` in pages of `MaxKeys`. */
async function listAll(id: string, Prefix: string, MaxKeys: number): Promise<string[]> {
  const keys: string[] = []
  let ContinuationToken: string | undefined
  for (let page = 0; page < 1000; page++) {
    const listed = await cluster
      .server(id)
      .client()
      .send(new ListObjectsV2Command({ Bucket: 'plain', Prefix, MaxKeys, ContinuationToken }))
    keys.push(...(listed.Contents ?? []).map((object) => object.Key ?? ''))
    if (listed.IsTruncated !== true) return keys
    ContinuationToken = listed.NextContinuationToken
  }
  throw new Error('a listing that never ends')
}

test('listings are exact and alike through every member, also after a missed delete', async () => {
  const keys = Array.from({ length: 60 }, (_, i) => `list/d${i % 4}/k${String(i).padStart(3, '0')}`)
  for (const [i, Key] of keys.entries()) {
    const id = ['n1', 'n2', 'n3'][i % 3] as string
    await cluster
      .server(id)
      .client()
      .send(new PutObjectCommand({ Bucket: 'plain', Key, Body: Key }))
  }
  // n2 misses these deletes and writes: its replica lists what the others no longer hold.
  await killMember('n2')
  const s3 = cluster.server('n1').client()
  const gone = keys.filter((_, i) => i % 7 === 0)
  for (const Key of gone) await s3.send(new DeleteObjectCommand({ Bucket: 'plain', Key }))
  const added = ['list/d0/late-1', 'list/d3/late-2']
  for (const Key of added) await s3.send(new PutObjectCommand({ Bucket: 'plain', Key, Body: Key }))
  await restartMember('n2')
  const expected = [...keys.filter((key) => !gone.includes(key)), ...added].sort()
  for (const id of MEMBERS) {
    assert.equal(await listAll(id, 'list/', 7), expected, `listed through ${id}`)
    const folded = await cluster
      .server(id)
      .client()
      .send(new ListObjectsV2Command({ Bucket: 'plain', Prefix: 'list/', Delimiter: '/' }))
    const prefixes = (folded.CommonPrefixes ?? []).map((prefix) => prefix.Prefix)
    assert.equal(prefixes, ['list/d0/', 'list/d1/', 'list/d2/', 'list/d3/'], id)
  }
})

test('an object a node missed reads through it from a holder, whole and in ranges', async () => {
  const Key = 'missed-while-down'
  const body = randomBytes(300_000)
  const s3 = retrying(cluster.server('n1').url)
  await killMember('n3')
  await s3.send(new PutObjectCommand({ Bucket: 'plain', Key, Body: body }))
  // n1 coordinated the write and keeps n3's hint: held back, so that n3 still lacks the object
  // when it is read through n3, whose ingress then reads the bytes from n1 or n2 itself.
  await holdHints('n1', MISSED_HINTS_HELD_MS)
  await restartMember('n3')
  const through = retrying(cluster.server('n3').url)
  const whole = await through.send(new GetObjectCommand({ Bucket: 'plain', Key }))
  const bytes = Buffer.from((await whole.Body?.transformToByteArray()) ?? [])
  assert.is(
    createHash('md5').update(bytes).digest('hex'),
    createHash('md5').update(body).digest('hex'),
  )
  const range = await through.send(
    new GetObjectCommand({ Bucket: 'plain', Key, Range: 'bytes=100000-100099' }),
  )
  const part = Buffer.from((await range.Body?.transformToByteArray()) ?? [])
  assert.ok(part.equals(body.subarray(100_000, 100_100)), 'the range')
})

test('a key deleted while a node was down stays deleted when read through that node', async () => {
  const Key = 'deleted-while-down'
  // Retrying as SDKs do by default: a node just restarted may take a moment to be reached.
  const s3 = retrying(cluster.server('n1').url)
  // With n3 down, the write needs n1 and n2: n2 surely holds the object.
  await killMember('n3')
  await s3.send(new PutObjectCommand({ Bucket: 'plain', Key, Body: 'soon gone' }))
  await restartMember('n3')
  await killMember('n2')
  await s3.send(new DeleteObjectCommand({ Bucket: 'plain', Key }))
  // n1, which coordinated the delete, keeps a hint for n2 and would deliver it as soon as it sees
  // n2 again, racing the read below: its hint-queue stays down until the read has repaired n2.
  await holdHints('n1', HINTS_HELD_MS)
  await restartMember('n2')
  const missing = await failure(() =>
    cluster
      .server('n2')
      .client()
      .send(new GetObjectCommand({ Bucket: 'plain', Key })),
  )
  assert.is(missing.status, 404)
  assert.is(missing.name, 'NoSuchKey')
  // n2 still held the object: the read repaired it.
  const repaired = await pollUntil(async () => {
    const text = await (await fetch(`${cluster.server('n2').url}/metrics`)).text()
    return (sample(text, 'svc_cluster_read_repairs_total') ?? 0) >= 1
  }, 10_000)
  assert.ok(repaired, 'no read repair counted on n2')
})

test('with two nodes down, writes and reads answer 503 with Retry-After, never hang', async () => {
  const url = cluster.server('n1').url
  await retrying(url).send(new PutObjectCommand({ Bucket: 'plain', Key: 'before', Body: 'there' }))
  await killMember('n2')
  await killMember('n3')
  // One attempt each, no retries: the answer must come, and say when to try again.
  const put = await signedRequest(url, {
    method: 'PUT',
    path: '/plain/after',
    body: randomBytes(2 ** 20),
  })
  const get = await signedRequest(url, { method: 'GET', path: '/plain/before' })
  for (const answer of [put, get]) {
    assert.is(answer.status, 503)
    assert.match(answer.body.toString(), '<Code>ServiceUnavailable</Code>')
    assert.is(answer.headers['retry-after'], '1')
  }
})

test.run()
