// Goal: the store audit (test/sim/store-audit.ts) finds a replica-store consistent after every
// kind of change the store makes (buckets, inline and file blobs, overwrites, dedup, deletes,
// versions and delete markers, deletes by version id, Suspended versioning, copies, multipart
// uploads completed, aborted and part-copied, a forced bucket delete), and reports a record
// changed behind the store's back: a blob's refs, a counter, a bucket's bytes, inline bytes, a
// file record, an object record.
// Method: the real replica-store on the fake context (test/support/store-harness.ts); the audit
// runs on its kv after each request and after the background work, and, with a batch visible but
// held from landing, on the kv and on what a crash would leave. Then single records are changed
// with a kv commit and the audit must name them; and records written by hand, more than one scan
// reads, check that the audit pages through a range.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { COUNTERS_KEY, objectKey } from '../../actors/replica-store/keys.js'
import {
  decodeBlob,
  decodeBucket,
  decodeCounters,
  decodeObject,
  encodeRecord,
} from '../../actors/replica-store/records.js'
import { INLINE_BLOB_BYTES_MAX, PART_BYTES_MIN } from '../../protocol/limits.js'
import type { KvOp } from '../../protocol/actor.js'
import type { DeleteResult, PutResult } from '../../protocol/messages.js'
import { auditStore } from '../sim/store-audit.js'
import {
  clusterStore,
  idle,
  startStore,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'

const HTTP = { contentType: 'application/octet-stream' }
/** Bodies over the inline bound go to a blob file. */
const LARGE = INLINE_BLOB_BYTES_MAX + 1000
const SMALL = 100

function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let index = 0; index < size; index++) bytes[index] = (index * 31 + seed * 7) & 0xff
  return bytes
}

function put(bucket: string, key: string, body: Uint8Array): Body {
  return { kind: 'object.put', bucket, key, http: HTTP, userMeta: {}, expect: {}, body }
}

/** Sends one request, which must succeed, then audits the store. */
async function step<T>(store: Store, body: Body): Promise<T> {
  const result = value(await store.send<T>(body))
  assert.equal(auditStore(store.ctx.kv), [], `after ${body.kind}`)
  return result
}

async function part(
  store: Store,
  at: { bucket: string; key: string; uploadId: string },
  partNumber: number,
  body: Uint8Array,
): Promise<{ partNumber: number; etag: string }> {
  const sent: Body = { kind: 'upload.part', ...at, partNumber, expect: {}, body }
  const { etag } = await step<{ etag: string }>(store, sent)
  return { partNumber, etag }
}

async function upload(store: Store, bucket: string, key: string): Promise<string> {
  const created: Body = { kind: 'upload.create', bucket, key, http: HTTP, userMeta: {} }
  return (await step<{ uploadId: string }>(store, created)).uploadId
}

/** Puts, overwrites, dedup and deletes in a bucket without versioning. */
async function plainChanges(store: Store): Promise<void> {
  await step(store, { kind: 'bucket.create', bucket: 'b' })
  await step(store, put('b', 'small', pattern(SMALL, 1)))
  await step(store, put('b', 'large', pattern(LARGE, 2)))
  await step(store, put('b', 'twin', pattern(LARGE, 2))) // the same bytes: one blob, two refs
  await step(store, put('b', 'small-twin', pattern(SMALL, 1)))
  await step(store, put('b', 'small', pattern(SMALL, 3))) // overwrites
  await step(store, put('b', 'twin', pattern(SMALL, 3)))
  await step(store, { kind: 'object.delete', bucket: 'b', key: 'large' }) // its file is garbage
  await step(store, {
    kind: 'object.delete-many',
    bucket: 'b',
    objects: [{ key: 'small-twin' }, { key: 'never-was' }],
  })
}

