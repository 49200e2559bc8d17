// Goal: cluster mode's stamped changes in the replica-store. A change newer than every change the
// store holds of its key applies (with the stamp's time and version id); an older one is stale:
// kept as an older version in an Enabled bucket, dropped elsewhere, and never moves a counter or
// reference wrongly; two replicas that get the same changes in any order hold the same records; a
// deletion (Q) or a delete by id (W) is never undone by a late copy. Stamped GETs say what a
// replica holds, listings carry write stamps, the point checks answer per item, and Replica.*
// calls of other nodes run only the object requests each method allows.
// Method: replica-store actors in this thread on fake contexts (as replica-store.test.ts); the
// records and counters are read back from the kv and checked against a recount.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import { stampToken } from '../../actors/replica-store/keys.js'
import { blobsOf, decodeBlob, decodeObject } from '../../actors/replica-store/records.js'
import { hlcString } from '../../protocol/hlc.js'
import type { Result } from '../../protocol/errors.js'
import type { PeerMethod } from '../../protocol/cluster.js'
import type {
  DeleteResult,
  GetResult,
  KeyHead,
  PartInfo,
  PutResult,
  StoreMsg,
  StoreStats,
  UploadState,
} from '../../protocol/messages.js'
import type { ListPage } from '../../protocol/objects.js'
import {
  clusterStore,
  code,
  idle,
  startStore,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'
import { fakeContext, memoryStream, type FakeContext } from '../support/fake-context.js'
import { fromPeer } from '../support/peer-boundary.js'

/** The wall clock of the stamps below: version tokens hold clocks of this century exactly. */
const T = 1_700_000_000_000

/** A stamp `ms` after T (node tag 7 unless named). */
function stamp(ms: number, logical = 0, node = 7): string {
  return hlcString({ wallMs: T + ms, logical, node })
}

const HTTP = { contentType: 'application/octet-stream' }
const decoder = new TextDecoder()

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text)
}

function put(bucket: string, key: string, body: string | Uint8Array, at?: string): Body {
  const data = typeof body === 'string' ? bytes(body) : body
  const stamped = at === undefined ? {} : { stamp: at }
  return {
    kind: 'object.put',
    bucket,
    key,
    http: HTTP,
    userMeta: {},
    expect: {},
    body: data,
    ...stamped,
  }
}

function large(seed: number): Uint8Array {
  const data = new Uint8Array(200_000)
  for (let index = 0; index < data.length; index++) data[index] = (index * 13 + seed) & 0xff
  return data
}

async function bucket(store: Store, name: string, status?: 'Enabled' | 'Suspended'): Promise<void> {
  value(await store.send({ kind: 'bucket.create', bucket: name }))
  if (status !== undefined) {
    value(await store.send({ kind: 'bucket.versioning.put', bucket: name, status }))
  }
}

async function getText(store: Store, bucket: string, key: string, versionId?: string) {
  const named = versionId === undefined ? {} : { versionId }
  const result = await store.send<GetResult>({
    kind: 'object.get',
    bucket,
    key,
    inline: true,
    ...named,
  })
  if (!result.ok) return result.code
  return 'marker' in result.value ? 'marker' : decoder.decode(result.value.body)
}

/** The records of a key range, JSON ones decoded (stamps and tokens are plain text). */
function rows(store: Store, from: string, to: string): [string, unknown][] {
  return store.ctx.kv.scan({ gte: from, lt: to, limit: 10_000 }).map(([key, stored]) => {
    const text = decoder.decode(stored)
    return [key, text.startsWith('{') ? (JSON.parse(text) as unknown) : text]
  })
}

function text(store: Store, key: string): string | undefined {
  const stored = store.ctx.kv.get(key)
  return stored === undefined ? undefined : decoder.decode(stored)
}

/** The counters and every blob's reference count agree with a recount of the records: objects
 * are O\0 rows, bytes the sizes of O\0, V\0 and P\0 rows, references the blobs they name. */
