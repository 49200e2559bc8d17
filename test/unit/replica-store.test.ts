// Goal: the replica-store actor implements the object protocol (buckets, put/get/delete/copy/list,
// system records, stats) with content-addressed, reference-counted blobs, verifies every digest
// before commit, serialises concurrent mutations without losing updates, and recovers after a
// crash. It runs without threads: every effect goes through the fake context.
// Method: drive replicaStore.init/handle/stop against test/support/fake-context.ts (in-memory kv
// with pending-commit semantics, in-memory blob files, memory streams), then look at replies, the
// records and the files. Not covered here: the 5 GiB single-PUT limit (feeding 5 GiB through the
// hashes takes tens of seconds; the check is one comparison in put.ts's `accept`).
import { createHash } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { coordinator } from '../../actors/coordinator/coordinator.js'
import { FORCE_DELETE_BATCH_OBJECTS } from '../../actors/replica-store/engine/buckets.js'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import { compareUtf8 } from '../../protocol/key-order.js'
import { successor } from '../../actors/replica-store/keys.js'
import { SYSTEM_RECORDS_LISTED_MAX } from '../../actors/replica-store/system/system.js'
import { Mutation } from '../../actors/replica-store/mutation.js'
import { handle, type KvOp, type KvStore } from '../../protocol/actor.js'
import { checksumBase64 } from '../../protocol/checksums.js'
import { BodyHasher } from '../../protocol/body-hasher.js'
import { evaluateConditions } from '../../protocol/s3-rules/conditions.js'
import { fail, ServiceError, type Result } from '../../protocol/errors.js'
import { INLINE_BLOB_BYTES_MAX, STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import type {
  BucketStats,
  CoordinatorMsg,
  DeleteManyResult,
  GetResult,
  PutResult,
  StoreMsg,
  StoreStats,
  SystemRecord,
} from '../../protocol/messages.js'
import type {
  BodyDigests,
  BucketInfo,
  BucketListing,
  Expectations,
  ListPage,
} from '../../protocol/objects.js'
import { objectAt, objectSummaries } from '../../protocol/object-columns.js'
import {
  code,
  idle,
  startStore,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'
import {
  fakeContext,
  memoryStream,
  MemoryStream,
  type FakeContext,
  MemoryKv,
} from '../support/fake-context.js'

/** Once background work is done: no bucket, object, blob or reference counted, no blob file,
 * and no record in the key range [from, to). */
async function assertNothingStored(store: Store, from: string, to: string): Promise<void> {
  await idle(store.state)
  assert.equal(await stats(store), {
    bucketsCount: 0,
    objectsCount: 0,
    storageUsedBytes: 0,
    uniqueBlobs: 0,
    totalReferences: 0,
  })
  assert.is(store.ctx.blobs.permanent.size, 0)
  assert.equal(store.ctx.kv.scan({ gte: from, lt: to, limit: 10 }), [])
}

function pattern(size: number, seed = 0): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let index = 0; index < size; index++)
    bytes[index] = (index * 31 + seed * 7 + (index >> 8)) & 0xff
  return bytes
}

function md5Base64(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('base64')
}

function etagOf(bytes: Uint8Array): string {
  return `"${createHash('md5').update(bytes).digest('hex')}"`
}

const HTTP = { contentType: 'application/octet-stream' }

function putBody(bucket: string, key: string, body: Uint8Array, expect: Expectations = {}): Body {
  return { kind: 'object.put', bucket, key, http: HTTP, userMeta: {}, expect, body }
}

/** A streamed put whose bytes are already queued on its stream, in STREAM_CHUNK_BYTES chunks. */
function putStream(
  bucket: string,
  key: string,
  body: Uint8Array,
  expect: Expectations = {},
  trailers: Record<string, string> = {},
): { msg: Body; stream: MemoryStream } {
  const stream = memoryStream()
  for (let offset = 0; offset < body.byteLength; offset += STREAM_CHUNK_BYTES) {
    stream.push(body.subarray(offset, offset + STREAM_CHUNK_BYTES))
  }
  stream.end(trailers)
  const msg: Body = {
    kind: 'object.put',
    bucket,
    key,
    http: HTTP,
    userMeta: {},
    expect,
    stream: stream.handle,
  }
  return { msg, stream }
}

/** GET with a stream, then ask for `range` (default: all) and collect what arrives. */
async function getBytes(
  store: Store,
  bucket: string,
  key: string,
  range?: { start: number; end: number },
): Promise<{ info: GetResult['info']; bytes: Uint8Array; outcome: string }> {
  const stream = memoryStream()
  const result = await store.send<GetResult>({
    kind: 'object.get',
    bucket,
    key,
    stream: stream.handle,
  })
  const reply = value(result)
  if (reply.body !== undefined) {
    const { start, end } = range ?? { start: 0, end: reply.body.byteLength - 1 }
    return { info: reply.info, bytes: reply.body.subarray(start, end + 1), outcome: 'inline' }
  }
  stream.request(range?.start ?? 0, range?.end ?? reply.info.size - 1)
  const received = await stream.received()
  return {
    info: reply.info,
    bytes: received.bytes,
    outcome: received.ended ? 'ended' : received.code,
  }
}

async function stats(store: Store): Promise<StoreStats> {
  return value(await store.send<StoreStats>({ kind: 'system.stats' }))
}

// ---------------------------------------------------------------------------------------------

test('buckets: create, conflict, head, list in name order, delete', async () => {
  const store = await startStore()
  store.ctx.setNow(1_000_000)
  assert.equal(value(await store.send<BucketInfo>({ kind: 'bucket.create', bucket: 'zeta' })), {
    name: 'zeta',
    createdMs: 1_000_000,
  })
  store.ctx.advance(5)
  value(await store.send({ kind: 'bucket.create', bucket: 'alpha' }))
  assert.is(code(await store.send({ kind: 'bucket.create', bucket: 'alpha' })), 'bucket_exists')
  assert.equal(value(await store.send({ kind: 'bucket.head', bucket: 'alpha' })), {
    name: 'alpha',
    createdMs: 1_000_005,
  })
  assert.is(code(await store.send({ kind: 'bucket.head', bucket: 'nope' })), 'no_such_bucket')
  const listed = value(
    await store.send<BucketListing>({
      kind: 'bucket.list',
      owner: null,
      prefix: '',
      after: '',
      limit: 1000,
    }),
  )
  assert.equal(
    listed.buckets.map((bucket) => bucket.name),
    ['alpha', 'zeta'],
  )
  value(await store.send(putBody('alpha', 'k', pattern(10))))
  assert.is(code(await store.send({ kind: 'bucket.delete', bucket: 'alpha' })), 'bucket_not_empty')
  assert.is(code(await store.send({ kind: 'bucket.delete', bucket: 'nope' })), 'no_such_bucket')
  value(await store.send({ kind: 'object.delete', bucket: 'alpha', key: 'k' }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'alpha' }))
  assert.is(code(await store.send({ kind: 'bucket.head', bucket: 'alpha' })), 'no_such_bucket')
  assert.is((await stats(store)).bucketsCount, 1)
})

test('buckets: owners, conflicts by owner, listing pages by owner, prefix and marker', async () => {
  const store = await startStore()
  const owners: [string, string][] = [
    ['a-1', 'ann'],
    ['a-2', 'bob'],
    ['a-3', 'ann'],
    ['b-1', 'ann'],
  ]
  for (const [bucket, owner] of owners) {
    value(await store.send({ kind: 'bucket.create', bucket, owner }))
  }
  value(await store.send({ kind: 'bucket.create', bucket: 'a-0' })) // nobody's, as before owners
  const create = { kind: 'bucket.create', bucket: 'a-1' } as const
  assert.is(code(await store.send({ ...create, owner: 'ann' })), 'bucket_owned_by_you')
  assert.is(code(await store.send({ ...create, owner: 'bob' })), 'bucket_exists')
  assert.is(code(await store.send({ ...create, bucket: 'a-0', owner: 'ann' })), 'bucket_exists')
  const list = async (owner: string | null, prefix: string, after: string, limit: number) => {
    const listing = value(
      await store.send<BucketListing>({ kind: 'bucket.list', owner, prefix, after, limit }),
    )
    return [listing.buckets.map((bucket) => bucket.name).join(','), listing.truncated]
  }
  assert.equal(await list('ann', '', '', 10), ['a-0,a-1,a-3,b-1', false])
  assert.equal(await list('bob', '', '', 10), ['a-0,a-2', false])
  assert.equal(await list(null, '', '', 10), ['a-0,a-1,a-2,a-3,b-1', false])
  assert.equal(await list('ann', 'a-', '', 2), ['a-0,a-1', true])
  assert.equal(await list('ann', 'a-', 'a-1', 2), ['a-3', false])
  assert.equal(await list(null, 'a-', 'a-3', 2), ['', false])
  assert.equal(await list(null, 'b', '', 1), ['b-1', false])
})

