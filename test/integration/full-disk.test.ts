/** Goal: a full data volume is an answer, not a crash. Object writes that find no room answer
 * `507 InsufficientStorage` (S3 XML), never a 500 or a 503; reads, listings and deletes go on;
 * /health (200) and /metrics say the volume is full; deletes make room for writes again; and the
 * node stops and starts again on the full volume and serves reads. What the node holds back
 * follows the volume: a small one still takes most of its size in objects. Method: the real
 * server on a 96 MiB tmpfs the test mounts (skipped, saying why, where mounting is refused),
 * filled with PUTs (eight at a time) until the first refusal: 1 MiB objects, which fill blob
 * files, and 60 KB objects, which live inline in the metadata database, so that it is RocksDB
 * that meets the edge; and a 64 MiB one, filled with 1 MiB objects and then, while the node is
 * down, to its last byte by a file of the test's, on which the node must start (the room its
 * database needs to open is held in reserve and released at start), single and as a cluster's
 * node. */
import { randomBytes } from 'node:crypto'
import { open, readdir, rm, stat, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { floorBytes } from '../../runtime/data-volume.js'
import { sample } from '../support/metrics-text.js'
import { failure } from '../support/s3-failure.js'
import { ROOT_PASSWORD, ROOT_USERNAME } from '../support/cluster.js'
import { freePort, startServer, type TestServer } from '../support/server.js'
import { mountTmpfs } from '../support/tmpfs.js'
import { pollUntil } from '../support/wait.js'
import { skipCase } from '../support/skip.js'

const VOLUME_MIB = 96
const SMALL_VOLUME_MIB = 64
const MIB = 1024 * 1024
/** 1 MiB objects a 64 MiB volume must take at least. */
const SMALL_VOLUME_OBJECTS_MIN = 16
/** Deletes of 1 MiB objects that surely make room for one more on a volume full by the rule: the
 * blob writes that filled it may have dug up to half of the floor, the deletes' own records take
 * room in the metadata database until a compaction drops them (its output is written before its
 * inputs go: up to two MiB here), and the next PUT needs its own MiB and one more to spare. */
const FREEING_DELETES = Math.ceil(floorBytes(SMALL_VOLUME_MIB * MIB) / 2 / MIB) + 4
/** Freed room must take a write within this: the files of deleted objects go once their batch is
 * durable (on a busy machine, a second or more after the answer), and the store looks at the
 * volume at most a second apart, while a look cached for many seconds would not let it in. */
const ROOM_USABLE_MS = 5_000
/** A PUT refused for want of room is tried again this often until ROOM_USABLE_MS passed. */
const ROOM_RETRY_MS = 100
const BUCKET = 'full'
/** Far more PUTs than the volume holds of either size: the loop ends at the first refusal. */
const PUTS_MAX = 2_000
const PUTS_AT_ONCE = 8
/** The store looks at the volume every second; room made by deletes shows within a few. */
const ROOM_BACK_MS = 15_000
const FILL_ROUNDS_MAX = 5
/** Well past the ingress's second between two looks at the volume. */
const SAYS_FULL_MS = 5_000

/** What a test on the small volume works with: the node, its client, its data directory, and
 * every server started on the volume (stopped at the end). */
interface OnVolume {
  server: TestServer
  s3: S3Client
  dataDir: string
  servers: TestServer[]
  /** The tmpfs's root, beside the data directory. */
  volumeDir: string
}

/** Runs `body` with a server (and the bucket) on a fresh tmpfs, then stops everything and
 * unmounts. */
async function onSmallVolume(
  body: (on: OnVolume) => Promise<void>,
  sizeMiB = VOLUME_MIB,
  env: Record<string, string> = {},
): Promise<void> {
  const volume = await mountTmpfs(sizeMiB)
  if ('refused' in volume) {
    skipCase(`cannot mount a tmpfs here (${volume.refused})`)
    return
  }
  const servers: TestServer[] = []
  try {
    const dataDir = `${volume.dir}/data`
    const server = await startServer({ dataDir, env })
    servers.push(server)
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
    await body({ server, s3, dataDir, servers, volumeDir: volume.dir }).catch(async (error) => {
      await printTheVolume(servers, volume.dir)
      printWhatTheNodesSaid(servers)
      throw error
    })
  } finally {
    for (const server of servers) await server.kill()
    await volume.unmount()
  }
}

/** On a failure, what the nodes logged, for the reader of a failed run (the volume goes with the
 * test): the metadata database's own complaints are in it. */
function printWhatTheNodesSaid(servers: TestServer[]): void {
  for (const server of servers) console.error(`node's output:\n${server.output()}`)
}

/** On a failure, what took the volume (the volume goes with the test): the file system's free
 * bytes, the last node's volume gauges, and the bytes each file of the volume holds (allocated,
 * which counts preallocation), so that a reader sees what the room went to. */
async function printTheVolume(servers: TestServer[], volumeDir: string): Promise<void> {
  const lines: string[] = []
  const stats = await statfs(volumeDir)
  lines.push(`free ${stats.bavail * stats.bsize} of ${stats.blocks * stats.bsize} bytes`)
  const last = servers[servers.length - 1]
  const metrics = await fetch(`${last?.url ?? ''}/metrics`)
    .then((response) => response.text())
    .catch((error: unknown) => `no metrics: ${String(error)}`)
  lines.push(...metrics.split('\n').filter((line) => line.startsWith('svc_data_volume')))
  const files = await readdir(volumeDir, { recursive: true })
  for (const file of files.sort()) {
    const found = await stat(join(volumeDir, file)).catch(() => null)
    if (found?.isFile() === true) lines.push(`${found.blocks * 512}\t${found.size}\t${file}`)
  }
  console.error(`the volume (allocated, size, file):\n${lines.join('\n')}`)
}

/** PUTs objects of `size`, PUTS_AT_ONCE at a time, until a round with a failure, which must be
 * 507 InsufficientStorage. Several at once reach the edge faster than the store looks at the
 * volume (a run of inline writes once took the room the metadata database needed to flush). */
async function fill(s3: S3Client, size: number, prefix: string): Promise<string[]> {
  const stored: string[] = []
  for (let first = 0; first < PUTS_MAX; first += PUTS_AT_ONCE) {
    const keys = Array.from({ length: PUTS_AT_ONCE }, (_, index) => `${prefix}-${first + index}`)
    const failures = await Promise.all(
      keys.map((key) =>
        failure(() =>
          s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: randomBytes(size) })),
        ),
      ),
    )
    for (const [index, failed] of failures.entries()) {
      if (failed.name === 'no error') stored.push(keys[index] as string)
      else assert.equal(failed, { name: 'InsufficientStorage', status: 507 }, `PUT ${keys[index]}`)
    }
    if (stored.length < first + PUTS_AT_ONCE) return stored
  }
  throw new Error(`${PUTS_MAX} PUTs of ${size} bytes fit on a ${VOLUME_MIB} MiB volume`)
}