async function assertCounted(store: Store): Promise<void> {
  await idle(store.state)
  const objects = rows(store, 'O\0', 'O\x01')
  const records = [...objects, ...rows(store, 'V\0', 'V\x01')].map(([, record]) =>
    decodeObject(JSON.stringify(record)),
  )
  const parts = rows(store, 'P\0', 'P\x01').map(
    ([, part]) => part as { sha256: string; size: number },
  )
  const refs = new Map<string, number>()
  const refer = (sha256: string): void => void refs.set(sha256, (refs.get(sha256) ?? 0) + 1)
  for (const record of records) for (const blob of blobsOf(record)) refer(blob.sha256)
  for (const part of parts) refer(part.sha256)
  const blobs = store.ctx.kv.scan({ gte: 'H\0', lt: 'H\x01', limit: 10_000 })
  assert.equal(
    new Map(blobs.map(([key, stored]) => [key.slice(2), decodeBlob(stored).refs])),
    refs,
    'blob reference counts',
  )
  const stats = value(await store.send<StoreStats>({ kind: 'system.stats' }))
  const size = [...records, ...parts].reduce((sum, record) => sum + record.size, 0)
  assert.equal(
    [stats.objectsCount, stats.storageUsedBytes, stats.uniqueBlobs, stats.totalReferences],
    [objects.length, size, refs.size, [...refs.values()].reduce((sum, n) => sum + n, 0)],
    'store counters',
  )
}

// ---------------------------------------------------------------------------------------------

test('stampToken orders as stamps do, newest first, and is the same on every replica', () => {
  const ordered = [stamp(1000), stamp(1000, 1), stamp(1000, 1, 9), stamp(1000, 999), stamp(1001)]
  const tokens = ordered.map(stampToken)
  assert.equal([...tokens].sort(), [...tokens].reverse())
  assert.is(stampToken(stamp(1000)), stampToken(stamp(1000)))
  assert.ok(tokens.every((token) => !token.endsWith('ffffffff')))
})

test('a stale put: unversioned and Suspended drop it, Enabled keeps an older version', async () => {
  const store = await startStore()
  store.ctx.setNow(50_000)
  await bucket(store, 'plain')
  await bucket(store, 'enabled', 'Enabled')
  await bucket(store, 'suspended', 'Suspended')
  for (const name of ['plain', 'enabled', 'suspended']) {
    const newer = value(await store.send<PutResult>(put(name, 'k', 'newer', stamp(2000))))
    assert.is(newer.lastModifiedMs, T + 2000)
    assert.is(newer.stale, undefined)
    const older = value(await store.send<PutResult>(put(name, 'k', large(1), stamp(1000))))
    assert.is(older.stale, true, name)
    assert.is(older.lastModifiedMs, T + 1000)
    const expected = { plain: undefined, enabled: stampToken(stamp(1000)), suspended: 'null' }
    assert.is(older.versionId, expected[name as keyof typeof expected], name)
    assert.is(await getText(store, name, 'k'), 'newer', name)
    assert.is(text(store, `Q\0${name}\0k`), stamp(2000), name)
  }
  assert.is(newerId(store), stampToken(stamp(2000)))
  // Enabled: the stale version is there, older than the current one.
  const versions = rows(store, 'V\0enabled\0', 'V\0enabled\x01').map(([key]) => key.slice(-24))
  assert.equal(versions, [stampToken(stamp(1000))])
  // Its blob (a file) is the only one kept: the two dropped bodies left no file behind.
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 1)
  assert.is(store.ctx.blobs.temporary.size, 0)
  await assertCounted(store)
})

function newerId(store: Store): string | undefined {
  const current = text(store, 'O\0enabled\0k')
  return current === undefined ? undefined : decodeObject(bytes(current)).versionId
}

test('a put sent again with its own stamp is answered as applied and written once', async () => {
  const store = await startStore()
  await bucket(store, 'b', 'Enabled')
  const first = value(await store.send<PutResult>(put('b', 'k', 'body', stamp(3000))))
  const again = value(await store.send<PutResult>(put('b', 'k', 'body', stamp(3000))))
  assert.equal(again, first)
  assert.is(rows(store, 'V\0', 'V\x01').length, 0)
  await assertCounted(store)
})