test('small put and get: inline body, ETag, metadata; HEAD has no body; no files', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(1000)
  const msg: Body = {
    kind: 'object.put',
    bucket: 'b',
    key: 'dir/../odd//key\u0001',
    http: { contentType: 'text/plain', cacheControl: 'no-cache' },
    userMeta: { color: 'blue' },
    expect: {
      md5Base64: md5Base64(body),
      size: 1000,
      checksums: { crc32: await checksumBase64('crc32', body) },
    },
    body,
  }
  const put = value(await store.send<PutResult>(msg))
  assert.is(put.etag, etagOf(body))
  assert.is(put.lastModifiedMs, store.ctx.now())
  assert.equal(put.checksums, { crc32: await checksumBase64('crc32', body) })
  const got = await getBytes(store, 'b', 'dir/../odd//key\u0001')
  assert.is(got.outcome, 'inline')
  assert.equal([...got.bytes], [...body])
  assert.equal(got.info, {
    key: 'dir/../odd//key\u0001',
    size: 1000,
    etag: etagOf(body),
    lastModifiedMs: put.lastModifiedMs,
    http: { contentType: 'text/plain', cacheControl: 'no-cache' },
    userMeta: { color: 'blue' },
    checksums: { crc32: await checksumBase64('crc32', body) },
  })
  const head = value(
    await store.send<GetResult>({ kind: 'object.get', bucket: 'b', key: 'dir/../odd//key\u0001' }),
  )
  assert.is(head.body, undefined)
  assert.is(head.info.size, 1000)
  assert.is(store.ctx.blobs.permanent.size + store.ctx.blobs.temporary.size, 0)
  assert.is(
    code(await store.send({ kind: 'object.get', bucket: 'b', key: 'missing' })),
    'no_such_key',
  )
  assert.is(code(await store.send({ kind: 'object.get', bucket: 'x', key: 'k' })), 'no_such_bucket')
  // An empty object is an inline blob of zero bytes.
  value(await store.send(putBody('b', 'empty', new Uint8Array(0))))
  const empty = await getBytes(store, 'b', 'empty')
  assert.is(empty.bytes.byteLength, 0)
  assert.is(empty.info.etag, '"d41d8cd98f00b204e9800998ecf8427e"')
})

test('large streamed put: spills to a file; GET streams whole and ranged reads', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(3 * STREAM_CHUNK_BYTES + 12_345, 1)
  const { msg } = putStream('b', 'big', body, { size: body.byteLength, md5Base64: md5Base64(body) })
  const put = value(await store.send<PutResult>(msg))
  assert.is(put.etag, etagOf(body))
  await idle(store.state)
  assert.is(store.ctx.blobs.temporary.size, 0)
  assert.is(store.ctx.blobs.permanent.size, 1)
  const whole = await getBytes(store, 'b', 'big')
  assert.is(whole.outcome, 'ended')
  assert.ok(Buffer.from(whole.bytes).equals(Buffer.from(body)))
  const range = { start: STREAM_CHUNK_BYTES - 10, end: 2 * STREAM_CHUNK_BYTES + 10 }
  const ranged = await getBytes(store, 'b', 'big', range)
  assert.is(ranged.outcome, 'ended')
  assert.ok(
    Buffer.from(ranged.bytes).equals(Buffer.from(body.subarray(range.start, range.end + 1))),
  )
  const past = await getBytes(store, 'b', 'big', { start: 0, end: body.byteLength })
  assert.is(past.outcome, 'invalid_range')
  await idle(store.state)
  assert.is(store.ctx.blobs.openReaders, 0)
})

test('a sender that hashes its stream with MD5: the ETag and Content-MD5 use it', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(2 * STREAM_CHUNK_BYTES + 7, 4)
  const digest = createHash('md5').update(body).digest('hex')
  const sent = (expect: Expectations, md5Hex: string | undefined): Body => {
    const { msg, stream } = putStream('b', 'k', body, expect)
    stream.end({}, md5Hex)
    assert.ok(msg.kind === 'object.put')
    return { ...msg, streamMd5: true }
  }
  const put = value(await store.send<PutResult>(sent({ md5Base64: md5Base64(body) }, digest)))
  assert.is(put.etag, etagOf(body))
  // The store takes the sender's word: a different digest is what Content-MD5 is checked against.
  const wrong = createHash('md5').update('other').digest('hex')
  assert.is(code(await store.send(sent({ md5Base64: md5Base64(body) }, wrong))), 'bad_digest')
  // A sender that promised a digest and ended without one fails the put, leaving nothing.
  assert.is(code(await store.send(sent({}, undefined))), 'internal')
  await idle(store.state)
  assert.is(store.ctx.blobs.temporary.size, 0)
  assert.is(store.ctx.blobs.permanent.size, 1)
})

test('a body just over the inline bound goes to a file; at the bound it stays inline', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(putBody('b', 'at', pattern(INLINE_BLOB_BYTES_MAX, 2))))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 0)
  value(await store.send(putStream('b', 'over', pattern(INLINE_BLOB_BYTES_MAX + 1, 2)).msg))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 1)
  const over = await getBytes(store, 'b', 'over')
  assert.ok(Buffer.from(over.bytes).equals(Buffer.from(pattern(INLINE_BLOB_BYTES_MAX + 1, 2))))
})

test('an inline body its sender hashed: its digests are used, on a single node only', async () => {
  const body = pattern(3000, 5)
  const hasher = new BodyHasher(['crc32c'], true)
  hasher.update(body)
  const digests = await hasher.digests()
  const put = (expect: Expectations, sent: BodyDigests): Body => ({
    kind: 'object.put',
    bucket: 'b',
    key: 'hashed',
    http: HTTP,
    userMeta: {},
    expect,
    body,
    digests: sent,
  })
  const crc32c = await checksumBase64('crc32c', body)
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const stored = value(await store.send<PutResult>(put({ checksums: { crc32c } }, digests)))
  assert.is(stored.etag, etagOf(body))
  assert.equal(stored.checksums, { crc32c })
  assert.equal([...(await getBytes(store, 'b', 'hashed')).bytes], [...body])
  // Digests are checked against the expectations as the store's own would be.
  const wrong = { ...digests, checksums: { crc32c: 'AAAAAA==' } }
  assert.is(codeOf(await store.send(put({ checksums: { crc32c } }, wrong))), 'checksum_mismatch')
  const other = { ...digests, size: digests.size + 1 }
  assert.is(codeOf(await store.send(put({}, other))), 'invalid_request')
  // A cluster's store takes bodies from other nodes: it hashes every one itself.
  const cluster = await startStore(fakeContext({ config: { SVC_MODE: 'cluster' } }))
  assert.is(codeOf(await cluster.send(put({}, digests))), 'invalid_request')
})

function codeOf(result: Result<unknown>): string {
  return result.ok ? 'ok' : result.code
}

test('failed verification: the right code, nothing visible, no file left', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(200_000, 3)
  const sha256 = createHash('sha256').update(body).digest('hex')
  const cases: [Expectations, Record<string, string>, string][] = [
    [{ size: body.byteLength + 1 }, {}, 'incomplete_body'],
    [{ size: body.byteLength - 1 }, {}, 'incomplete_body'],
    [{ md5Base64: md5Base64(pattern(5)) }, {}, 'bad_digest'],
    [
      { sha256Hex: sha256.replace(/^./, sha256[0] === '0' ? '1' : '0') },
      {},
      'content_sha256_mismatch',
    ],
    [{ checksums: { crc32: 'AAAAAA==' } }, {}, 'checksum_mismatch'],
    [{ checksums: { crc32c: '' } }, { 'x-amz-checksum-crc32c': 'AAAAAA==' }, 'checksum_mismatch'],
    [{ checksums: { sha1: '' } }, {}, 'incomplete_body'],
    [{}, { 'x-amz-checksum-crc32': 'AAAAAA==' }, 'checksum_mismatch'],
  ]
  for (const [expect, trailers, expected] of cases) {
    const { msg } = putStream('b', 'k', body, expect, trailers)
    assert.is(code(await store.send(msg)), expected, JSON.stringify(expect))
  }
  const small = pattern(10)
  assert.is(
    code(await store.send(putBody('b', 's', small, { md5Base64: md5Base64(body) }))),
    'bad_digest',
  )
  assert.is(code(await store.send(putBody('b', 's', small, { size: 11 }))), 'incomplete_body')
  await idle(store.state)
  assert.is(code(await store.send({ kind: 'object.get', bucket: 'b', key: 'k' })), 'no_such_key')
  assert.is(store.ctx.blobs.temporary.size + store.ctx.blobs.permanent.size, 0)
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 0,
    storageUsedBytes: 0,
    uniqueBlobs: 0,
    totalReferences: 0,
  })
})

test('checksums: header and trailer values verified and stored, every algorithm', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(300_000, 4)
  const expected = {
    crc32: await checksumBase64('crc32', body),
    crc32c: await checksumBase64('crc32c', body),
    sha1: await checksumBase64('sha1', body),
    sha256: await checksumBase64('sha256', body),
  }
  const trailers = {
    'X-Amz-Checksum-Crc32c': expected.crc32c,
    'x-amz-checksum-sha1': expected.sha1,
  }
  const expect: Expectations = {
    sha256Hex: createHash('sha256').update(body).digest('hex'),
    checksums: { crc32: expected.crc32, crc32c: '', sha1: '', sha256: expected.sha256 },
  }
  const put = value(await store.send<PutResult>(putStream('b', 'k', body, expect, trailers).msg))
  assert.equal(put.checksums, expected)
  const head = value(await store.send<GetResult>({ kind: 'object.get', bucket: 'b', key: 'k' }))
  assert.equal(head.info.checksums, expected)
})