interface VolumeGauges {
  size: number
  full: number
  /** Restarts of replica-store: a full volume must cause none. */
  storeRestarts: number | undefined
}

async function volumeGauges(server: TestServer): Promise<VolumeGauges> {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const gauge = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `))
    return line === undefined ? NaN : Number(line.slice(name.length + 1))
  }
  assert.ok(gauge('svc_data_volume_free_bytes') >= 0)
  return {
    size: gauge('svc_data_volume_size_bytes'),
    full: gauge('svc_data_volume_full'),
    storeRestarts: sample(text, 'svc_actor_restarts_total', 'actor="replica-store"'),
  }
}

/** Fills until a refusal after which /health and /metrics say full (the ingress looks at the
 * volume at most once a second, so it may take that long). Room may also come back meanwhile (the
 * metadata database flushes and retires its log in the background): writes then work again, and
 * the fill goes on, a bounded number of rounds. */
async function fillUntilFull(server: TestServer, size: number, prefix: string): Promise<string[]> {
  const stored: string[] = []
  for (let round = 0; round < FILL_ROUNDS_MAX; round++) {
    stored.push(...(await fill(server.client(), size, `${prefix}-${round}`)))
    const saysFull = async (): Promise<boolean> => {
      const said = await health(server)
      assert.is(said.status, 200)
      return said.body.includes('data volume full') && (await volumeGauges(server)).full === 1
    }
    if (await pollUntil(saysFull, SAYS_FULL_MS, 100)) return stored
  }
  throw new Error(`/health and /metrics did not say full after ${FILL_ROUNDS_MAX} refusals`)
}

async function health(server: TestServer): Promise<{ status: number; body: string }> {
  const response = await fetch(`${server.url}/health`)
  return { status: response.status, body: await response.text() }
}

/** A delete, which must work on a full volume; a failure names the key it was at. */
async function deleteObject(s3: S3Client, key: string): Promise<void> {
  const failed = await failure(() => s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key })))
  assert.is(failed.name, 'no error', `DELETE ${key}: ${JSON.stringify(failed)}`)
}

/** Reads and listings on the full volume, and no restart of the store. */
async function assertServesWhileFull(
  server: TestServer,
  stored: string[],
  sizeMiB = VOLUME_MIB,
): Promise<void> {
  const s3 = server.client()
  const first = stored[0]
  assert.ok(first !== undefined)
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: first }))
  assert.ok((await got.Body?.transformToByteArray())?.byteLength)
  await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: first }))
  assert.is(await countKeys(s3), stored.length)
  const gauges = await volumeGauges(server)
  assert.is(gauges.size, sizeMiB * MIB)
  assert.is(gauges.storeRestarts, 0)
}

/** The bucket's keys, listed page by page (a page holds at most 1000). */
async function countKeys(s3: S3Client): Promise<number> {
  let count = 0
  let token: string | undefined
  for (let page = 0; page <= PUTS_MAX / 1000; page++) {
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }),
    )
    count += listed.KeyCount ?? 0
    token = listed.NextContinuationToken
    if (token === undefined) return count
  }
  throw new Error(`more than ${PUTS_MAX} keys listed`)
}

/** Stops the node on the full volume and starts it again there: it must serve reads. */
async function restartOnFullVolume(
  servers: TestServer[],
  dataDir: string,
  key: string,
): Promise<void> {
  const previous = servers[servers.length - 1]
  assert.ok(previous !== undefined)
  assert.is(await previous.stop(), 0)
  const again = await startServer({ dataDir })
  servers.push(again)
  const got = await again.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
  assert.ok((await got.Body?.transformToByteArray())?.byteLength)
  assert.is((await health(again)).status, 200)
}

test('1 MiB objects fill blob files: 507, reads and deletes go on, room comes back', () =>
  onSmallVolume(async ({ server, s3, dataDir, servers }) => {
    const stored = await fillUntilFull(server, 1024 * 1024, 'blob')
    assert.ok(stored.length >= 10, `only ${stored.length} objects fit`)
    await assertServesWhileFull(server, stored)
    const deleted = stored.splice(0, Math.ceil(stored.length / 2))
    for (const key of deleted) await deleteObject(s3, key)
    assert.ok(await pollUntil(async () => (await volumeGauges(server)).full === 0, ROOM_BACK_MS))
    assert.is((await health(server)).body, 'ok')
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'again', Body: randomBytes(1024) }))
    // Full again, for the restart.
    stored.push('again', ...(await fillUntilFull(server, 1024 * 1024, 'refill')))
    await restartOnFullVolume(servers, dataDir, stored[0] ?? '')
  }))

test('60 KB objects fill the metadata database: 507, never a crash, and a restart serves', () =>
  onSmallVolume(async ({ server, s3, dataDir, servers }) => {
    const stored = await fillUntilFull(server, 60_000, 'inline')
    assert.ok(stored.length >= 100, `only ${stored.length} objects fit`)
    await assertServesWhileFull(server, stored)
    // Deletes go on, though inline bytes leave the database only when it compacts.
    for (const key of stored.splice(0, 50)) await deleteObject(s3, key)
    await restartOnFullVolume(servers, dataDir, stored[0] ?? '')
  }))

/** Takes every byte left on the volume with a file in `dir` (as another writer would): chunks of
 * 1 MiB, then of a page, until the file system says no space. Answers the file's path. */
async function takeTheRest(dir: string, sizeMiB: number): Promise<string> {
  const path = `${dir}/filler`
  const handle = await open(path, 'w')
  try {
    for (const chunk of [MIB, 4096]) {
      const bytes = Buffer.alloc(chunk, 1)
      for (let written = 0; ; written += chunk) {
        assert.ok(written <= sizeMiB * MIB, 'the filler outgrew the volume')
        try {
          await handle.write(bytes)
        } catch (error) {
          assert.is((error as NodeJS.ErrnoException).code, 'ENOSPC')
          break
        }
      }
    }
  } finally {
    await handle.close()
  }
  return path
}

/** Fills the volume with 1 MiB objects (at least SMALL_VOLUME_OBJECTS_MIN must fit), stops the
 * node, takes the rest of the volume with a file and starts the node again (with `env`): it must
 * serve reads, listings and deletes. Answers the node, the keys stored and the file. */
async function restartFullToTheLastByte(
  { server, dataDir, servers, volumeDir }: OnVolume,
  env: Record<string, string> = {},
): Promise<{ again: TestServer; stored: string[]; filler: string }> {
  const stored = await fillUntilFull(server, MIB, 'blob')
  assert.ok(stored.length >= SMALL_VOLUME_OBJECTS_MIN, `only ${stored.length} objects fit`)
  assert.is(await server.stop(), 0)
  const filler = await takeTheRest(volumeDir, SMALL_VOLUME_MIB)
  const again = await startServer({ dataDir, env })
  servers.push(again)
  await assertServesWhileFull(again, stored, SMALL_VOLUME_MIB)
  assert.is((await health(again)).status, 200)
  const s3 = again.client()
  for (const key of stored.splice(0, 2)) await deleteObject(s3, key)
  assert.is(await countKeys(s3), stored.length)
  return { again, stored, filler }
}

test('64 MiB: 16 objects of 1 MiB fit, a restart on it filled to the last byte serves', () =>
  onSmallVolume(async (on) => {
    const { again, stored, filler } = await restartFullToTheLastByte(on)
    const s3 = again.client()
    await rm(filler)
    // Full by objects alone, then a few deletes: the next PUT must find their room.
    stored.push(...(await fillUntilFull(again, MIB, 'refill')))
    for (const key of stored.splice(0, FREEING_DELETES)) await deleteObject(s3, key)
    const putFreed = () =>
      failure(() =>
        s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'freed', Body: randomBytes(MIB) })),
      )
    const startedMs = Date.now()
    let put = await putFreed()
    const triesMax = ROOM_USABLE_MS / ROOM_RETRY_MS
    for (let tries = 1; tries < triesMax && put.name === 'InsufficientStorage'; tries++) {
      if (Date.now() - startedMs >= ROOM_USABLE_MS) break
      await new Promise((resolve) => setTimeout(resolve, ROOM_RETRY_MS))
      put = await putFreed()
    }
    assert.is(put.name, 'no error', `PUT after ${FREEING_DELETES} deletes: ${JSON.stringify(put)}`)
    assert.is((await volumeGauges(again)).storeRestarts, 0)
  }, SMALL_VOLUME_MIB))

/** A cluster of one node (replication factor 1, so that the node alone answers): its store opens
 * the same way, and its hints and digests go into the same database. */
async function oneNodeCluster(): Promise<Record<string, string>> {
  const grpc = `127.0.0.1:${await freePort()}`
  return {
    SVC_MODE: 'cluster',
    SVC_CLUSTER_NAME: 'full-disk',
    SVC_CLUSTER_SECRET: randomBytes(24).toString('hex'),
    SVC_NODE_ID: 'n1',
    SVC_NODE_GRPC_ADDR: grpc,
    SVC_SEEDS: grpc,
    SVC_POOL_NAME: 'p1',
    SVC_POOL_NODES: `n1:${grpc}`,
    SVC_REPLICATION_FACTOR: '1',
    SVC_WRITE_QUORUM: '1',
    SVC_READ_QUORUM: '1',
    SVC_ROOT_USERNAME: ROOT_USERNAME,
    SVC_ROOT_PASSWORD: ROOT_PASSWORD,
  }
}

test('cluster mode: a node restarts on 64 MiB filled to the last byte and serves', async () => {
  const env = await oneNodeCluster()
  await onSmallVolume(
    async (on) => {
      const { again, filler } = await restartFullToTheLastByte(on, env)
      await rm(filler)
      assert.is((await volumeGauges(again)).storeRestarts, 0)
    },
    SMALL_VOLUME_MIB,
    env,
  )
})

test.run()