/** Sends `changes` to a fresh store with bucket `b` (versioning as given), in order. */
async function replica(changes: Body[], status?: 'Enabled'): Promise<Store> {
  const store = await startStore()
  await bucket(store, 'b', status)
  for (const change of changes) value(await store.send(change))
  await assertCounted(store)
  return store
}

function keyRecords(store: Store): [string, unknown][] {
  return ['O', 'V', 'N', 'Q', 'W'].flatMap((kind) => rows(store, `${kind}\0b\0`, `${kind}\0b\x01`))
}

test('two replicas given the same puts in opposite orders hold the same records', async () => {
  for (const status of [undefined, 'Enabled'] as const) {
    const first = put('b', 'k', 'first', stamp(1000))
    const second = put('b', 'k', large(2), stamp(1000, 1))
    const inOrder = await replica([first, second], status)
    const reversed = await replica([second, first], status)
    assert.equal(keyRecords(reversed), keyRecords(inOrder), String(status))
    assert.is(await getText(inOrder, 'b', 'k'), await getText(reversed, 'b', 'k'))
    assert.ok(keyRecords(inOrder).length >= (status === undefined ? 2 : 3))
  }
})

test('a delete is not undone by a late put (Q), in any order, versioned or not', async () => {
  for (const status of [undefined, 'Enabled'] as const) {
    const created = put('b', 'k', 'created', stamp(1000))
    const late = put('b', 'k', 'late', stamp(2000))
    const deleted: Body = { kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(3000) }
    const store = await replica([created, deleted], status)
    const answer = value(await store.send<PutResult>(late))
    assert.is(answer.stale, true)
    assert.is(await getText(store, 'b', 'k'), status === undefined ? 'no_such_key' : 'marker')
    assert.is(text(store, 'Q\0b\0k'), stamp(3000))
    await assertCounted(store)
    const inOrder = await replica([created, late, deleted], status)
    assert.equal(keyRecords(store), keyRecords(inOrder), String(status))
    // A delete that arrives late is stale too: it neither deletes nor moves Q back.
    const again = await replica([created, late], status)
    const stale = value(
      await again.send<DeleteResult>({
        kind: 'object.delete',
        bucket: 'b',
        key: 'k',
        stamp: stamp(1500),
      }),
    )
    assert.is(stale.stale, true)
    assert.is(await getText(again, 'b', 'k'), 'late')
    assert.is(text(again, 'Q\0b\0k'), stamp(2000))
    await assertCounted(again)
  }
})

test('a version deleted by id is never written again by a late copy (W)', async () => {
  const store = await replica([put('b', 'k', 'kept', stamp(1000))], 'Enabled')
  const lateId = stampToken(stamp(2000))
  // The delete of a version this replica has not received yet.
  const removed = value(
    await store.send<DeleteResult>({
      kind: 'object.delete',
      bucket: 'b',
      key: 'k',
      versionId: lateId,
      stamp: stamp(3000),
    }),
  )
  assert.equal(removed, { versionId: lateId, deleteMarker: false })
  assert.is(text(store, `W\0b\0k\0${lateId}`), stamp(3000))
  const late = value(await store.send<PutResult>(put('b', 'k', 'late', stamp(2000))))
  assert.equal([late.stale, late.versionId], [true, lateId])
  assert.is(await getText(store, 'b', 'k', lateId), 'no_such_version')
  assert.is(await getText(store, 'b', 'k'), 'kept')
  const deleted = value(
    await store.send<boolean[]>({
      kind: 'object.versions-deleted',
      bucket: 'b',
      versions: [
        { key: 'k', versionId: lateId },
        { key: 'k', versionId: stampToken(stamp(1000)) },
        { key: 'k', versionId: 'null' },
        { key: 'other', versionId: lateId },
      ],
    }),
  )
  assert.equal(deleted, [true, false, false, false])
  await assertCounted(store)
})