/** Versions, markers, deletes by id, copies, then Suspended versioning. */
async function versionedChanges(store: Store): Promise<void> {
  await step(store, { kind: 'bucket.create', bucket: 'v' })
  await step(store, put('v', 'k', pattern(LARGE, 4))) // the null version
  await step(store, { kind: 'bucket.versioning.put', bucket: 'v', status: 'Enabled' })
  const first = await step<PutResult>(store, put('v', 'k', pattern(LARGE, 5)))
  const second = await step<PutResult>(store, put('v', 'k', pattern(SMALL, 6)))
  const marker = await step<DeleteResult>(store, { kind: 'object.delete', bucket: 'v', key: 'k' })
  assert.is(marker.deleteMarker, true)
  const byId = (versionId: string): Body => ({
    kind: 'object.delete',
    bucket: 'v',
    key: 'k',
    versionId,
  })
  await step(store, byId(marker.versionId ?? '')) // the second is current again
  await step(store, byId(first.versionId ?? ''))
  await step(store, byId('null'))
  const copy = (source: { bucket: string; key: string; versionId?: string }, target: string) =>
    ({ kind: 'object.copy', source, target: { bucket: 'b', key: target }, conditions: {} }) as Body
  await step(store, copy({ bucket: 'v', key: 'k' }, 'copied'))
  await step(store, { kind: 'bucket.versioning.put', bucket: 'v', status: 'Suspended' })
  await step(store, put('v', 'k', pattern(LARGE, 7))) // the null version, current
  await step(store, put('v', 'k', pattern(SMALL, 8))) // replaces it
  await step(store, copy({ bucket: 'v', key: 'k', versionId: second.versionId ?? '' }, 'old'))
}

/** A multipart upload completed without one of its parts, one aborted, and a bucket deleted
 * with its objects and an upload in progress. */
async function multipartChanges(store: Store): Promise<void> {
  const at = { bucket: 'v', key: 'mp', uploadId: await upload(store, 'v', 'mp') }
  const first = await part(store, at, 1, pattern(PART_BYTES_MIN, 9))
  await part(store, at, 2, pattern(SMALL, 3)) // the bytes of b/small: one more reference
  const copied: Body = {
    kind: 'upload.part-copy',
    ...at,
    partNumber: 3,
    source: { bucket: 'b', key: 'copied' },
    conditions: {},
  }
  await step(store, copied) // a whole single-blob source: a reference to its blob
  const second = await part(store, at, 2, pattern(SMALL, 10)) // replaces part 2
  await step(store, { kind: 'upload.complete', ...at, parts: [first, second] }) // part 3 goes
  const ended = { bucket: 'b', key: 'ab', uploadId: await upload(store, 'b', 'ab') }
  await part(store, ended, 1, pattern(PART_BYTES_MIN, 9))
  await part(store, ended, 2, pattern(LARGE, 11))
  await step(store, { kind: 'upload.abort', ...ended })
  await step(store, { kind: 'bucket.create', bucket: 'gone' })
  await step(store, put('gone', 'a', pattern(LARGE, 12)))
  await step(store, put('gone', 'b', pattern(SMALL, 3)))
  const left = { bucket: 'gone', key: 'c', uploadId: await upload(store, 'gone', 'c') }
  await part(store, left, 1, pattern(SMALL, 13))
  await step(store, { kind: 'bucket.delete', bucket: 'gone', force: true })
}

async function populatedStore(started: Promise<Store> = startStore()): Promise<Store> {
  const store = await started
  await plainChanges(store)
  await versionedChanges(store)
  await multipartChanges(store)
  await idle(store.state)
  return store
}

test('every change of the store leaves it consistent', async () => {
  const store = await populatedStore()
  assert.equal(auditStore(store.ctx.kv), [])
  // The run reached what it means to: versions, dedup, file and inline blobs.
  const counters = decodeCounters(store.ctx.kv.get(COUNTERS_KEY) as Uint8Array)
  assert.ok(counters.refs > counters.blobs, 'some blob has two references')
  assert.ok(counters.objects < counters.refs, 'versions and multipart objects hold references')
  assert.ok(store.ctx.blobs.permanent.size > 0, 'some blob is a file')
})