test('a sender abort fails the put with its code and discards the temporary file', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const stream = memoryStream()
  stream.push(pattern(STREAM_CHUNK_BYTES))
  const msg: Body = {
    kind: 'object.put',
    bucket: 'b',
    key: 'k',
    http: HTTP,
    userMeta: {},
    expect: {},
    stream: stream.handle,
  }
  const pending = store.send(msg)
  await new Promise((resolve) => setImmediate(resolve))
  assert.is(store.ctx.blobs.temporary.size, 1)
  stream.abort('timeout', 'client went quiet')
  assert.is(code(await pending), 'timeout')
  assert.is(store.ctx.blobs.temporary.size, 0)
  // A put to a missing bucket cancels its stream.
  const orphan = putStream('nope', 'k', pattern(10))
  assert.is(code(await store.send(orphan.msg)), 'no_such_bucket')
  assert.is(orphan.stream.cancelled?.code, 'no_such_bucket')
})

test('dedup: same bytes twice take one file, which goes with the last reference', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(500_000, 5)
  value(await store.send(putStream('b', 'one', body).msg))
  value(await store.send(putStream('b', 'two', body).msg))
  value(await store.send(putBody('b', 'small-1', pattern(100, 6))))
  value(await store.send(putBody('b', 'small-2', pattern(100, 6))))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 1)
  assert.is(store.ctx.blobs.temporary.size, 0)
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 4,
    storageUsedBytes: 2 * 500_000 + 200,
    uniqueBlobs: 2,
    totalReferences: 4,
  })
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'one' }))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 1)
  assert.ok(Buffer.from((await getBytes(store, 'b', 'two')).bytes).equals(Buffer.from(body)))
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'two' }))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 0)
  assert.equal(store.ctx.kv.scan({ gte: 'G\0', lt: 'G\x01', limit: 10 }), [])
  assert.equal(store.ctx.kv.scan({ gte: 'F\0', lt: 'F\x01', limit: 10 }), [])
  const after = await stats(store)
  assert.equal([after.objectsCount, after.uniqueBlobs, after.totalReferences], [2, 1, 2])
})

test('overwrite: the old blob is released, counters follow the new size', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(putStream('b', 'k', pattern(400_000, 7)).msg))
  value(await store.send(putStream('b', 'k', pattern(300_000, 8)).msg))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 1)
  value(await store.send(putBody('b', 'k', pattern(10, 9))))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 0)
  // Overwriting an object with its own bytes keeps the blob alive.
  value(await store.send(putBody('b', 'k', pattern(10, 9))))
  assert.equal((await getBytes(store, 'b', 'k')).bytes, pattern(10, 9))
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 1,
    storageUsedBytes: 10,
    uniqueBlobs: 1,
    totalReferences: 1,
  })
})

test('concurrent puts of one key: the later commit wins, no reference is lost', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const bodies = [pattern(200_000, 10), pattern(200_000, 11), pattern(20, 12), pattern(200_000, 10)]
  const streams = bodies.map(() => memoryStream())
  const replies = streams.map((stream) =>
    store.send<PutResult>({
      kind: 'object.put',
      bucket: 'b',
      key: 'k',
      http: HTTP,
      userMeta: {},
      expect: {},
      stream: stream.handle,
    }),
  )
  // Interleave the uploads, and finish them in reverse order.
  for (let offset = 0; offset < 200_000; offset += 50_000) {
    streams.forEach((stream, index) => {
      const slice = (bodies[index] as Uint8Array).subarray(offset, offset + 50_000)
      if (slice.byteLength > 0) stream.push(slice)
    })
    await new Promise((resolve) => setImmediate(resolve))
  }
  for (const stream of [...streams].reverse()) {
    stream.end()
    await new Promise((resolve) => setImmediate(resolve))
  }
  const results = await Promise.all(replies)
  results.forEach((result) => value(result))
  await idle(store.state)
  const winner = (await getBytes(store, 'b', 'k')).bytes
  assert.ok(
    Buffer.from(winner).equals(Buffer.from(bodies[0] as Uint8Array)),
    'first stream ended last',
  )
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 1,
    storageUsedBytes: 200_000,
    uniqueBlobs: 1,
    totalReferences: 1,
  })
  assert.is(store.ctx.blobs.permanent.size, 1)
  assert.is(store.ctx.blobs.temporary.size, 0)
})

test('a put is acknowledged only once its batch is durable', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  store.ctx.kv.pause()
  let acknowledged = false
  const pending = store.send(putBody('b', 'k', pattern(10))).then((result) => {
    acknowledged = true
    return result
  })
  await new Promise((resolve) => setImmediate(resolve))
  assert.not.ok(acknowledged)
  // Visible to readers already (the contract: reads see commits in flight).
  assert.is(
    value(await store.send<GetResult>({ kind: 'object.get', bucket: 'b', key: 'k' })).info.size,
    10,
  )
  store.ctx.kv.resume()
  value(await pending)
  assert.ok(acknowledged)
})

test('corruption: a flipped bit fails a whole read, and then every read of that blob', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(600_000, 13)
  value(await store.send(putStream('b', 'k', body).msg))
  await idle(store.state)
  const [fileId] = [...store.ctx.blobs.permanent.keys()]
  assert.ok(fileId !== undefined)
  store.ctx.blobs.corrupt(fileId, 599_999)
  // A range cannot be checked against the whole blob's CRC32: before the damage is known, it
  // serves.
  const before = await getBytes(store, 'b', 'k', { start: 0, end: 1000 })
  assert.is(before.outcome, 'ended')
  const whole = await getBytes(store, 'b', 'k')
  assert.is(whole.outcome, 'corrupt')
  assert.ok(whole.bytes.byteLength < body.byteLength, 'the last chunk is held back')
  // Known damaged from then on: no byte of it is served until the scrubber heals or clears it.
  const small = await store.send({ kind: 'object.get', bucket: 'b', key: 'k' })
  assert.is(code(small), 'ok', 'the head still answers')
  const after = memoryStream()
  const ranged = await store.send({
    kind: 'object.get',
    bucket: 'b',
    key: 'k',
    stream: after.handle,
  })
  assert.is(code(ranged), 'corrupt')
  // Inline blobs are checked on every read.
  value(await store.send(putBody('b', 'small', pattern(50))))
  const sha = createHash('sha256').update(pattern(50)).digest('hex')
  const stored = store.ctx.kv.get(`D\0${sha}`)
  assert.ok(stored !== undefined)
  stored[0] = (stored[0] ?? 0) ^ 1
  const inline = memoryStream()
  assert.is(
    code(
      await store.send({ kind: 'object.get', bucket: 'b', key: 'small', stream: inline.handle }),
    ),
    'corrupt',
  )
  await idle(store.state)
  assert.is(store.ctx.blobs.openReaders, 0)
})

test('a GET whose receiver cancels closes its reader', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(putStream('b', 'k', pattern(300_000)).msg))
  const stream = memoryStream()
  value(await store.send({ kind: 'object.get', bucket: 'b', key: 'k', stream: stream.handle }))
  assert.is(store.ctx.blobs.openReaders, 1)
  stream.cancel()
  await idle(store.state)
  assert.is(store.ctx.blobs.openReaders, 0)
})

test('a GET keeps reading a blob that an overwrite released meanwhile', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(300_000, 14)
  value(await store.send(putStream('b', 'k', body).msg))
  await idle(store.state)
  const stream = memoryStream()
  value(await store.send({ kind: 'object.get', bucket: 'b', key: 'k', stream: stream.handle }))
  value(await store.send(putBody('b', 'k', pattern(5))))
  stream.request(0, body.byteLength - 1)
  const received = await stream.received()
  assert.ok(received.ended)
  assert.ok(Buffer.from(received.bytes).equals(Buffer.from(body)))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 0)
})

test('copy: adds a reference, keeps or replaces metadata, honours conditions', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'src' }))
  value(await store.send({ kind: 'bucket.create', bucket: 'dst' }))
  const body = pattern(250_000, 15)
  const put = value(
    await store.send<PutResult>({
      ...putStream('src', 'k', body).msg,
      userMeta: { a: '1' },
    } as Body),
  )
  await idle(store.state)
  store.ctx.advance(5_000)
  const copy = (
    conditions = {},
    replace?: { http: typeof HTTP; userMeta: Record<string, string> },
  ): Body => ({
    kind: 'object.copy',
    source: { bucket: 'src', key: 'k' },
    target: { bucket: 'dst', key: 'copied' },
    conditions,
    ...(replace === undefined ? {} : { replace }),
  })
  const copied = value(await store.send<PutResult>(copy({ ifMatch: put.etag })))
  assert.is(copied.etag, put.etag)
  assert.is(copied.lastModifiedMs, store.ctx.now())
  assert.is(store.ctx.blobs.permanent.size, 1)
  const info = (await getBytes(store, 'dst', 'copied')).info
  assert.equal(info.userMeta, { a: '1' })
  value(await store.send(copy({}, { http: { contentType: 'text/csv' }, userMeta: { b: '2' } })))
  const replaced = await getBytes(store, 'dst', 'copied')
  assert.equal([replaced.info.http.contentType, replaced.info.userMeta], ['text/csv', { b: '2' }])
  assert.ok(Buffer.from(replaced.bytes).equals(Buffer.from(body)))
  for (const conditions of [
    { ifMatch: '"nope"' },
    { ifNoneMatch: put.etag },
    { ifNoneMatch: '*' },
    { ifModifiedSinceMs: put.lastModifiedMs + 1000 },
    { ifUnmodifiedSinceMs: put.lastModifiedMs - 1000 },
  ]) {
    assert.is(
      code(await store.send(copy(conditions))),
      'precondition_failed',
      JSON.stringify(conditions),
    )
  }
  assert.is(
    code(await store.send({ ...copy(), source: { bucket: 'src', key: 'none' } } as Body)),
    'no_such_key',
  )
  assert.is(
    code(await store.send({ ...copy(), target: { bucket: 'x', key: 'y' } } as Body)),
    'no_such_bucket',
  )
  assert.is(
    code(await store.send({ ...copy(), target: { bucket: 'src', key: 'k' } } as Body)),
    'invalid_request',
  )
  const counts = await stats(store)
  assert.equal([counts.objectsCount, counts.uniqueBlobs, counts.totalReferences], [2, 1, 2])
  value(await store.send({ kind: 'object.delete', bucket: 'src', key: 'k' }))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 1)
})