test('a stale version inserted where the key has no current object becomes current', async () => {
  // The current version was deleted by id (Q raised past the late put), no marker is newer.
  const first = put('b', 'k', 'first', stamp(1000))
  const store = await replica([first], 'Enabled')
  const byId: Body = {
    kind: 'object.delete',
    bucket: 'b',
    key: 'k',
    versionId: stampToken(stamp(1000)),
    stamp: stamp(3000),
  }
  value(await store.send(byId))
  assert.is(await getText(store, 'b', 'k'), 'no_such_key')
  value(await store.send(put('b', 'k', 'late', stamp(2000))))
  assert.is(await getText(store, 'b', 'k'), 'late')
  await assertCounted(store)
  const inOrder = await replica([first, put('b', 'k', 'late', stamp(2000)), byId], 'Enabled')
  assert.equal(keyRecords(store), keyRecords(inOrder))
})

test('stamped GET: the key stamp with every answer, absent instead of not found', async () => {
  const store = await replica([put('b', 'k', 'body', stamp(1000))], 'Enabled')
  const get = (key: string, versionId?: string): Promise<Result<unknown>> =>
    store.send({
      kind: 'object.get',
      bucket: 'b',
      key,
      stamped: true,
      inline: true,
      ...(versionId === undefined ? {} : { versionId }),
    })
  const found = value(await get('k')) as GetResult
  assert.is(found.keyStamp, stamp(1000))
  assert.is(decoder.decode(found.body), 'body')
  assert.equal(value(await get('never')), { absent: true, keyStamp: null })
  assert.equal(value(await get('k', stampToken(stamp(5)))), { absent: true, keyStamp: stamp(1000) })
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(2000) }))
  const marker = value(await get('k')) as { marker: { versionId: string }; keyStamp: string }
  assert.equal([marker.marker.versionId, marker.keyStamp], [stampToken(stamp(2000)), stamp(2000)])
  const plain = await replica([put('b', 'k', 'body', stamp(1000))])
  value(await plain.send({ kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(2000) }))
  const gone = await plain.send({ kind: 'object.get', bucket: 'b', key: 'k', stamped: true })
  assert.equal(value(gone), { absent: true, keyStamp: stamp(2000) })
  // Without `stamped`, as before; and a missing bucket stays an error.
  assert.is(code(await plain.send({ kind: 'object.get', bucket: 'b', key: 'k' })), 'no_such_key')
  const noBucket = { kind: 'object.get', bucket: 'x', key: 'k', stamped: true } as const
  assert.is(code(await plain.send(noBucket)), 'no_such_bucket')
})

test('a tag change names its version, keeps the key stamp: later writes apply', async () => {
  const store = await replica([put('b', 'k', 'first', stamp(1000))])
  const retag = (versionStamp: string, at: string): Promise<Result<unknown>> =>
    store.send({
      kind: 'object.attributes.put',
      bucket: 'b',
      key: 'k',
      attributes: { tags: [{ key: 'a', value: at }] },
      stamp: at,
      versionStamp,
    })
  // Stamped above a concurrent write (another node's clock ahead), of the version it read.
  value(await retag(stamp(1000), stamp(3000)))
  assert.is(text(store, 'Q\0b\0k'), stamp(1000))
  const head = async (): Promise<GetResult> =>
    value(await store.send<GetResult>({ kind: 'object.get', bucket: 'b', key: 'k', stamped: true }))
  assert.equal([(await head()).keyStamp, (await head()).changeStamp], [stamp(1000), stamp(3000)])
  // The concurrent write lands after it, older than the change: it is the key's newer version.
  const later = value(await store.send<PutResult>(put('b', 'k', 'second', stamp(2000))))
  assert.is(later.stale, undefined)
  assert.is(await getText(store, 'b', 'k'), 'second')
  assert.equal([(await head()).keyStamp, (await head()).changeStamp], [stamp(2000), undefined])
  // A change of the version it replaced leaves this one as it is: the replica missed nothing.
  assert.is(code(await retag(stamp(1000), stamp(4000))), 'unavailable')
  const tags = value(
    await store.send<{ attributes: { tags?: unknown[] } }>({
      kind: 'object.attributes.get',
      bucket: 'b',
      key: 'k',
    }),
  )
  assert.equal(tags.attributes, {})
  await assertCounted(store)
})

