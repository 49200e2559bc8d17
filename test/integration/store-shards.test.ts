/** Goal: a single node whose store runs as SVC_STORE_SHARDS threads serves as one store does:
 * every key on its shard, listings and stats over all of them, dedup across shards (one blob for
 * one body, whichever shards its keys are on, and none left once they are deleted), deletes of
 * many keys over several shards, a bucket's delete against writes into it from other shards, a
 * chaos kill of one shard leaving the others serving (its keys answer 503 until it is back, then
 * every byte is there), and restarts with another shard count, the counters summed or folded.
 * Method: the real server (SVC_STORE_SHARDS=3, chaos on), the AWS SDK and /api/stats; which
 * shard owns a key comes from the same hash the node uses. */
import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { keyShard } from '../../protocol/key-shard.js'
import type { StatsRecord as Stats } from '../../http/stats.js'
import { failure } from '../support/s3-failure.js'
import { signedRequest } from '../support/signed-request.js'
import { startServer, type TestServer } from '../support/server.js'
import { pollUntil } from '../support/wait.js'

const SHARDS = 3
const BUCKET = 'sharded'
/** Above the inline limit (64 KiB): a blob file, written by the ingress on a shard's loan. */
const LARGE = 100 * 1024
/** Long enough for every check of a killed shard's keys, short of any request's deadline. */
const DOWN_MS = 3_000
const BACK_MS = 15_000
const DAMAGED_BYTES = 1024 * 1024
/** Longer than a case that needs the scrubber down takes. */
const SCRUBBER_DOWN_MS = 20_000
/** A damage report reaches every shard within this (it takes milliseconds). */
const REFUSED_MS = 5_000
/** Keys per shard and rounds of one body written over them all at once. */
const HOT_KEYS_PER_SHARD = 12
const HOT_ROUNDS = 15
/** Rounds of one body written under keys of every shard at once. */
const RACE_ROUNDS = 20

function env(shards: number): Record<string, string> {
  return { SVC_STORE_SHARDS: String(shards), SVC_CHAOS: '1' }
}

/** `count` keys of `prefix` owned by each shard, by the node's own hash. */
function keysPerShard(prefix: string, count: number, shards = SHARDS): string[][] {
  const keys: string[][] = Array.from({ length: shards }, () => [])
  for (let n = 0; keys.some((own) => own.length < count); n++) {
    assert.ok(n < 10_000, 'the hash spreads keys over every shard')
    const key = `${prefix}-${n}`
    const own = keys[keyShard(BUCKET, key, shards)] as string[]
    if (own.length < count) own.push(key)
  }
  return keys
}

async function stats(server: TestServer): Promise<Stats> {
  const response = await fetch(`${server.url}/api/stats`)
  if (response.status !== 200) console.error(await response.text(), server.output().slice(-3000))
  assert.is(response.status, 200)
  return (await response.json()) as Stats
}

async function put(s3: S3Client, key: string, body: Uint8Array): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }))
}

async function body(s3: S3Client, key: string): Promise<Buffer> {
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
  return Buffer.from((await got.Body?.transformToByteArray()) ?? [])
}

async function listAll(s3: S3Client): Promise<string[]> {
  const keys: string[] = []
  let token: string | undefined
  for (let page = 0; page < 100; page++) {
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: BUCKET, MaxKeys: 7, ContinuationToken: token }),
    )
    keys.push(...(listed.Contents ?? []).map((entry) => entry.Key ?? ''))
    token = listed.NextContinuationToken
    if (token === undefined) return keys
  }
  throw new Error('listing did not end')
}

/** Blob files in the data directory's blobs/ tree. */
function blobFilePaths(dataDir: string): string[] {
  const paths: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name))
      else paths.push(join(dir, entry.name))
    }
  }
  walk(join(dataDir, 'blobs'))
  return paths
}

function blobFiles(dataDir: string): number {
  return blobFilePaths(dataDir).length
}

/** Runs `body` with a node of SHARDS store shards, then kills it and removes its data. */
async function onShardedNode(body: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startServer({ env: env(SHARDS) })
  try {
    await body(server)
  } finally {
    await server.kill()
    server.cleanup()
  }
}