test('delete is idempotent; delete-many reports every key', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  for (const key of ['a', 'b', 'c'])
    value(await store.send(putBody('b', key, pattern(10, key.charCodeAt(0)))))
  assert.equal(value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'zz' })), {
    deleteMarker: false,
  })
  assert.is(
    code(await store.send({ kind: 'object.delete', bucket: 'x', key: 'a' })),
    'no_such_bucket',
  )
  const many = value(
    await store.send<DeleteManyResult>({
      kind: 'object.delete-many',
      bucket: 'b',
      objects: ['a', 'b', 'missing', 'a'].map((key) => ({ key })),
    }),
  )
  const deleted = ['a', 'b', 'missing', 'a'].map((key) => ({ key, deleteMarker: false }))
  assert.equal(many, { deleted, errors: [] })
  const left = await stats(store)
  assert.equal([left.objectsCount, left.storageUsedBytes, left.uniqueBlobs], [1, 10, 1])
})

test('delete-many reports a key it refuses with an ErrorCode, never a wire code', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const many = value(
    await store.send<DeleteManyResult>({
      kind: 'object.delete-many',
      bucket: 'b',
      objects: [{ key: 'k', versionId: 'not a version id' }],
    }),
  )
  assert.is(many.errors.length, 1)
  assert.equal([many.errors[0]?.key, many.errors[0]?.code], ['k', 'invalid_argument'])
})

test('system records: absent, put, get', async () => {
  const store = await startStore()
  assert.is(value(await store.send({ kind: 'system.get', name: 'iam/bootstrap' })), null)
  value(
    await store.send({
      kind: 'system.put',
      name: 'iam/bootstrap',
      value: new Uint8Array([1, 2, 3]),
    }),
  )
  assert.equal(
    [...value(await store.send<Uint8Array>({ kind: 'system.get', name: 'iam/bootstrap' }))],
    [1, 2, 3],
  )
})

// ---------------------------------------------------------------------------------------------
// Listing

test('list: prefix, delimiter, after, maxKeys and truncation', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const keys = ['a', 'a/1', 'a/2', 'a/b/1', 'b', 'b/1', 'c/1', 'c/2', 'd']
  for (const key of keys) value(await store.send(putBody('b', key, pattern(3))))
  const list = async (
    prefix: string,
    delimiter: string,
    after: string,
    maxKeys: number,
  ): Promise<ListPage> =>
    value(
      await store.send<ListPage>({
        kind: 'object.list',
        bucket: 'b',
        prefix,
        delimiter,
        after,
        maxKeys,
      }),
    )
  const names = (page: ListPage): [string[], string[], boolean, string] => [
    page.objects.keys,
    page.commonPrefixes,
    page.truncated,
    page.lastReturned,
  ]
  assert.equal(names(await list('', '/', '', 1000)), [
    ['a', 'b', 'd'],
    ['a/', 'b/', 'c/'],
    false,
    'd',
  ])
  assert.equal(names(await list('', '/', '', 3)), [['a', 'b'], ['a/'], true, 'b'])
  assert.equal(names(await list('', '/', 'b', 3)), [['d'], ['b/', 'c/'], false, 'd'])
  assert.equal(names(await list('', '/', 'a/2', 10)), [['b', 'd'], ['b/', 'c/'], false, 'd'])
  assert.equal(names(await list('a/', '/', '', 10)), [['a/1', 'a/2'], ['a/b/'], false, 'a/b/'])
  assert.equal(names(await list('a', '', '', 2)), [['a', 'a/1'], [], true, 'a/1'])
  assert.equal(names(await list('a', '', 'a/1', 10)), [['a/2', 'a/b/1'], [], false, 'a/b/1'])
  assert.equal(names(await list('', '', '', 0)), [[], [], false, ''])
  assert.equal(names(await list('zzz', '', '', 10)), [[], [], false, ''])
  assert.equal(names(await list('', '', 'd', 10)), [[], [], false, ''])
  assert.equal(names(await list('', '/', '', 4)), [['a', 'b'], ['a/', 'b/'], true, 'b/'])
  const page = await list('', '', '', 1)
  assert.equal(objectAt(page.objects, 0), {
    key: 'a',
    size: 3,
    etag: etagOf(pattern(3)),
    lastModifiedMs: store.ctx.now(),
  })
  assert.is(
    code(
      await store.send({
        kind: 'object.list',
        bucket: 'x',
        prefix: '',
        delimiter: '',
        after: '',
        maxKeys: 5,
      }),
    ),
    'no_such_bucket',
  )
})

/** A seeded generator of awkward keys: shared prefixes, delimiters, multi-byte characters. */
function randomKeys(count: number, seed: number): string[] {
  let state = seed
  const next = (): number => {
    state = (state * 1103515245 + 12345) & 0x7fffffff
    return state
  }
  const alphabet = ['a', 'b', '/', '-', '\u00e9', '\uffff', '\u{1F600}', '0', '//', '.']
  const keys = new Set<string>()
  while (keys.size < count) {
    let key = ''
    const length = 1 + (next() % 6)
    for (let index = 0; index < length; index++) key += alphabet[next() % alphabet.length]
    keys.add(key)
  }
  return [...keys]
}

/** What S3 would list, computed the slow and obvious way. */
function modelList(
  keys: string[],
  prefix: string,
  delimiter: string,
  after: string,
  maxKeys: number,
): string[] {
  const entries = new Set<string>()
  for (const key of keys) {
    if (!key.startsWith(prefix)) continue
    const at = delimiter === '' ? -1 : key.indexOf(delimiter, prefix.length)
    entries.add(at >= 0 ? key.slice(0, at + delimiter.length) : key)
  }
  return [...entries]
    .filter((entry) => compareUtf8(entry, after) > 0)
    .sort(compareUtf8)
    .slice(0, maxKeys)
}

test('list agrees with a model on random keys, and paging visits each entry once', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send({ kind: 'bucket.create', bucket: 'b2' }))
  const keys = randomKeys(300, 42)
  for (const key of keys) value(await store.send(putBody('b', key, pattern(1))))
  value(await store.send(putBody('b2', 'a', pattern(1))))
  for (const [prefix, delimiter] of [
    ['', ''],
    ['', '/'],
    ['a', '/'],
    ['\u00e9', '//'],
    ['b/', '-'],
    ['', '\uffff'],
  ]) {
    for (const maxKeys of [1, 7, 1000]) {
      const expected = modelList(keys, prefix as string, delimiter as string, '', 100_000)
      const seen: string[] = []
      let after = ''
      for (let pages = 0; pages < 1000; pages++) {
        const page = value(
          await store.send<ListPage>({
            kind: 'object.list',
            bucket: 'b',
            prefix: prefix as string,
            delimiter: delimiter as string,
            after,
            maxKeys,
          }),
        )
        const entries = [...page.objects.keys, ...page.commonPrefixes].sort(compareUtf8)
        assert.equal(
          entries,
          modelList(keys, prefix as string, delimiter as string, after, maxKeys),
        )
        seen.push(...entries)
        if (!page.truncated) break
        assert.is(page.lastReturned, entries[entries.length - 1])
        after = page.lastReturned
      }
      assert.equal(
        seen,
        expected,
        `prefix ${JSON.stringify(prefix)} delimiter ${JSON.stringify(delimiter)}`,
      )
    }
  }
})

test('successor bounds every string with the prefix and nothing else', () => {
  assert.is(successor('abc'), 'abd')
  assert.is(successor('a\u{10FFFF}'), 'b')
  assert.is(successor('\u{10FFFF}'), null)
  assert.is(successor('a\ud7ff'), 'a\ue000')
  assert.is(successor('a\uffff'), 'a\u{10000}')
  for (const prefix of ['a', 'a/', '\u00e9', 'x\uffff', '\u{1F600}']) {
    const bound = successor(prefix)
    assert.ok(bound !== null)
    for (const tail of ['', '\0', '\uffff', '\u{10FFFF}\u{10FFFF}', 'zzz']) {
      assert.ok(compareUtf8(prefix + tail, bound) < 0)
    }
    assert.ok(compareUtf8(prefix, bound) < 0)
  }
})

// ---------------------------------------------------------------------------------------------
// Conditions (protocol/s3-rules/conditions.ts)