test('a listing with stamps: each write stamp, an unstamped one read as its time', async () => {
  const store = await startStore()
  store.ctx.setNow(42_000)
  await bucket(store, 'b')
  value(await store.send(put('b', 'a', 'unstamped')))
  value(await store.send(put('b', 'b', 'stamped', stamp(7000, 3, 11))))
  const list = { kind: 'object.list', bucket: 'b', prefix: '', delimiter: '', after: '' } as const
  const page = value(await store.send<ListPage>({ ...list, maxKeys: 10, withStamps: true }))
  assert.equal(page.objects.stamps, [
    hlcString({ wallMs: 42_000, logical: 0, node: 0 }),
    stamp(7000, 3, 11),
  ])
  assert.equal(page.objects.lastModifiedMs, [42_000, T + 7000])
  const without = value(await store.send<ListPage>({ ...list, maxKeys: 10 }))
  assert.is(without.objects.stamps, undefined)
})

test('object.stamps and the bound of every point check', async () => {
  const store = await replica([put('b', 'k', 'body', stamp(1000))])
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'gone', stamp: stamp(2000) }))
  const stamps = await store.send<(string | null)[]>({
    kind: 'object.stamps',
    bucket: 'b',
    keys: ['k', 'gone', 'never'],
  })
  assert.equal(value(stamps), [stamp(1000), stamp(2000), null])
  // A listing's point check: each key's newest change and current object, with its stamp.
  value(await store.send(put('b', 'again', 'body', stamp(3000))))
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'again', stamp: stamp(2500) }))
  const heads = value(
    await store.send<KeyHead[]>({
      kind: 'object.heads',
      bucket: 'b',
      keys: ['k', 'gone', 'never', 'again'],
    }),
  )
  assert.equal(
    heads.map((head) => [head.stamp, head.object?.stamp ?? null, head.object?.size ?? null]),
    [
      [stamp(1000), stamp(1000), 4],
      [stamp(2000), null, null],
      [null, null, null],
      [stamp(3000), stamp(3000), 4],
    ],
  )
  assert.is(heads[0]?.object?.contentType, 'application/octet-stream')
  const many = Array.from({ length: 1001 }, (_, index) => `k${index}`)
  const checks: Body[] = [
    { kind: 'object.stamps', bucket: 'b', keys: many },
    {
      kind: 'object.versions-deleted',
      bucket: 'b',
      versions: many.map((key) => ({ key, versionId: 'null' })),
    },
    { kind: 'upload.states', bucket: 'b', uploadIds: many },
  ]
  for (const check of checks) assert.is(code(await store.send(check)), 'invalid_request')
  assert.is(
    value(await store.send<unknown[]>({ ...checks[0], keys: many.slice(1) } as Body)).length,
    1000,
  )
  const missing: Body = { kind: 'object.stamps', bucket: 'x', keys: ['k'] }
  assert.is(code(await store.send(missing)), 'no_such_bucket')
})

const UPLOAD_IDS = ['0'.repeat(31) + '1', '0'.repeat(31) + '2', '0'.repeat(31) + '3']

function create(uploadId: string, at: string): Body {
  return {
    kind: 'upload.create',
    bucket: 'b',
    key: 'k',
    http: HTTP,
    userMeta: {},
    uploadId,
    stamp: at,
  }
}

function part(uploadId: string, partNumber: number, body: string, at: string): Body {
  return {
    kind: 'upload.part',
    bucket: 'b',
    key: 'k',
    uploadId,
    partNumber,
    expect: {},
    body: bytes(body),
    stamp: at,
  }
}

async function states(store: Store, uploadIds: string[]): Promise<UploadState[]> {
  return value(await store.send<UploadState[]>({ kind: 'upload.states', bucket: 'b', uploadIds }))
}