test('a batch not yet durable: the kv and what a crash would leave are consistent', async () => {
  const store = await populatedStore()
  const kv = store.ctx.kv
  kv.pause()
  const pending = store.send(put('b', 'late', pattern(LARGE, 14)))
  for (let turns = 0; kv.pendingCommits === 0 && turns < 100; turns++) {
    await new Promise((resolve) => setImmediate(resolve))
  }
  assert.is(kv.pendingCommits, 1)
  const crashed = kv.durableCopy()
  assert.ok(kv.get(objectKey('b', 'late')) !== undefined)
  assert.equal(crashed.get(objectKey('b', 'late')), undefined)
  assert.equal(auditStore(crashed), [])
  assert.equal(auditStore(kv), [])
  kv.resume()
  value(await pending)
})

/** Commits `edit` of the record under `key`, returns the audit's lines, and restores it. */
async function auditEdited(
  store: Store,
  key: string,
  edit: (stored: Uint8Array) => Uint8Array | null,
): Promise<string[]> {
  const kv = store.ctx.kv
  const stored = kv.get(key)
  assert.ok(stored !== undefined, `no record ${JSON.stringify(key)} to change`)
  const edited = edit(stored)
  await kv.commit([edited === null ? { type: 'del', key } : { type: 'put', key, value: edited }])
  const problems = auditStore(kv)
  await kv.commit([{ type: 'put', key, value: stored }])
  assert.equal(auditStore(kv), [], 'restored')
  return problems
}

/** The first key of a range. */
function firstKey(store: Store, from: string, to: string): string {
  const [row] = store.ctx.kv.scan({ gte: from, lt: to, limit: 1 })
  assert.ok(row !== undefined, `no record in ${JSON.stringify(from)}`)
  return row[0]
}

function inlineBlobKey(store: Store): string {
  const rows = store.ctx.kv.scan({ gte: 'H\0', lt: 'H\x01', limit: 100 })
  const inline = rows.find(([, stored]) => decodeBlob(stored).file === undefined)
  assert.ok(inline !== undefined, 'an inline blob')
  return inline[0]
}

test('a record changed behind the store is reported', async () => {
  const store = await populatedStore()
  const blob = inlineBlobKey(store)
  const sha256 = blob.slice(2)
  const held = decodeBlob(store.ctx.kv.get(blob) as Uint8Array).refs
  const refs = await auditEdited(store, blob, (stored) =>
    encodeRecord({ ...decodeBlob(stored), refs: held + 1 }),
  )
  assert.equal(refs, [`H\\0${sha256}: refs ${held + 1}, but ${held} records name it`])
  const moreObjects = await auditEdited(store, COUNTERS_KEY, (stored) => {
    const counters = decodeCounters(stored)
    return encodeRecord({ ...counters, objects: counters.objects + 1 })
  })
  assert.equal(moreObjects.length, 1)
  assert.match(moreObjects[0] ?? '', /^C\\0: objects \d+, the records give \d+$/)
  const bucketBytes = await auditEdited(store, 'B\0v', (stored) => {
    const bucket = decodeBucket(stored)
    return encodeRecord({ ...bucket, bytes: bucket.bytes - 1 })
  })
  assert.equal(bucketBytes.length, 1)
  assert.match(bucketBytes[0] ?? '', /^B\\0v: bytes \d+, the records give \d+$/)
  const flipped = await auditEdited(store, `D\0${sha256}`, (stored) => {
    const changed = new Uint8Array(stored)
    changed[0] = (changed[0] ?? 0) ^ 1
    return changed
  })
  assert.equal(flipped, [`D\\0${sha256}: not the CRC32 of its blob`])
  const noInline = await auditEdited(store, `D\0${sha256}`, () => null)
  assert.equal(noInline, [`D\\0${sha256}: missing, its blob is inline`])
  const noFile = await auditEdited(store, firstKey(store, 'F\0', 'F\x01'), () => null)
  assert.equal(noFile.length, 1)
  assert.match(noFile[0] ?? '', /^H\\0[0-9a-f]{64}: file [0-9a-f]{32} has no file record$/)
  // An object gone without its references: its blob's refs and the counters disagree.
  const object = objectKey('b', 'small')
  const record = decodeObject(store.ctx.kv.get(object) as Uint8Array)
  const lost = await auditEdited(store, object, () => null)
  for (const start of [`H\\0${record.sha256}: refs`, 'C\\0: objects', 'B\\0b: objects']) {
    assert.ok(
      lost.some((line) => line.startsWith(start)),
      `${start} in ${lost.join('\n')}`,
    )
  }
})