test('evaluateConditions: GET and copy semantics', () => {
  const info = { etag: '"abc"', lastModifiedMs: 1_700_000_000_500 }
  const second = 1_700_000_000_000
  const read = (conditions: object): string | null => evaluateConditions(info, conditions, 'read')
  assert.is(read({}), null)
  assert.is(read({ ifMatch: '"abc"' }), null)
  assert.is(read({ ifMatch: 'abc' }), null)
  assert.is(read({ ifMatch: '"x", "abc"' }), null)
  assert.is(read({ ifMatch: '*' }), null)
  assert.is(read({ ifMatch: '"x"' }), 'precondition_failed')
  assert.is(read({ ifMatch: 'W/"abc"' }), 'precondition_failed')
  assert.is(read({ ifNoneMatch: '"abc"' }), 'not_modified')
  assert.is(read({ ifNoneMatch: 'W/"abc"' }), 'not_modified')
  assert.is(read({ ifNoneMatch: '"x"' }), null)
  // Second precision: modified at .500 of the same second is not "after" that second.
  assert.is(read({ ifModifiedSinceMs: second }), 'not_modified')
  assert.is(read({ ifModifiedSinceMs: second - 1000 }), null)
  assert.is(read({ ifUnmodifiedSinceMs: second }), null)
  assert.is(read({ ifUnmodifiedSinceMs: second - 1000 }), 'precondition_failed')
  // If-Match true makes If-Unmodified-Since irrelevant; If-None-Match false does so for IMS.
  assert.is(read({ ifMatch: '"abc"', ifUnmodifiedSinceMs: second - 1000 }), null)
  assert.is(read({ ifNoneMatch: '"x"', ifModifiedSinceMs: second }), null)
  assert.is(read({ ifMatch: '"x"', ifNoneMatch: '"abc"' }), 'precondition_failed')
  const copy = (conditions: object): string | null => evaluateConditions(info, conditions, 'copy')
  assert.is(copy({ ifNoneMatch: '"abc"' }), 'precondition_failed')
  assert.is(copy({ ifModifiedSinceMs: second }), 'precondition_failed')
  assert.is(copy({ ifMatch: '"abc"', ifUnmodifiedSinceMs: second - 1000 }), null)
})

// ---------------------------------------------------------------------------------------------
// Crash and recovery

test('recovery after a crash: uncommitted temp files go, committed ones are promoted', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const body = pattern(300_000, 16)
  // Committed but not promoted: hold the promotion by making the kv's copy the crash image
  // right after the commit landed, before the background rename.
  const blobs = store.ctx.blobs
  const promote = blobs.promote.bind(blobs)
  blobs.promote = () => Promise.resolve() // the rename never happens: the process died first
  value(await store.send(putStream('b', 'committed', body).msg))
  blobs.promote = promote
  // An upload in progress when the process died.
  const stream = memoryStream()
  stream.push(pattern(STREAM_CHUNK_BYTES, 17))
  const msg: Body = {
    kind: 'object.put',
    bucket: 'b',
    key: 'partial',
    http: HTTP,
    userMeta: {},
    expect: {},
    stream: stream.handle,
  }
  void store.send(msg)
  await new Promise((resolve) => setImmediate(resolve))
  assert.is(blobs.temporary.size, 2)
  const crashed = fakeContext({ kv: store.ctx.kv.durableCopy(), blobs: blobs.afterCrash() })
  const restarted = await startStore(crashed)
  assert.is(crashed.blobs.temporary.size, 0)
  assert.is(crashed.blobs.permanent.size, 1)
  const got = await getBytes(restarted, 'b', 'committed')
  assert.ok(Buffer.from(got.bytes).equals(Buffer.from(body)))
  assert.is(
    code(await restarted.send({ kind: 'object.get', bucket: 'b', key: 'partial' })),
    'no_such_key',
  )
  stream.abort('timeout', 'test over')
})

test('recovery removes files of garbage records a crash left behind', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(putStream('b', 'k', pattern(300_000, 18)).msg))
  await idle(store.state)
  const blobs = store.ctx.blobs
  blobs.remove = () => new Promise(() => undefined) // the process dies before the unlink
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'k' }))
  await new Promise((resolve) => setImmediate(resolve))
  const image = store.ctx.kv.durableCopy()
  assert.is(image.scan({ gte: 'G\0', lt: 'G\x01', limit: 10 }).length, 1)
  const crashed = fakeContext({ kv: image, blobs: blobs.afterCrash() })
  await startStore(crashed)
  assert.is(crashed.blobs.permanent.size, 0)
  assert.equal(crashed.kv.scan({ gte: 'G\0', lt: 'G\x01', limit: 10 }), [])
})

test('stop waits for background work, aborts GET streams; counters survive a restart', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(putStream('b', 'k', pattern(300_000, 19)).msg))
  const reading = memoryStream()
  value(await store.send({ kind: 'object.get', bucket: 'b', key: 'k', stream: reading.handle }))
  await replicaStore.stop?.(store.state, store.ctx)
  assert.is(store.state.tasks.size, 0)
  assert.is(store.ctx.blobs.temporary.size, 0)
  const outcome = await reading.received()
  assert.is(outcome.ended ? 'ended' : outcome.code, 'unavailable')
  await idle(store.state)
  assert.is(store.ctx.blobs.openReaders, 0)
  const restarted = await startStore(
    fakeContext({ kv: store.ctx.kv.durableCopy(), blobs: store.ctx.blobs }),
  )
  assert.equal(await stats(restarted), {
    bucketsCount: 1,
    objectsCount: 1,
    storageUsedBytes: 300_000,
    uniqueBlobs: 1,
    totalReferences: 1,
  })
  assert.is(
    crc32(Buffer.from((await getBytes(restarted, 'b', 'k')).bytes)),
    crc32(pattern(300_000, 19)),
  )
})

// ---------------------------------------------------------------------------------------------
// System records listed and deleted

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** One macrotask: every microtask runs, and (unless paused) the kv lands what was committed. */
function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

async function systemList(store: Store, prefix: string): Promise<SystemRecord[]> {
  return value(await store.send<SystemRecord[]>({ kind: 'system.list', prefix }))
}

test('system.list: every record with the prefix, by name, none of other ranges', async () => {
  const store = await startStore()
  const names = [
    'iam.user.b',
    'iam.user.a',
    'iam.users',
    'iam.user',
    'iam.user-',
    'iam.user/',
    'iam.key.1',
    'iam.user.é',
    'iam.user.\u{10FFFF}',
    'iam.user.z',
    'z',
  ]
  for (const name of names) {
    value(await store.send({ kind: 'system.put', name, value: encoder.encode(`v:${name}`) }))
  }
  // Keys of other ranges with the same text: a bucket, an object, and the first key after Y\0.
  value(await store.send({ kind: 'bucket.create', bucket: 'iam.user.x' }))
  value(await store.send(putBody('iam.user.x', 'iam.user.y', pattern(3))))
  await store.ctx.kv.commit([{ type: 'put', key: 'Y\x01iam.user.w', value: new Uint8Array(1) }])
  const expected = (prefix: string): string[] =>
    names.filter((name) => name.startsWith(prefix)).sort(compareUtf8)
  for (const prefix of [
    '',
    'iam.user.',
    'iam.user',
    'iam.users',
    'iam.user.é',
    'iam.user.\u{10FFFF}',
  ]) {
    const listed = await systemList(store, prefix)
    assert.equal(
      listed.map((record) => record.name),
      expected(prefix),
      prefix,
    )
    assert.ok(listed.length > 0, prefix)
    for (const record of listed) {
      assert.is(decoder.decode(record.value), `v:${record.name}`)
      // Each value owns its whole buffer: the reply is transferred.
      assert.is(record.value.byteOffset, 0)
      assert.is(record.value.buffer.byteLength, record.value.byteLength)
    }
  }
  assert.equal(await systemList(store, 'iam.user.'), [
    ...['iam.user.a', 'iam.user.b', 'iam.user.z', 'iam.user.é', 'iam.user.\u{10FFFF}'].map(
      (name) => ({ name, value: encoder.encode(`v:${name}`) }),
    ),
  ])
  for (const prefix of ['nothing', 'iam.userz', 'j', 'iam.user.c', '\u{10FFFF}']) {
    assert.equal(await systemList(store, prefix), [], prefix)
  }
  // A listed value is a copy: changing it changes nothing stored.
  const [first] = await systemList(store, 'iam.key.')
  first?.value.fill(0)
  const stored = value(await store.send<Uint8Array>({ kind: 'system.get', name: 'iam.key.1' }))
  assert.is(decoder.decode(stored), 'v:iam.key.1')
})

test('system.list fails past SYSTEM_RECORDS_LISTED_MAX rather than return a cut list', async () => {
  const store = await startStore()
  const ops: KvOp[] = []
  for (let index = 0; index <= SYSTEM_RECORDS_LISTED_MAX; index++) {
    const key = `Y\0many.${String(index).padStart(6, '0')}`
    ops.push({ type: 'put', key, value: new Uint8Array([index & 0xff]) })
  }
  await store.ctx.kv.commit(ops)
  assert.is(code(await store.send({ kind: 'system.list', prefix: 'many.' })), 'internal')
  assert.is(code(await store.send({ kind: 'system.list', prefix: '' })), 'internal')
  assert.equal(await systemList(store, 'many.1'), [
    { name: 'many.100000', value: Uint8Array.of(160) },
  ])
  value(await store.send({ kind: 'system.delete', name: 'many.000000' }))
  const listed = await systemList(store, 'many.')
  assert.is(listed.length, SYSTEM_RECORDS_LISTED_MAX)
  assert.equal([listed[0]?.name, listed[listed.length - 1]?.name], ['many.000001', 'many.100000'])
})

