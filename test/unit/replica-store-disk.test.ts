// Goal: the replica-store actor works on the real storage adapters (RocksDB and blob files), keeps
// everything across a restart, and after a simulated crash reclaims what no commit references
// while keeping every committed object readable.
// Method: a context whose kv and blobs are openRocksKv/openBlobFiles on a temp dir (the rest from
// the fake context). A restart is stop + close + reopen + init. A crash is the adapters closed with
// no stop, after effects were cut short by wrappers: a promotion that never ran (committed but
// unpromoted), a metadata commit that never happened after the file was synced, an upload cut off
// mid-stream, and a file removal that never ran after its blob was released (garbage record).
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import {
  handle,
  type BlobFiles,
  type Context,
  type KvOp,
  type KvStore,
} from '../../protocol/actor.js'
import type { Result } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import type {
  BucketStats,
  GetResult,
  StoreMsg,
  StoreStats,
  SystemRecord,
} from '../../protocol/messages.js'
import type { ListPage } from '../../protocol/objects.js'
import { openBlobFiles, type LocalBlobFiles } from '../../runtime/blob-files.js'
import { openRocksKv, type RocksKv } from '../../runtime/rocks-kv.js'
import {
  fakeContext,
  memoryStream,
  ROOMY_VOLUME,
  type MemoryStream,
} from '../support/fake-context.js'
import { pollUntil } from '../support/wait.js'

type Distribute<T> = T extends unknown ? Omit<T, 'requestId' | 'deadlineMs'> : never
type Body = Distribute<StoreMsg>

interface Disk {
  ctx: Context
  kv: RocksKv
  files: LocalBlobFiles
  state: StoreState
  send<T>(body: Body): Promise<Result<T>>
  /** Closes the adapters without stopping the actor: what a crash leaves on disk. */
  crash(): Promise<void>
  /** A graceful stop. */
  stop(): Promise<void>
}

async function openDisk(
  dir: string,
  wrap: (real: { kv: KvStore; blobs: BlobFiles }) => { kv: KvStore; blobs: BlobFiles } = (real) =>
    real,
): Promise<Disk> {
  const kv = await openRocksKv(join(dir, 'meta'))
  const files = await openBlobFiles(dir, ROOMY_VOLUME)
  const effects = wrap({ kv, blobs: files })
  const ctx: Context = { ...fakeContext(), kv: effects.kv, blobs: effects.blobs }
  const state = await replicaStore.init(ctx)
  const close = async (): Promise<void> => {
    await kv.close()
    await files.close()
  }
  return {
    ctx,
    kv,
    files,
    state,
    async send<T>(body: Body): Promise<Result<T>> {
      const msg = { ...body, requestId: 'disk', deadlineMs: ctx.now() + 60_000 } as StoreMsg
      return (await handle(replicaStore, state, msg, ctx)) as Result<T>
    },
    crash: close,
    async stop() {
      await replicaStore.stop?.(state, ctx)
      await close()
    },
  }
}

function value<T>(result: Result<T>): T {
  if (!result.ok) assert.unreachable(`expected ok, got ${result.code}: ${result.detail}`)
  return (result as { ok: true; value: T }).value
}

function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let index = 0; index < size; index++)
    bytes[index] = (index * 13 + seed * 101 + (index >> 10)) & 0xff
  return bytes
}

const HTTP = { contentType: 'application/octet-stream' }

function putMsg(bucket: string, key: string, body: Uint8Array): Body {
  const stream = memoryStream()
  for (let offset = 0; offset < body.byteLength; offset += STREAM_CHUNK_BYTES) {
    stream.push(body.subarray(offset, offset + STREAM_CHUNK_BYTES))
  }
  stream.end()
  return {
    kind: 'object.put',
    bucket,
    key,
    http: HTTP,
    userMeta: {},
    expect: { size: body.byteLength },
    stream: stream.handle,
  }
}

async function read(disk: Disk, bucket: string, key: string): Promise<Buffer> {
  const stream = memoryStream()
  const reply = value(
    await disk.send<GetResult>({ kind: 'object.get', bucket, key, stream: stream.handle }),
  )
  if (reply.body !== undefined) return Buffer.from(reply.body)
  stream.request(0, reply.info.size - 1)
  const received = await stream.received()
  assert.ok(received.ended, 'stream ended')
  return Buffer.from(received.bytes)
}