test('stamped uploads: chosen id and time, parts by stamp, open, ended, unknown', async () => {
  const ctx = fakeContext({ config: { SVC_MULTIPART_EXPIRY_HOURS: '0.01' } })
  const store = await startStore(ctx)
  // Near the clock (the expiry sweep's timers run on it): stamps a second before now.
  const at = (ms: number): string =>
    hlcString({ wallMs: ctx.now() - 10_000 + ms, logical: 0, node: 7 })
  const base = ctx.now() - 10_000
  await bucket(store, 'b')
  const [open, completed, aborted] = UPLOAD_IDS as [string, string, string]
  for (const id of UPLOAD_IDS) {
    assert.equal(value(await store.send(create(id, at(9000)))), { uploadId: id })
  }
  // Sent again: the same id, nothing new.
  assert.equal(value(await store.send(create(open, at(9000)))), { uploadId: open })
  const bad = await store.send({ ...create(open, at(9000)), uploadId: 'nope' } as Body)
  assert.is(code(bad), 'invalid_request')
  const newer = value(await store.send<PartInfo>(part(completed, 1, 'newer', at(9500))))
  assert.equal([newer.stamp, newer.lastModifiedMs], [at(9500), base + 9500])
  const older = value(await store.send<PartInfo>(part(completed, 1, 'older', at(9400))))
  assert.equal(older, newer)
  const done = value(
    await store.send<PutResult>({
      kind: 'upload.complete',
      bucket: 'b',
      key: 'k',
      uploadId: completed,
      parts: [{ partNumber: 1, etag: newer.etag }],
      stamp: at(9600),
    }),
  )
  assert.equal([done.lastModifiedMs, done.stale], [base + 9600, undefined])
  assert.is(await getText(store, 'b', 'k'), 'newer')
  const abort = { kind: 'upload.abort', bucket: 'b', key: 'k', uploadId: aborted } as const
  value(await store.send({ ...abort, stamp: at(9700) }))
  assert.equal(await states(store, [open, completed, aborted, 'f'.repeat(32), 'x']), [
    'open',
    'ended',
    'ended',
    'unknown',
    'unknown',
  ])
  // A late create of the aborted upload does not bring it back.
  value(await store.send(create(aborted, at(9000))))
  assert.equal(await states(store, [aborted]), ['ended'])
  await assertCounted(store)
  // The ended uploads' records expire with the sweep; the open one expires as an upload.
  ctx.advance(60_000)
  await idle(store.state)
  ctx.advance(60_000)
  await idle(store.state)
  assert.equal(await states(store, [open, completed, aborted]), ['unknown', 'unknown', 'unknown'])
})

test('a stale complete frees its parts in an unversioned bucket', async () => {
  const store = await replica([put('b', 'k', 'newest', stamp(5000))])
  const [id] = UPLOAD_IDS as [string]
  value(await store.send(create(id, stamp(1000))))
  const uploaded = value(await store.send<PartInfo>(part(id, 1, 'part body', stamp(1100))))
  const done = value(
    await store.send<PutResult>({
      kind: 'upload.complete',
      bucket: 'b',
      key: 'k',
      uploadId: id,
      parts: [{ partNumber: 1, etag: uploaded.etag }],
      stamp: stamp(1200),
    }),
  )
  assert.equal([done.stale, done.lastModifiedMs], [true, T + 1200])
  assert.is(await getText(store, 'b', 'k'), 'newest')
  assert.equal(rows(store, 'P\0', 'P\x01'), [])
  await assertCounted(store)
  assert.equal(await states(store, [id]), ['ended'])
})

test('a bucket delete removes its tombstones with it', async () => {
  const store = await replica([put('b', 'k', 'body', stamp(1000))], 'Enabled')
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(2000) }))
  const byId = { kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(3000) } as const
  value(await store.send({ ...byId, versionId: stampToken(stamp(9)) }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'b', force: true }))
  assert.equal(keyRecords(store), [])
  // Unforced: tombstones alone do not keep a bucket from being empty.
  const plain = await replica([{ kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(1) }])
  value(await plain.send({ kind: 'bucket.delete', bucket: 'b' }))
  assert.equal(keyRecords(plain), [])
})