test('system.delete: durable when it returns; get and list miss it; missing is ok', async () => {
  const store = await startStore()
  for (const name of ['iam.user.1', 'iam.user.2']) {
    value(await store.send({ kind: 'system.put', name, value: encoder.encode(name) }))
  }
  store.ctx.kv.pause()
  let acknowledged = false
  const pending = store.send({ kind: 'system.delete', name: 'iam.user.1' }).then((result) => {
    acknowledged = true
    return result
  })
  await tick()
  assert.not.ok(acknowledged)
  store.ctx.kv.resume()
  assert.is(value(await pending), null)
  assert.is(store.ctx.kv.durableCopy().get('Y\0iam.user.1'), undefined)
  assert.is(value(await store.send({ kind: 'system.get', name: 'iam.user.1' })), null)
  assert.equal(
    (await systemList(store, 'iam.user.')).map((record) => record.name),
    ['iam.user.2'],
  )
  assert.is(value(await store.send({ kind: 'system.delete', name: 'iam.user.1' })), null)
  assert.is(value(await store.send({ kind: 'system.delete', name: 'never.there' })), null)
  const kept = value(await store.send<Uint8Array>({ kind: 'system.get', name: 'iam.user.2' }))
  assert.is(decoder.decode(kept), 'iam.user.2')
})

// ---------------------------------------------------------------------------------------------
// Bucket stats and forced bucket deletes

async function bucketStats(store: Store): Promise<BucketStats[]> {
  return value(await store.send<BucketStats[]>({ kind: 'bucket.stats' }))
}

/** Checks [name, objects, bytes] of every bucket, and that they add up to the store-wide counters
 * (the same objects, the same sum of sizes). */
async function expectBucketStats(
  store: Store,
  expected: [string, number, number][],
): Promise<void> {
  const listed = await bucketStats(store)
  assert.equal(
    listed.map((bucket) => [bucket.name, bucket.objectsCount, bucket.storageUsedBytes]),
    expected,
  )
  const whole = await stats(store)
  assert.is(whole.bucketsCount, listed.length)
  assert.is(
    listed.reduce((sum, bucket) => sum + bucket.objectsCount, 0),
    whole.objectsCount,
  )
  assert.is(
    listed.reduce((sum, bucket) => sum + bucket.storageUsedBytes, 0),
    whole.storageUsedBytes,
  )
}

function copyMsg(
  source: [string, string],
  target: [string, string],
  replace?: { http: { contentType: string }; userMeta: Record<string, string> },
): Body {
  return {
    kind: 'object.copy',
    source: { bucket: source[0], key: source[1] },
    target: { bucket: target[0], key: target[1] },
    conditions: {},
    ...(replace === undefined ? {} : { replace }),
  }
}

test('bucket.stats: exact counters through puts, overwrites, copies, deletes', async () => {
  const store = await startStore()
  store.ctx.setNow(2_000_000)
  value(await store.send({ kind: 'bucket.create', bucket: 'b1' }))
  store.ctx.advance(5)
  value(await store.send({ kind: 'bucket.create', bucket: 'a2' }))
  assert.equal(await bucketStats(store), [
    { name: 'a2', createdMs: 2_000_005, objectsCount: 0, storageUsedBytes: 0 },
    { name: 'b1', createdMs: 2_000_000, objectsCount: 0, storageUsedBytes: 0 },
  ])
  value(await store.send(putBody('b1', 'k1', pattern(100, 20))))
  value(await store.send(putStream('b1', 'k2', pattern(200_000, 21)).msg))
  value(await store.send(putBody('a2', 'k', pattern(50, 22))))
  await expectBucketStats(store, [
    ['a2', 1, 50],
    ['b1', 2, 200_100],
  ])
  // Overwrites with other sizes: inline by inline, then a file blob by an inline one.
  value(await store.send(putBody('b1', 'k1', pattern(300, 23))))
  await expectBucketStats(store, [
    ['a2', 1, 50],
    ['b1', 2, 200_300],
  ])
  value(await store.send(putBody('b1', 'k2', pattern(10, 24))))
  await expectBucketStats(store, [
    ['a2', 1, 50],
    ['b1', 2, 310],
  ])
  // Copies: to another bucket, within one, onto an existing key, onto itself.
  value(await store.send(copyMsg(['b1', 'k1'], ['a2', 'c'])))
  await expectBucketStats(store, [
    ['a2', 2, 350],
    ['b1', 2, 310],
  ])
  value(await store.send(copyMsg(['b1', 'k1'], ['b1', 'k1copy'])))
  value(await store.send(copyMsg(['b1', 'k2'], ['a2', 'k'])))
  value(await store.send(copyMsg(['b1', 'k1'], ['b1', 'k1'], { http: HTTP, userMeta: { x: 'y' } })))
  await expectBucketStats(store, [
    ['a2', 2, 310],
    ['b1', 3, 610],
  ])
  // Deletes: one key, a missing one, then delete-many with a repeat and a missing key.
  value(await store.send({ kind: 'object.delete', bucket: 'b1', key: 'k2' }))
  value(await store.send({ kind: 'object.delete', bucket: 'b1', key: 'missing' }))
  await expectBucketStats(store, [
    ['a2', 2, 310],
    ['b1', 2, 600],
  ])
  value(
    await store.send({
      kind: 'object.delete-many',
      bucket: 'b1',
      objects: ['k1', 'missing', 'k1', 'k1copy'].map((key) => ({ key })),
    }),
  )
  await expectBucketStats(store, [
    ['a2', 2, 310],
    ['b1', 0, 0],
  ])
  value(await store.send({ kind: 'bucket.delete', bucket: 'b1' }))
  assert.equal(await bucketStats(store), [
    { name: 'a2', createdMs: 2_000_005, objectsCount: 2, storageUsedBytes: 310 },
  ])
})

/** Counts, per kv commit, the object records of `bucket` it deletes (commits deleting none are
 * left out). */
function objectDeletesPerCommit(kv: MemoryKv, bucket: string): number[] {
  const counts: number[] = []
  const commit = kv.commit.bind(kv)
  kv.commit = (ops) => {
    const prefix = `O\0${bucket}\0`
    const deleted = ops.filter((op) => op.type === 'del' && op.key.startsWith(prefix)).length
    if (deleted > 0) counts.push(deleted)
    return commit(ops)
  }
  return counts
}

function blobRecords(store: Store): [string, string][] {
  const rows = store.ctx.kv.scan({ gte: 'H\0', lt: 'H\x01', limit: 10_000 })
  return rows.map(([key, stored]) => [key, decoder.decode(stored)])
}

const NO_STATS: StoreStats = {
  bucketsCount: 0,
  objectsCount: 0,
  storageUsedBytes: 0,
  uniqueBlobs: 0,
  totalReferences: 0,
}

test('force delete: 2500 objects in batches of <= 1000; counters, blobs as before', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'keep' }))
  const sharedSmall = pattern(100, 30)
  const sharedLarge = pattern(300_000, 31)
  value(await store.send(putBody('keep', 'small', sharedSmall)))
  value(await store.send(putStream('keep', 'large', sharedLarge).msg))
  await idle(store.state)
  const before = await stats(store)
  const blobsBefore = blobRecords(store)
  const filesBefore = [...store.ctx.blobs.permanent.keys()]
  value(await store.send({ kind: 'bucket.create', bucket: 'doomed' }))
  for (let index = 0; index < 2500; index++) {
    value(await store.send(putBody('doomed', `k/${index}`, encoder.encode(`object ${index}`))))
  }
  // The same bytes as keep's objects (dedup), a file blob of its own, and a copy.
  value(await store.send(putBody('doomed', 'dup-small', sharedSmall)))
  value(await store.send(putStream('doomed', 'dup-large', sharedLarge).msg))
  value(await store.send(putStream('doomed', 'own-large', pattern(250_000, 32)).msg))
  value(await store.send(copyMsg(['keep', 'small'], ['doomed', 'copied'])))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 2)
  const full = await stats(store)
  assert.equal(
    [full.objectsCount, full.uniqueBlobs, full.totalReferences],
    [before.objectsCount + 2504, before.uniqueBlobs + 2501, before.totalReferences + 2504],
  )
  const batches = objectDeletesPerCommit(store.ctx.kv, 'doomed')
  assert.is(value(await store.send({ kind: 'bucket.delete', bucket: 'doomed', force: true })), null)
  await idle(store.state)
  assert.ok(batches.length >= 3, `${batches.length} batches`)
  assert.ok(batches.every((count) => count <= FORCE_DELETE_BATCH_OBJECTS))
  assert.is(
    batches.reduce((sum, count) => sum + count, 0),
    2504,
  )
  assert.equal(await stats(store), before)
  assert.equal(blobRecords(store), blobsBefore)
  assert.equal([...store.ctx.blobs.permanent.keys()], filesBefore)
  assert.equal(store.ctx.kv.scan({ gte: 'O\0doomed\0', lt: 'O\0doomed\x01', limit: 1 }), [])
  assert.equal(store.ctx.kv.scan({ gte: 'G\0', lt: 'G\x01', limit: 10 }), [])
  assert.is(store.ctx.kv.scan({ gte: 'F\0', lt: 'F\x01', limit: 10 }).length, 1)
  assert.is(code(await store.send({ kind: 'bucket.head', bucket: 'doomed' })), 'no_such_bucket')
  await expectBucketStats(store, [['keep', 2, 300_100]])
  assert.equal((await getBytes(store, 'keep', 'small')).bytes, sharedSmall)
  const large = (await getBytes(store, 'keep', 'large')).bytes
  assert.ok(Buffer.from(large).equals(Buffer.from(sharedLarge)))
})