test('cluster mode: each digest is what its records give, one changed is reported', async () => {
  // Every step above audits the digests too, the archive of a null version among them.
  const store = await populatedStore(clusterStore())
  assert.equal(auditStore(store.ctx.kv), [])
  const digests = store.ctx.kv.scan({ gte: 'E\0', lt: 'E\x01', limit: 100 })
  assert.ok(digests.length > 3, 'keys with digests')
  const [digestKey] = digests[0] as [string, Uint8Array]
  const flipped = await auditEdited(store, digestKey, (stored) => {
    const changed = new Uint8Array(stored)
    changed[0] = (changed[0] ?? 0) ^ 1
    return changed
  })
  assert.equal(flipped, [`${show(digestKey)}: not the digest its records give`])
  // A version changed without its digest: the key's, its leaf's and its root's disagree.
  const version = firstKey(store, 'V\0', 'V\x01')
  const changed = await auditEdited(store, version, (stored) =>
    encodeRecord({ ...decodeObject(stored), etag: '"changed"' }),
  )
  assert.equal(changed.length, 3, changed.join('\n'))
  assert.ok(changed.every((line) => line.endsWith(': not the digest its records give')))
  // A key without its digest, and a digest of no key.
  const lost = await auditEdited(store, digestKey, () => null)
  assert.ok(lost.includes(`${show(digestKey)}: missing, its records give a digest`), lost.join())
  const strayKey = `${digestKey}-none`
  await store.ctx.kv.commit([{ type: 'put', key: strayKey, value: new Uint8Array(32).fill(1) }])
  assert.equal(auditStore(store.ctx.kv), [
    `${show(strayKey)}: a digest of nothing the records hold`,
  ])
  await store.ctx.kv.commit([{ type: 'del', key: strayKey }])
  // Single mode keeps none, and the audit has none to check.
  const single = await populatedStore()
  assert.equal(single.ctx.kv.scan({ gte: 'E\0', lt: 'E\x01', limit: 1 }), [])
})

function show(key: string): string {
  return key.replaceAll('\0', '\\0')
}

test('ranges larger than one scan are read whole', async () => {
  // 2,500 more objects naming the blob of one, with its refs and every counter to match.
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send(put('b', 'seed', pattern(SMALL, 1))))
  const kv = store.ctx.kv
  const count = 2501
  const record = kv.get(objectKey('b', 'seed')) as Uint8Array
  const ops: KvOp[] = []
  for (let index = 1; index < count; index++) {
    ops.push({ type: 'put', key: objectKey('b', `k${index}`), value: record })
  }
  const blob = firstKey(store, 'H\0', 'H\x01')
  const figures = { objects: count, bytes: count * SMALL }
  const blobRecord = { ...decodeBlob(kv.get(blob) as Uint8Array), refs: count }
  const bucket = { ...decodeBucket(kv.get('B\0b') as Uint8Array), ...figures }
  const counters = { buckets: 1, ...figures, blobs: 1, refs: count }
  ops.push({ type: 'put', key: blob, value: encodeRecord(blobRecord) })
  ops.push({ type: 'put', key: 'B\0b', value: encodeRecord(bucket) })
  ops.push({ type: 'put', key: COUNTERS_KEY, value: encodeRecord(counters) })
  await kv.commit(ops)
  assert.equal(auditStore(kv), [])
  // An object on the third page of the range: one more reference, object and size than remain.
  await kv.commit([{ type: 'del', key: objectKey('b', 'k999') }])
  const problems = auditStore(kv)
  assert.is(problems.length, 6, problems.join('\n')) // refs; objects, bytes, refs; the bucket's
  assert.ok(problems[0]?.startsWith(`H\\0${blob.slice(2)}: refs ${count}, but ${count - 1}`))
})

test.run()