test('stamps are checked before anything is read', async () => {
  const store = await replica([])
  const early = hlcString({ wallMs: 1000, logical: 0, node: 7 })
  for (const bad of ['zz', stamp(1000, 1000), stamp(1000).toUpperCase(), early]) {
    assert.is(code(await store.send(put('b', 'k', 'x', bad))), 'invalid_request', bad)
    const deleted = { kind: 'object.delete', bucket: 'b', key: 'k', stamp: bad } as const
    assert.is(code(await store.send(deleted)), 'invalid_request')
  }
  assert.equal(keyRecords(store), [])
})

test('Replica.Op, Write and Read run the object requests each allows, nothing else', async () => {
  const store = await clusterStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const refused: [PeerMethod, unknown][] = [
    ['Replica.Op', { msg: { kind: 'system.get', bucket: 'b', name: 'x' } }],
    ['Replica.Op', { msg: { kind: 'bucket.delete', bucket: 'b' } }],
    ['Replica.Op', { msg: { kind: 'peer.request', bucket: 'b' } }],
    ['Replica.Op', { msg: { ...put('b', 'k', 'x', stamp(1)) } }],
    ['Replica.Op', { msg: { kind: 'object.delete', bucket: '', key: 'k' } }],
    ['Replica.Op', { msg: { kind: 'object.delete', bucket: 'b', key: 7 } }],
    ['Replica.Op', { msg: { kind: 'object.stamps', bucket: 'b', keys: 'k' } }],
    ['Replica.Op', { msg: { kind: 'object.heads', bucket: 'b', keys: [7] } }],
    ['Replica.Op', { msg: { kind: 'object.list', bucket: 'b', prefix: '' } }],
    ['Replica.Op', { msg: 'object.get' }],
    ['Replica.Op', null],
    ['Replica.Write', { msg: { kind: 'object.get', bucket: 'b', key: 'k' } }],
    ['Replica.Read', { msg: { kind: 'object.delete', bucket: 'b', key: 'k' } }],
  ]
  // Refused at the boundary, by each method's schema: the store never sees them.
  for (const [method, body] of refused) {
    const stream = method === 'Replica.Op' ? undefined : memoryStream().handle
    const answer = await fromPeer(store, method, body, stream)
    assert.is(code(answer), 'invalid_argument', JSON.stringify(body))
  }
  // Write: the bytes come on the call's stream (an inline body in the message is not taken).
  const { body: _inline, ...header } = put('b', 'k', 'ignored', stamp(2000)) as { body: unknown }
  const noStream = await fromPeer(store, 'Replica.Write', { msg: header })
  assert.is(code(noStream), 'invalid_request')
  const bytesIn = memoryStream()
  bytesIn.push(bytes('over the wire'))
  bytesIn.end()
  const written = await fromPeer<PutResult>(store, 'Replica.Write', { msg: header }, bytesIn.handle)
  assert.is(value(written).lastModifiedMs, T + 2000)
  // Read: the bytes go back on the call's stream once asked for.
  const bytesOut = memoryStream()
  const getMsg = { kind: 'object.get', bucket: 'b', key: 'k', stamped: true }
  const head = value(
    await fromPeer<GetResult>(
      store,
      'Replica.Read',
      { msg: getMsg, range: { start: 0, end: 3 } },
      bytesOut.handle,
    ),
  )
  assert.is(head.keyStamp, stamp(2000))
  if (head.body === undefined) {
    bytesOut.request(0, 3)
    assert.is(decoder.decode((await bytesOut.received()).bytes), 'over')
  } else {
    assert.is(decoder.decode(head.body), 'over the wire')
  }
  // Op: a stamped delete, then the key's stamp.
  const op = { kind: 'object.delete', bucket: 'b', key: 'k', stamp: stamp(3000) }
  value(await fromPeer(store, 'Replica.Op', { msg: op }))
  const stamps = { kind: 'object.stamps', bucket: 'b', keys: ['k'] }
  assert.equal(value(await fromPeer(store, 'Replica.Op', { msg: stamps })), [stamp(3000)])
  // A node not in cluster mode serves no peer call.
  const single = await startStore()
  assert.is(code(await fromPeer(single, 'Replica.Op', { msg: stamps })), 'invalid_request')
})

test.run()