test('force delete: objects put between its batches go too; puts after it fail', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  for (let index = 0; index < 1500; index++) {
    value(await store.send(putBody('b', `k/${index}`, encoder.encode(`object ${index}`))))
  }
  assert.is(code(await store.send({ kind: 'bucket.delete', bucket: 'b' })), 'bucket_not_empty')
  // Each body is 'object ' (7 bytes) and the index's digits; nothing was deleted.
  const bytes = 1500 * 7 + 10 * 1 + 90 * 2 + 900 * 3 + 500 * 4
  await expectBucketStats(store, [['b', 1500, bytes]])
  store.ctx.kv.pause()
  const deleting = store.send({ kind: 'bucket.delete', bucket: 'b', force: true })
  await tick()
  // The first batch is committed (reads see it) and its sync is held: the delete waits there.
  assert.equal(
    (await bucketStats(store)).map((bucket) => bucket.objectsCount),
    [500],
  )
  const late = ['late/1', 'late/2', 'late/3'].map((key) =>
    store.send(putBody('b', key, pattern(7, 33))),
  )
  const lateLarge = store.send(putStream('b', 'late/large', pattern(150_000, 34)).msg)
  await tick()
  assert.equal(
    (await bucketStats(store)).map((bucket) => bucket.objectsCount),
    [504],
  )
  store.ctx.kv.resume()
  assert.is(value(await deleting), null)
  for (const reply of await Promise.all([...late, lateLarge])) value(reply)
  await idle(store.state)
  assert.equal(await stats(store), NO_STATS)
  assert.equal(await bucketStats(store), [])
  assert.is(store.ctx.blobs.permanent.size + store.ctx.blobs.temporary.size, 0)
  assert.is(code(await store.send(putBody('b', 'after', pattern(3)))), 'no_such_bucket')
})

test('force delete: past its deadline it stops with timeout; a retry finishes', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  for (let index = 0; index < 2500; index++) {
    value(await store.send(putBody('b', `k/${index}`, encoder.encode(`object ${index}`))))
  }
  store.ctx.kv.pause()
  const deadlineMs = store.ctx.now() + 1_000
  const deleting = store.send({ kind: 'bucket.delete', bucket: 'b', force: true }, deadlineMs)
  await tick()
  store.ctx.advance(1_000)
  store.ctx.kv.resume()
  assert.is(code(await deleting), 'timeout')
  // The batch committed before the deadline stays done; the counters follow it exactly.
  const left = await bucketStats(store)
  assert.equal(
    left.map((bucket) => [bucket.name, bucket.objectsCount]),
    [['b', 1500]],
  )
  assert.is((await stats(store)).objectsCount, 1500)
  value(await store.send({ kind: 'bucket.delete', bucket: 'b', force: true }))
  assert.equal(await stats(store), NO_STATS)
})

test('bucket.delete: unknown is no_such_bucket, forced or not; empty ones go', async () => {
  const store = await startStore()
  for (const force of [{}, { force: true as const }]) {
    const result = await store.send({ kind: 'bucket.delete', bucket: 'nope', ...force })
    assert.is(code(result), 'no_such_bucket')
  }
  value(await store.send({ kind: 'bucket.create', bucket: 'empty' }))
  value(await store.send({ kind: 'bucket.create', bucket: 'other' }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'empty', force: true }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'other' }))
  assert.equal(await stats(store), NO_STATS)
})

// ---------------------------------------------------------------------------------------------
// Listing with Content-Type, and the coordinator's pass-through

test('list withContentType: summaries carry Content-Type; without it none does', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const types: [string, string][] = [
    ['a.txt', 'text/plain'],
    ['b.png', 'image/png'],
    ['dir/c', 'application/json'],
  ]
  for (const [key, contentType] of types) {
    value(await store.send({ ...putBody('b', key, pattern(5)), http: { contentType } } as Body))
  }
  const replace = { http: { contentType: 'text/csv' }, userMeta: {} }
  value(await store.send(copyMsg(['b', 'a.txt'], ['b', 'd.csv'], replace)))
  const list = async (delimiter: string, withType: boolean): Promise<ListPage> =>
    value(
      await store.send<ListPage>({
        kind: 'object.list',
        bucket: 'b',
        prefix: '',
        delimiter,
        after: '',
        maxKeys: 1000,
        ...(withType ? { withContentType: true as const } : {}),
      }),
    )
  const typed = (page: ListPage): [string, string | undefined][] =>
    objectSummaries(page.objects).map((object) => [object.key, object.contentType])
  assert.equal(typed(await list('', true)), [...types, ['d.csv', 'text/csv']].sort())
  const folded = await list('/', true)
  assert.equal(typed(folded), [
    ['a.txt', 'text/plain'],
    ['b.png', 'image/png'],
    ['d.csv', 'text/csv'],
  ])
  assert.equal(folded.commonPrefixes, ['dir/'])
  for (const page of [await list('', false), await list('/', false)]) {
    assert.ok(page.objects.keys.length >= 3)
    assert.equal(Object.keys(page.objects), ['keys', 'sizes', 'etags', 'lastModifiedMs'])
    for (const object of objectSummaries(page.objects)) {
      assert.equal(Object.keys(object), ['key', 'size', 'etag', 'lastModifiedMs'])
    }
  }
})

test('coordinator: bucket.stats and a forced bucket.delete reach the store unchanged', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  for (const key of ['x', 'y', 'z']) value(await store.send(putBody('b', key, pattern(4))))
  const ctx = fakeContext({ self: 'coordinator' })
  const forwarded: unknown[] = []
  ctx.onCall((to, msg) => {
    assert.is(to, 'replica-store')
    forwarded.push(structuredClone(msg))
    return handle(replicaStore, store.state, msg as StoreMsg, store.ctx)
  })
  const state = await coordinator.init(ctx)
  const statsMsg: CoordinatorMsg = {
    kind: 'bucket.stats',
    requestId: 's',
    deadlineMs: store.ctx.now() + 5_000,
  }
  const listed = value((await handle(coordinator, state, statsMsg, ctx)) as Result<BucketStats[]>)
  assert.equal(
    listed.map((bucket) => [bucket.name, bucket.objectsCount]),
    [['b', 3]],
  )
  const deleteMsg: CoordinatorMsg = {
    kind: 'bucket.delete',
    bucket: 'b',
    force: true,
    requestId: 'd',
    deadlineMs: store.ctx.now() + 5_000,
  }
  value(await handle(coordinator, state, deleteMsg, ctx))
  assert.equal(forwarded, [statsMsg, deleteMsg])
  assert.is(code(await store.send({ kind: 'bucket.head', bucket: 'b' })), 'no_such_bucket')
})

// ---------------------------------------------------------------------------------------------
// Multipart uploads

const PART_MIN = 5 * 1024 * 1024

async function createUpload(store: Store, bucket: string, key: string): Promise<string> {
  const created = value(
    await store.send<{ uploadId: string }>({
      kind: 'upload.create',
      bucket,
      key,
      http: HTTP,
      userMeta: {},
    }),
  )
  return created.uploadId
}

async function sendPart(
  store: Store,
  at: { bucket: string; key: string; uploadId: string },
  partNumber: number,
  body: Uint8Array,
): Promise<string> {
  const streamed = putStream(at.bucket, at.key, body).msg as { stream: unknown }
  const part = value(
    await store.send<{ etag: string }>({
      kind: 'upload.part',
      ...at,
      partNumber,
      expect: {},
      stream: streamed.stream,
    } as Body),
  )
  assert.is(part.etag, etagOf(body))
  return part.etag
}

async function uploadObject(
  store: Store,
  bucket: string,
  key: string,
  parts: Uint8Array[],
): Promise<PutResult> {
  const uploadId = await createUpload(store, bucket, key)
  const listed = []
  for (const [index, body] of parts.entries()) {
    const etag = await sendPart(store, { bucket, key, uploadId }, index + 1, body)
    listed.push({ partNumber: index + 1, etag })
  }
  return value(
    await store.send<PutResult>({ kind: 'upload.complete', bucket, key, uploadId, parts: listed }),
  )
}

test('multipart: a GET of parts outlives an overwrite; part files go once it ends', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const parts = [pattern(PART_MIN, 40), pattern(PART_MIN, 41), pattern(10, 42)]
  await uploadObject(store, 'b', 'k', parts)
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 2) // the 10-byte part is inline
  const stream = memoryStream()
  value(await store.send({ kind: 'object.get', bucket: 'b', key: 'k', stream: stream.handle }))
  value(await store.send(putBody('b', 'k', pattern(5))))
  await idle({ ...store.state, streams: new Map() })
  assert.is(store.ctx.blobs.permanent.size, 2, 'pinned part files wait for the GET')
  const whole = Buffer.concat(parts)
  stream.request(PART_MIN - 5, whole.length - 1)
  const received = await stream.received()
  assert.ok(received.ended)
  assert.ok(Buffer.from(received.bytes).equals(whole.subarray(PART_MIN - 5)))
  await idle(store.state)
  assert.is(store.ctx.blobs.permanent.size, 0)
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 1,
    storageUsedBytes: 5,
    uniqueBlobs: 1,
    totalReferences: 1,
  })
})

test('multipart: uploads and parts survive a crash and complete after the restart', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const uploadId = await createUpload(store, 'b', 'k')
  const first = pattern(PART_MIN, 43)
  const etag = await sendPart(store, { bucket: 'b', key: 'k', uploadId }, 1, first)
  await idle(store.state)
  const crashed = fakeContext({
    kv: store.ctx.kv.durableCopy(),
    blobs: store.ctx.blobs.afterCrash(),
  })
  const restarted = await startStore(crashed)
  const second = pattern(1, 44)
  const etag2 = await sendPart(restarted, { bucket: 'b', key: 'k', uploadId }, 2, second)
  const parts = [
    { partNumber: 1, etag },
    { partNumber: 2, etag: etag2 },
  ]
  value(await restarted.send({ kind: 'upload.complete', bucket: 'b', key: 'k', uploadId, parts }))
  const got = await getBytes(restarted, 'b', 'k')
  assert.ok(Buffer.from(got.bytes).equals(Buffer.concat([first, second])))
  assert.is(got.info.partsCount, 2)
})