function md5(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

test('every shard serves its keys; listings, stats and dedup span them all', () =>
  onShardedNode(async (server) => {
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    const owned = keysPerShard('object', 4)
    const bodies = new Map<string, Buffer>()
    await Promise.all(
      owned.flat().map(async (key, index) => {
        const bytes = randomBytes(index % 2 === 0 ? 1000 + index : LARGE + index)
        bodies.set(key, bytes)
        await put(s3, key, bytes)
      }),
    )
    for (const [key, bytes] of bodies) assert.is(md5(await body(s3, key)), md5(bytes), key)
    assert.equal(await listAll(s3), [...bodies.keys()].sort())
    const before = await stats(server)
    assert.is(before.objects_count, bodies.size)
    const bytes = [...bodies.values()].reduce((sum, each) => sum + each.byteLength, 0)
    assert.is(before.storage_used_bytes, bytes)

    // One body under keys of every shard, written at once: one blob, one file.
    const shared = randomBytes(LARGE)
    const copies = keysPerShard('copy', 3).flat()
    const filesBefore = blobFiles(server.dataDir)
    await Promise.all(copies.map((key) => put(s3, key, shared)))
    const deduped = await stats(server)
    assert.is(deduped.dedup_unique_blobs, before.dedup_unique_blobs + 1)
    assert.is(deduped.dedup_total_references, before.dedup_total_references + copies.length)
    assert.ok(
      await pollUntil(async () => blobFiles(server.dataDir) === filesBefore + 1, BACK_MS),
      'one file for the shared body',
    )
    // Their ETags, not their bodies: a GET lends the file, which stays for the loan's time.
    for (const key of copies) {
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))
      assert.is(head.ETag, `"${md5(shared)}"`, key)
    }

    // Deleted from every shard at once: the blob and its file go.
    await Promise.all(
      copies.map((key) => s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }))),
    )
    const after = await stats(server)
    assert.is(after.dedup_unique_blobs, before.dedup_unique_blobs)
    assert.is(after.dedup_total_references, before.dedup_total_references)
    assert.ok(
      await pollUntil(async () => blobFiles(server.dataDir) === filesBefore, BACK_MS),
      "the shared body's file removed",
    )

    // One DeleteObjects over keys of every shard.
    const doomed = owned.map((own) => own.slice(0, 2)).flat()
    const deleted = await s3.send(
      new DeleteObjectsCommand({
        Bucket: BUCKET,
        Delete: { Objects: doomed.map((Key) => ({ Key })) },
      }),
    )
    assert.equal((deleted.Deleted ?? []).map((entry) => entry.Key).sort(), [...doomed].sort())
    assert.equal(deleted.Errors ?? [], [])
    for (const key of doomed) bodies.delete(key)
    assert.equal(await listAll(s3), [...bodies.keys()].sort())
    assert.is((await stats(server)).objects_count, bodies.size)

    // A bucket with objects on other shards is not empty; emptied, it goes.
    const refused = await failure(() => s3.send(new DeleteBucketCommand({ Bucket: BUCKET })))
    assert.is(refused.name, 'BucketNotEmpty')
    for (const key of bodies.keys()) {
      await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }))
    }
    await s3.send(new DeleteBucketCommand({ Bucket: BUCKET }))
    const empty = await stats(server)
    assert.is(empty.objects_count, 0)
    assert.is(empty.storage_used_bytes, 0)
    assert.is(empty.dedup_unique_blobs, 0)
  }))

test('one body written and deleted at once on every shard: one blob, counted once', () =>
  onShardedNode(async (server) => {
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    const keys = keysPerShard('race', 2).flat()
    // Inline bodies: each PUT is one message and one batch, so that shards meet on the blob.
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const shared = randomBytes(1000)
      await Promise.all(keys.map((key) => put(s3, `${round}/${key}`, shared)))
    }
    const written = await stats(server)
    assert.is(written.dedup_unique_blobs, RACE_ROUNDS)
    assert.is(written.dedup_total_references, RACE_ROUNDS * keys.length)
    const all = await listAll(s3)
    assert.is(all.length, RACE_ROUNDS * keys.length)
    await Promise.all(
      all.map((key) => s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }))),
    )
    const deleted = await stats(server)
    assert.is(deleted.dedup_unique_blobs, 0)
    assert.is(deleted.dedup_total_references, 0)
    assert.is(deleted.objects_count, 0)
  }))

test('one body written over and over under keys of every shard: every write lands', () =>
  onShardedNode(async (server) => {
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    // Every write takes the one blob record: a shard must get its turn however busy the others
    // keep it (as zero-byte objects all share one blob).
    const keys = keysPerShard('hot', HOT_KEYS_PER_SHARD).flat()
    const same = randomBytes(100)
    for (let round = 0; round < HOT_ROUNDS; round++) {
      const failed = await Promise.all(keys.map((key) => failure(() => put(s3, key, same))))
      assert.equal(
        failed.filter((one) => one.name !== 'no error'),
        [],
        `round ${round}`,
      )
    }
    const written = await stats(server)
    assert.is(written.dedup_unique_blobs, 1)
    assert.is(written.dedup_total_references, keys.length)
  }))

