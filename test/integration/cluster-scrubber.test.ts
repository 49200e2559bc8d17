/** Goal: in a 3-node cluster (RF 3, W = R = 2) a corrupt copy of a blob on one node is healed from
 * another node's copy, and reads meanwhile serve the right bytes:
 * - a byte flipped in n2's copy: a GET through n2 returns the right bytes at once (n2's own copy
 *   fails its CRC32 before the first byte, and the read takes another replica's), and that GET's
 *   report has n2's scrubber heal the copy now: `svc_cluster_corruptions_healed_total` 1 on n2 and
 *   its file's bytes right again;
 * - a byte flipped in n3's copy of a larger object (several chunks): n3's scrubber finds it on its
 *   pass and heals it, and GETs through n3 return the right bytes.
 * Method: three real nodes (test/support/cluster.ts) that share nothing but 127.0.0.1; n2's scrub
 * cycle is 30 days (no pass during the test: only the GET's report heals), n3's 0.0001 days (a pass
 * every 8.6 s). Blob files are found by size under each node's data directory; every wait is
 * bounded. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { sample } from '../support/metrics-text.js'
import { pollUntil } from '../support/wait.js'

const BUCKET = 'healing'
/** One stream chunk or less: a copy's CRC32 fails before its first byte is sent. */
const SMALL_BYTES = 200 * 1024
const LARGE_BYTES = 3 * 1024 * 1024
const HEAL_WAIT_MS = 40_000

let cluster: TestCluster

test.before(async () => {
  cluster = await startCluster({
    nodes: 3,
    envOf: {
      n2: { SVC_SCRUBBER_FULL_SCAN_DAYS: '30' },
      n3: { SVC_SCRUBBER_FULL_SCAN_DAYS: '0.0001' },
    },
  })
  await cluster
    .server('n1')
    .client()
    .send(new CreateBucketCommand({ Bucket: BUCKET }))
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

function md5(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

/** The node's blob file of `size` bytes (each test's object has its own size). */
function blobFile(id: string, size: number): string | undefined {
  const root = join(cluster.server(id).dataDir, 'blobs')
  for (const fanOut of readdirSync(root)) {
    for (const name of readdirSync(join(root, fanOut))) {
      const path = join(root, fanOut, name)
      if (statSync(path).size === size) return path
    }
  }
  return undefined
}

function flipByte(path: string, offset: number): void {
  const bytes = readFileSync(path)
  bytes[offset] = (bytes[offset] ?? 0) ^ 0x40
  writeFileSync(path, bytes)
}

async function metric(id: string, name: string): Promise<number | undefined> {
  return sample(await (await fetch(`${cluster.server(id).url}/metrics`)).text(), name)
}

async function readMd5(id: string, key: string): Promise<string> {
  const got = await cluster
    .server(id)
    .client()
    .send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
  return md5((await got.Body?.transformToByteArray()) ?? new Uint8Array())
}

/** Whether a node's file of `size` bytes holds `body` (a healed copy is a new file). */
function holds(id: string, size: number, body: Uint8Array): boolean {
  const path = blobFile(id, size)
  return path !== undefined && readFileSync(path).equals(body)
}

test('a GET through a node with a corrupt copy returns the right bytes and heals it', async () => {
  const body = randomBytes(SMALL_BYTES)
  await cluster
    .server('n1')
    .client()
    .send(new PutObjectCommand({ Bucket: BUCKET, Key: 'small', Body: body }))
  // W = 2: the third copy may still be landing.
  assert.ok(await pollUntil(() => holds('n2', SMALL_BYTES, body), 10_000, 50), 'n2 has its copy')
  flipByte(blobFile('n2', SMALL_BYTES) as string, 1234)
  assert.is(holds('n2', SMALL_BYTES, body), false)

  assert.is(await readMd5('n2', 'small'), md5(body))
  assert.ok(
    await pollUntil(
      async () => (await metric('n2', 'svc_cluster_corruptions_healed_total')) === 1,
      HEAL_WAIT_MS,
      200,
    ),
    "n2's scrubber healed its copy",
  )
  assert.is(await metric('n2', 'svc_cluster_corruptions_found_total'), 1)
  assert.ok(holds('n2', SMALL_BYTES, body), "n2's file holds the right bytes again")
  assert.is(await readMd5('n2', 'small'), md5(body))
})

test("the pass of n3's scrubber finds and heals a corrupt copy of a larger object", async () => {
  const body = randomBytes(LARGE_BYTES)
  await cluster
    .server('n1')
    .client()
    .send(new PutObjectCommand({ Bucket: BUCKET, Key: 'large', Body: body }))
  assert.ok(await pollUntil(() => holds('n3', LARGE_BYTES, body), 10_000, 50), 'n3 has its copy')
  flipByte(blobFile('n3', LARGE_BYTES) as string, LARGE_BYTES - 100)

  assert.ok(
    await pollUntil(
      async () => (await metric('n3', 'svc_cluster_corruptions_healed_total')) === 1,
      HEAL_WAIT_MS,
      200,
    ),
    "n3's scrubber healed its copy",
  )
  assert.is(await metric('n3', 'svc_cluster_corruptions_found_total'), 1)
  assert.ok(((await metric('n3', 'svc_cluster_blobs_scanned_total')) ?? 0) >= 1)
  assert.ok(holds('n3', LARGE_BYTES, body), "n3's file holds the right bytes again")
  for (const id of ['n1', 'n2', 'n3']) assert.is(await readMd5(id, 'large'), md5(body), id)
})

test.run()