test('multipart: ranged part copy re-stores bytes; uploads expire on the clock', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const source = pattern(400_000, 45)
  value(await store.send(putStream('b', 'src', source).msg))
  const uploadId = await createUpload(store, 'b', 'k')
  const copied = value(
    await store.send<{ etag: string; size: number }>({
      kind: 'upload.part-copy',
      bucket: 'b',
      key: 'k',
      uploadId,
      partNumber: 1,
      source: { bucket: 'b', key: 'src' },
      range: { start: 1000, end: 299_999 },
      conditions: {},
    }),
  )
  assert.is(copied.etag, etagOf(source.subarray(1000, 300_000)))
  assert.is(copied.size, 299_000)
  await idle(store.state)
  assert.is((await stats(store)).storageUsedBytes, 400_000 + 299_000)
  store.ctx.advance(23 * 3_600_000)
  await idle(store.state)
  assert.is((await stats(store)).storageUsedBytes, 400_000 + 299_000, 'not expired at 23 h')
  // Sweeps run hourly: the next one after the 24th hour aborts the upload.
  for (let hour = 0; hour < 3; hour++) {
    store.ctx.advance(3_600_000)
    await idle(store.state)
  }
  assert.is((await stats(store)).storageUsedBytes, 400_000)
  const after = { kind: 'upload.list-parts', bucket: 'b', key: 'k', uploadId } as const
  const gone = await store.send({ ...after, afterPartNumber: 0, maxParts: 10 })
  assert.is(code(gone), 'no_such_upload')
})

test('multipart: a bucket delete aborts uploads; an object refuses a plain one', async () => {
  for (const force of [false, true]) {
    const store = await startStore()
    value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
    const uploadId = await createUpload(store, 'b', 'k')
    await sendPart(store, { bucket: 'b', key: 'k', uploadId }, 1, pattern(200_000, 46))
    value(await store.send(putStream('b', 'o', pattern(100_000, 47)).msg))
    if (!force) {
      assert.is(code(await store.send({ kind: 'bucket.delete', bucket: 'b' })), 'bucket_not_empty')
      value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'o' }))
    }
    value(await store.send({ kind: 'bucket.delete', bucket: 'b', ...(force ? { force } : {}) }))
    await assertNothingStored(store, 'P\0', 'Y')
  }
})

// ---------------------------------------------------------------------------------------------
// Versioning

test('versioning: references and counters follow versions, markers and removals', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(putStream('b', 'k', pattern(200_000, 50)).msg)) // the null version
  value(await store.send({ kind: 'bucket.versioning.put', bucket: 'b', status: 'Enabled' }))
  const second = value(await store.send<PutResult>(putStream('b', 'k', pattern(300_000, 51)).msg))
  const marker = value(
    await store.send<{ versionId: string; deleteMarker: boolean }>({
      kind: 'object.delete',
      bucket: 'b',
      key: 'k',
    }),
  )
  assert.is(marker.deleteMarker, true)
  await idle(store.state)
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 0,
    storageUsedBytes: 500_000,
    uniqueBlobs: 2,
    totalReferences: 2,
  })
  // Removing the marker makes the newest version current again.
  const removed = { kind: 'object.delete', bucket: 'b', key: 'k' } as const
  value(await store.send({ ...removed, versionId: marker.versionId }))
  assert.is((await stats(store)).objectsCount, 1)
  const current = await getBytes(store, 'b', 'k')
  assert.is(current.info.versionId, second.versionId)
  value(await store.send({ ...removed, versionId: second.versionId ?? '' }))
  const old = await getBytes(store, 'b', 'k')
  assert.is(old.info.versionId, 'null')
  value(await store.send({ ...removed, versionId: 'null' }))
  await idle(store.state)
  assert.equal(await stats(store), {
    bucketsCount: 1,
    objectsCount: 0,
    storageUsedBytes: 0,
    uniqueBlobs: 0,
    totalReferences: 0,
  })
  assert.is(store.ctx.blobs.permanent.size, 0)
  value(await store.send({ kind: 'bucket.delete', bucket: 'b' }))
})

test('versioning: forced bucket delete removes versions and markers; plain refuses', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send({ kind: 'bucket.versioning.put', bucket: 'b', status: 'Enabled' }))
  for (const seed of [60, 61])
    value(await store.send(putStream('b', 'k', pattern(100_000, seed)).msg))
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'k' }))
  value(await store.send(putBody('b', 'other', pattern(10, 62))))
  value(await store.send({ kind: 'object.delete', bucket: 'b', key: 'other' }))
  assert.is(code(await store.send({ kind: 'bucket.delete', bucket: 'b' })), 'bucket_not_empty')
  value(await store.send({ kind: 'bucket.delete', bucket: 'b', force: true }))
  await assertNothingStored(store, 'N\0', 'W')
})

test('versioning: a delete-many of the newest versions makes the next one current', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send({ kind: 'bucket.versioning.put', bucket: 'b', status: 'Enabled' }))
  const ids: string[] = []
  for (const seed of [70, 71, 72, 73, 74]) {
    ids.push(
      value(await store.send<PutResult>(putBody('b', 'k', pattern(10, seed)))).versionId ?? '',
    )
  }
  const newest = ids.slice(1).reverse() // all but the oldest, newest first
  const many = value(
    await store.send<DeleteManyResult>({
      kind: 'object.delete-many',
      bucket: 'b',
      objects: newest.map((versionId) => ({ key: 'k', versionId })),
    }),
  )
  assert.is(many.deleted.length, 4)
  const current = await getBytes(store, 'b', 'k')
  assert.is(current.info.versionId, ids[0])
  assert.ok(Buffer.from(current.bytes).equals(Buffer.from(pattern(10, 70))))
  assert.is((await stats(store)).objectsCount, 1)
})

test('a mutation prefetches in one kv call and reads through its own writes', async () => {
  const kv = new MemoryKv()
  const text = (value: Uint8Array | undefined): string | undefined =>
    value === undefined ? undefined : Buffer.from(value).toString()
  await kv.commit([
    { type: 'put', key: 'a', value: Buffer.from('1') },
    { type: 'put', key: 'b', value: Buffer.from('2') },
  ])
  let calls = 0
  const counting: KvStore = {
    get: (key) => (calls++, kv.get(key)),
    getMany: (keys) => (calls++, kv.getMany(keys)),
    scan: (range) => kv.scan(range),
    scanText: (range) => kv.scanText(range),
    commit: (ops) => kv.commit(ops),
  }
  const view = new Mutation(counting)
  view.put('b', Buffer.from('written'))
  view.prefetch(['a', 'b', 'missing'])
  assert.is(calls, 1)
  assert.is(text(view.get('a')), '1')
  assert.is(text(view.get('b')), 'written', 'its own write, not the stored value')
  assert.is(view.get('missing'), undefined)
  assert.is(calls, 1, 'prefetched and written keys need no further kv call')
  view.del('a')
  assert.is(view.get('a'), undefined, 'a later write wins over what was prefetched')
  assert.is(text(view.get('c') ?? Buffer.from('none')), 'none')
  assert.is(calls, 2, 'a key not prefetched is read from the kv')
})

test('a delete on a volume too full for its batch is tried again and frees the space', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'full', owner: 'u' }))
  value(await store.send(putBody('full', 'k', pattern(100))))
  // The next two batches find no room, as RocksDB's would on a full volume before the reserve
  // went; the third lands.
  const commit = store.ctx.kv.commit.bind(store.ctx.kv)
  let refusals = 2
  store.ctx.kv.commit = (ops) => {
    if (refusals === 0) return commit(ops)
    refusals--
    return Promise.reject(new ServiceError('insufficient_storage', 'no space left on device'))
  }
  const deleted = store.send({ kind: 'object.delete', bucket: 'full', key: 'k' })
  let answer: Result<unknown> | null = null
  void deleted.then((result) => (answer = result))
  for (let turn = 0; turn < 100 && answer === null; turn++) {
    await new Promise((resolve) => setImmediate(resolve))
    store.ctx.advance(100)
  }
  assert.is(code(answer ?? fail('timeout', 'no answer')), 'ok')
  assert.is(refusals, 0)
  const got = await store.send({ kind: 'object.get', bucket: 'full', key: 'k' })
  assert.is(code(got), 'no_such_key')
})

test('a PUT right after a delete finds the room, its file removed after the answer', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'full', owner: 'u' }))
  const big = pattern(INLINE_BLOB_BYTES_MAX + 1)
  value(await store.send(putBody('full', 'old', big)))
  await idle(store.state)
  // A volume with room for one file blob: full while the old one is there. Its removal takes a
  // while (the delete answers before it).
  const blobs = store.ctx.blobs
  const remove = blobs.remove.bind(blobs)
  blobs.admits = () => Promise.resolve(blobs.permanent.size === 0)
  blobs.remove = async (id) => {
    await new Promise((resolve) => setTimeout(resolve, 20))
    await remove(id)
  }
  value(await store.send({ kind: 'object.delete', bucket: 'full', key: 'old' }))
  assert.is(blobs.permanent.size, 1, 'the file is still there when the delete answers')
  value(await store.send(putBody('full', 'new', big)))
})

test.run()