async function idle(state: StoreState): Promise<void> {
  while (state.tasks.size + state.streams.size > 0) {
    await Promise.allSettled([...state.tasks, ...state.streams.keys()])
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = []
  for (const fanOut of await readdir(join(dir, 'blobs'))) {
    for (const name of await readdir(join(dir, 'blobs', fanOut))) found.push(name)
  }
  return found.sort()
}

async function withDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'replica-store-disk-'))
  try {
    await run(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

test('objects, listing and stats survive a graceful restart', () =>
  withDir(async (dir) => {
    let disk = await openDisk(dir)
    value(await disk.send({ kind: 'bucket.create', bucket: 'b' }))
    const large = pattern(700_000, 1)
    const small = pattern(3_000, 2)
    value(await disk.send(putMsg('b', 'large', large)))
    value(await disk.send(putMsg('b', 'small', small)))
    value(await disk.send(putMsg('b', 'dup/of/large', large)))
    value(
      await disk.send({
        kind: 'object.copy',
        source: { bucket: 'b', key: 'small' },
        target: { bucket: 'b', key: 'copy' },
        conditions: {},
      }),
    )
    value(await disk.send({ kind: 'system.put', name: 'iam', value: new Uint8Array([9]) }))
    await disk.stop()
    assert.equal(await readdir(join(dir, 'tmp')), [])
    assert.is((await filesUnder(dir)).length, 1, 'one file for two references')

    disk = await openDisk(dir)
    assert.ok((await read(disk, 'b', 'large')).equals(Buffer.from(large)))
    assert.ok((await read(disk, 'b', 'dup/of/large')).equals(Buffer.from(large)))
    assert.ok((await read(disk, 'b', 'copy')).equals(Buffer.from(small)))
    assert.equal([...value(await disk.send<Uint8Array>({ kind: 'system.get', name: 'iam' }))], [9])
    const page = value(
      await disk.send<ListPage>({
        kind: 'object.list',
        bucket: 'b',
        prefix: '',
        delimiter: '/',
        after: '',
        maxKeys: 10,
      }),
    )
    assert.equal(page.objects.keys, ['copy', 'large', 'small'])
    assert.equal(page.commonPrefixes, ['dup/'])
    assert.equal(value(await disk.send<StoreStats>({ kind: 'system.stats' })), {
      bucketsCount: 1,
      objectsCount: 4,
      storageUsedBytes: 2 * 700_000 + 2 * 3_000,
      uniqueBlobs: 2,
      totalReferences: 4,
    })
    value(
      await disk.send({
        kind: 'object.delete-many',
        bucket: 'b',
        objects: [{ key: 'large' }, { key: 'dup/of/large' }],
      }),
    )
    await idle(disk.state)
    assert.equal(await filesUnder(dir), [])
    await disk.stop()
  }))

test('crash: committed-but-unpromoted stays; uncommitted files and garbage go', () =>
  withDir(async (dir) => {
    let disk = await openDisk(dir)
    value(await disk.send({ kind: 'bucket.create', bucket: 'b' }))
    const released = pattern(200_000, 3)
    value(await disk.send(putMsg('b', 'released', released)))
    await disk.stop()

    // 1. A put whose metadata committed, but the process died before the promotion.
    const committed = pattern(500_000, 4)
    disk = await openDisk(dir, ({ kv, blobs }) => ({
      kv,
      blobs: { ...bind(blobs), promote: () => Promise.resolve() },
    }))
    value(await disk.send(putMsg('b', 'committed', committed)))
    await disk.crash()
    const unpromoted = await readdir(join(dir, 'tmp'))
    assert.is(unpromoted.length, 1)

    const cut = await crashWithEffectsCutShort(dir)

    disk = await openDisk(dir)
    assert.equal(await readdir(join(dir, 'tmp')), [])
    assert.is((await filesUnder(dir)).length, 1)
    assert.ok((await read(disk, 'b', 'committed')).equals(Buffer.from(committed)))
    for (const key of ['never-committed', 'cut', 'released']) {
      const result = await disk.send({ kind: 'object.get', bucket: 'b', key })
      assert.is(result.ok ? 'ok' : result.code, 'no_such_key', key)
    }
    assert.equal(value(await disk.send<StoreStats>({ kind: 'system.stats' })), {
      bucketsCount: 1,
      objectsCount: 1,
      storageUsedBytes: 500_000,
      uniqueBlobs: 1,
      totalReferences: 1,
    })
    assert.equal(disk.kv.scan({ gte: 'G\0', lt: 'G\x01', limit: 10 }), [])
    await disk.stop()
    cut.abort('timeout', 'test over')
  }))

test('a blob file that vanished under a committed record is reported corrupt, not hung', () =>
  withDir(async (dir) => {
    const disk = await openDisk(dir)
    value(await disk.send({ kind: 'bucket.create', bucket: 'b' }))
    value(await disk.send(putMsg('b', 'k', pattern(100_000, 7))))
    await idle(disk.state)
    const [name] = await filesUnder(dir)
    assert.ok(name !== undefined)
    await rm(join(dir, 'blobs', name.slice(0, 2), name))
    assert.not.ok(existsSync(join(dir, 'blobs', name.slice(0, 2), name)))
    const stream = memoryStream()
    const result = await disk.send({
      kind: 'object.get',
      bucket: 'b',
      key: 'k',
      stream: stream.handle,
    })
    assert.is(result.ok ? 'ok' : result.code, 'corrupt')
    await disk.stop()
  }))

function inlinePut(bucket: string, key: string, body: Uint8Array): Body {
  return { kind: 'object.put', bucket, key, http: HTTP, userMeta: {}, expect: {}, body }
}

/** `count` small objects k/00000... of 12 bytes each, put concurrently (their commits group). */
async function putMany(disk: Disk, bucket: string, count: number): Promise<void> {
  const encoder = new TextEncoder()
  const replies = []
  for (let index = 0; index < count; index++) {
    const name = String(index).padStart(5, '0')
    replies.push(disk.send(inlinePut(bucket, `k/${name}`, encoder.encode(`object ${name}`))))
  }
  for (const reply of await Promise.all(replies)) value(reply)
}

async function systemNames(disk: Disk, prefix: string): Promise<string[]> {
  const listed = value(await disk.send<SystemRecord[]>({ kind: 'system.list', prefix }))
  return listed.map((record) => record.name)
}

test('system records: a delete that returned survives a crash; list sees what is left', () =>
  withDir(async (dir) => {
    let disk = await openDisk(dir)
    for (const name of ['iam.user.1', 'iam.user.2', 'iam.users']) {
      value(await disk.send({ kind: 'system.put', name, value: new Uint8Array([name.length]) }))
    }
    value(await disk.send({ kind: 'system.delete', name: 'iam.user.1' }))
    await disk.crash()
    disk = await openDisk(dir)
    assert.is(value(await disk.send({ kind: 'system.get', name: 'iam.user.1' })), null)
    assert.equal(await systemNames(disk, 'iam.user.'), ['iam.user.2'])
    assert.equal(await systemNames(disk, ''), ['iam.user.2', 'iam.users'])
    const listed = value(await disk.send<SystemRecord[]>({ kind: 'system.list', prefix: 'iam.u' }))
    assert.equal(
      listed.map((record) => [...record.value]),
      [[10], [9]],
    )
    await disk.stop()
  }))

test('force delete on disk: shared files stay, released ones go; counters survive restart', () =>
  withDir(async (dir) => {
    let disk = await openDisk(dir)
    value(await disk.send({ kind: 'bucket.create', bucket: 'keep' }))
    const shared = pattern(700_000, 8)
    value(await disk.send(putMsg('keep', 'large', shared)))
    await idle(disk.state)
    const before = value(await disk.send<StoreStats>({ kind: 'system.stats' }))
    const keepStats = value(await disk.send<BucketStats[]>({ kind: 'bucket.stats' }))
    const files = await filesUnder(dir)
    value(await disk.send({ kind: 'bucket.create', bucket: 'doomed' }))
    await putMany(disk, 'doomed', 1100)
    value(await disk.send(putMsg('doomed', 'dup', shared)))
    value(await disk.send(putMsg('doomed', 'own', pattern(400_000, 9))))
    await idle(disk.state)
    assert.is((await filesUnder(dir)).length, 2)
    value(await disk.send({ kind: 'bucket.delete', bucket: 'doomed', force: true }))
    await idle(disk.state)
    assert.equal(await filesUnder(dir), files)
    await disk.stop()
    disk = await openDisk(dir)
    assert.equal(value(await disk.send<StoreStats>({ kind: 'system.stats' })), before)
    assert.equal(value(await disk.send<BucketStats[]>({ kind: 'bucket.stats' })), keepStats)
    assert.equal(keepStats, [
      {
        name: 'keep',
        createdMs: disk.ctx.now(),
        objectsCount: 1,
        storageUsedBytes: 700_000,
      },
    ])
    assert.ok((await read(disk, 'keep', 'large')).equals(Buffer.from(shared)))
    const head = await disk.send({ kind: 'bucket.head', bucket: 'doomed' })
    assert.is(head.ok ? 'ok' : head.code, 'no_such_bucket')
    await disk.stop()
  }))

test('a crash amid a forced delete keeps its durable batches and exact counters', () =>
  withDir(async (dir) => {
    let disk = await openDisk(dir)
    value(await disk.send({ kind: 'bucket.create', bucket: 'b' }))
    await putMany(disk, 'b', 2100)
    value(await disk.send(putMsg('b', 'large', pattern(300_000, 10))))
    await disk.stop()
    // The first batch commits; the second never reaches the kv: the process dies first.
    let batches = 0
    disk = await openDisk(dir, ({ kv, blobs }) => ({
      kv: {
        ...bind(kv),
        commit: (ops) => {
          if (!ops.some(isObjectDelete)) return kv.commit(ops)
          batches++
          return batches === 1 ? kv.commit(ops) : new Promise(() => undefined)
        },
      },
      blobs,
    }))
    void disk.send({ kind: 'bucket.delete', bucket: 'b', force: true })
    assert.ok(await pollUntil(() => batches === 2), 'the second batch was sent')
    await disk.crash()
    disk = await openDisk(dir)
    const left = 2100 - 1000
    // Every open's fake clock starts at the same time and stays there: createdMs is that time.
    assert.equal(value(await disk.send<BucketStats[]>({ kind: 'bucket.stats' }))[0], {
      name: 'b',
      createdMs: disk.ctx.now(),
      objectsCount: left + 1,
      storageUsedBytes: left * 12 + 300_000,
    })
    const whole = value(await disk.send<StoreStats>({ kind: 'system.stats' }))
    assert.equal([whole.objectsCount, whole.storageUsedBytes], [left + 1, left * 12 + 300_000])
    value(await disk.send({ kind: 'bucket.delete', bucket: 'b', force: true }))
    await idle(disk.state)
    assert.equal(await filesUnder(dir), [])
    assert.equal(value(await disk.send<StoreStats>({ kind: 'system.stats' })), {
      bucketsCount: 0,
      objectsCount: 0,
      storageUsedBytes: 0,
      uniqueBlobs: 0,
      totalReferences: 0,
    })
    await disk.stop()
  }))

function isObjectDelete(op: KvOp): boolean {
  return op.type === 'del' && op.key.startsWith('O\0')
}

/** Opens the store with effects that never complete, starts the flows they cut short, waits
 * until each reached its cut, and crashes:
 * 2. a put whose file was synced, but the process died before its metadata commit;
 * 3. a put cut off mid-stream;
 * 4. a delete that released a promoted blob whose file removal never ran.
 * Returns the cut-off upload's stream, for the test to close at the end. */
async function crashWithEffectsCutShort(dir: string): Promise<MemoryStream> {
  let newFileCommits = 0
  const disk = await openDisk(dir, ({ kv, blobs }) => ({
    // The commit that would make a new file blob live never happens.
    kv: {
      ...bind(kv),
      commit: (ops) => {
        if (!ops.some(isNewFile)) return kv.commit(ops)
        newFileCommits++
        return new Promise(() => undefined)
      },
    },
    blobs: { ...bind(blobs), remove: () => new Promise(() => undefined) },
  }))
  // Recovery in this init already promoted the committed file.
  assert.equal(await readdir(join(dir, 'tmp')), [])
  void disk.send(putMsg('b', 'never-committed', pattern(300_000, 5)))
  const cut = memoryStream()
  cut.push(pattern(STREAM_CHUNK_BYTES, 6))
  const stream = cut.handle
  const msg: Body = {
    kind: 'object.put',
    bucket: 'b',
    key: 'cut',
    http: HTTP,
    userMeta: {},
    expect: {},
    stream,
  }
  void disk.send(msg)
  value(await disk.send({ kind: 'object.delete', bucket: 'b', key: 'released' }))
  // The crash comes only once the first put is at its cut: its file synced and its commit sent.
  // Crashing while the file still syncs would leave that put running on a closed kv.
  const atCuts = await pollUntil(
    async () => newFileCommits === 1 && (await readdir(join(dir, 'tmp'))).length === 2,
  )
  assert.ok(atCuts, 'both puts reached their cuts')
  assert.is((await filesUnder(dir)).length, 2, 'released file still there')
  await disk.crash()
  return cut
}

function isNewFile(op: KvOp): boolean {
  return op.type === 'put' && op.key.startsWith('F\0')
}

/** An object whose methods stay bound to the original, so a wrapper can replace one of them. */
function bind<T extends object>(target: T): T {
  const bound: Record<string, unknown> = {}
  let proto: object | null = target
  while (proto !== null && proto !== Object.prototype) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const member = (target as Record<string, unknown>)[name]
      if (name !== 'constructor' && typeof member === 'function' && !(name in bound)) {
        bound[name] = (member as (...args: unknown[]) => unknown).bind(target)
      }
    }
    proto = Object.getPrototypeOf(proto) as object | null
  }
  return bound as T
}

test.run()