test("a copy one shard's reader found damaged is refused by every shard", async () => {
  // Several stream chunks: the flipped byte near the end shows only after bytes went.
  const shared = randomBytes(DAMAGED_BYTES)
  const [owned0, owned1] = keysPerShard('damaged', 1)
  const keys = [owned0?.[0], owned1?.[0]] as [string, string]
  let server = await startServer({ env: env(SHARDS) })
  try {
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    for (const key of keys) await put(s3, key, shared)
    assert.is(await server.stop(), 0)
    const [file] = blobFilePaths(server.dataDir)
    assert.ok(file !== undefined && blobFilePaths(server.dataDir).length === 1, 'one file')
    const bytes = readFileSync(file)
    bytes[DAMAGED_BYTES - 10] = (bytes[DAMAGED_BYTES - 10] ?? 0) ^ 0x40
    writeFileSync(file, bytes)
    server = await startServer({ dataDir: server.dataDir, env: env(SHARDS) })
    // Without the scrubber, whose verdict would mark the copy in its record, only what the
    // reader reported keeps the other shard from sending the bytes.
    const held = await signedRequest(server.url, {
      method: 'POST',
      path: '/admin/chaos/kill/scrubber',
      query: { down_ms: String(SCRUBBER_DOWN_MS) },
    })
    assert.is(held.status, 200)
    const client = server.client()
    const first = await failure(() => body(client, keys[0]))
    assert.ok(first.name !== 'no error', 'the damaged bytes never come whole')
    const refused = await pollUntil(
      async () => (await failure(() => body(client, keys[1]))).status === 500,
      REFUSED_MS,
    )
    assert.ok(refused, "the other shard's key answers 500 before any byte")
  } finally {
    await server.kill()
    server.cleanup()
  }
})

test('a killed shard: the others serve, its keys answer 503, then all is there', () =>
  onShardedNode(async (server) => {
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    const owned = keysPerShard('kill', 2)
    const bodies = new Map(owned.flat().map((key) => [key, randomBytes(LARGE)] as const))
    for (const [key, bytes] of bodies) await put(s3, key, bytes)
    const killed = await signedRequest(server.url, {
      method: 'POST',
      path: '/admin/chaos/kill/replica-store-2',
      query: { down_ms: String(DOWN_MS) },
    })
    assert.is(killed.status, 200)
    const victim = owned[1] as string[]
    const gone = await pollUntil(async () => {
      const failed = await failure(() => body(s3, victim[0] as string))
      return failed.status === 503
    }, BACK_MS)
    assert.ok(gone, "the killed shard's key answers 503")
    for (const key of [...(owned[0] as string[]), ...(owned[2] as string[])]) {
      const bytes = bodies.get(key) as Buffer
      assert.is(md5(await body(s3, key)), md5(bytes), key)
      await put(s3, key, bytes)
    }
    const back = await pollUntil(
      async () => (await failure(() => body(s3, victim[0] as string))).name === 'no error',
      BACK_MS,
    )
    assert.ok(back, 'the shard is back')
    for (const [key, bytes] of bodies) assert.is(md5(await body(s3, key)), md5(bytes), key)
    assert.is((await stats(server)).objects_count, bodies.size)
  }))

test('restarts with fewer and more shards keep every object and the counters', async () => {
  let server = await startServer({ env: env(SHARDS) })
  const dataDir = server.dataDir
  try {
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    const keys = keysPerShard('reshard', 3).flat()
    const bodies = new Map(keys.map((key, index) => [key, randomBytes(500 + index)] as const))
    await Promise.all([...bodies].map(([key, bytes]) => put(s3, key, bytes)))
    const shared = randomBytes(LARGE)
    await Promise.all(keys.slice(0, 4).map((key) => put(s3, `dup-${key}`, shared)))
    const expected = await stats(server)
    for (const shards of [1, 2]) {
      assert.is(await server.stop(), 0)
      server = await startServer({ dataDir, env: env(shards) })
      const again = server.client()
      const now = await stats(server)
      assert.equal({ ...now, uptime_seconds: 0 }, { ...expected, uptime_seconds: 0 }, `${shards}`)
      for (const [key, bytes] of bodies) assert.is(md5(await body(again, key)), md5(bytes), key)
      // Deletes on the new shard count from records the old ones counted.
      const [first] = keys
      await again.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: first as string }))
      await put(again, first as string, bodies.get(first as string) as Buffer)
      assert.equal(
        { ...(await stats(server)), uptime_seconds: 0 },
        { ...expected, uptime_seconds: 0 },
      )
    }
  } finally {
    await server.kill()
    server.cleanup()
  }
})

test.run()
