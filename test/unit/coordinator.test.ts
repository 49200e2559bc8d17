/** Goal: the cluster coordinator's quorum logic. A PUT answers after W acknowledgements and every
 * replica ends with the same record; a replica that misses a change is hinted (also one that
 * misses a complete whose quorum failed before the replica that took it answered), and without a
 * quorum the PUT is refused before its body is read; a tombstone wins over a replica's stale
 * object and read repair removes it; a newer object the local store missed is relayed from a
 * replica, and read repair writes it there with the same record; a merged listing hides a key
 * deleted where one replica missed the delete, and shows a key only one replica holds; of two
 * racing If-None-Match PUTs one wins; DeleteObjects reaches every partition's replicas; a silent
 * replica costs a read the hedge, not its deadline; a relayed read whose replica's copy fails its
 * CRC32 before the first byte takes the same version from the next replica that holds it; a put
 * and a delete go by the versioning the coordinator read, where a replica's own catalog leads.
 * Method: test/support/coordinated-cluster.ts: three real replica-stores and n1's real
 * coordinator in this thread on fake contexts sharing one manual clock; a test cuts nodes (their
 * calls answer `unavailable`) or holds their answers, and reads each store's own record back. */
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { blobKey } from '../../actors/replica-store/keys.js'
import { decodeBlob } from '../../actors/replica-store/records.js'
import type { Result } from '../../protocol/errors.js'
import { hlcString, nodeTag } from '../../protocol/hlc.js'
import type {
  AbsentResult,
  BucketStats,
  CoordinatorMsg,
  CoordinatorCounters,
  DeleteManyResult,
  GetResult,
  Hint,
  KeyBrought,
  KeySynced,
  MarkerResult,
  PartInfo,
  PutResult,
  StoreMsg,
} from '../../protocol/messages.js'
import type { KeyManifest, Purged } from '../../protocol/anti-entropy.js'
import type { ListPage } from '../../protocol/objects.js'
import { partitionOf } from '../../protocol/placement.js'
import { HEDGE_MS } from '../../actors/coordinator/quorum.js'
import {
  CoordinatedCluster,
  NODE_IDS,
  type Body,
  type NodeId,
} from '../support/coordinated-cluster.js'
import { memoryStream } from '../support/fake-context.js'

const BUCKET = 'photos'
const HTTP = { contentType: 'application/octet-stream' }

function value<T>(result: Result<T>): T {
  if (!result.ok) assert.unreachable(`expected ok, got ${result.code}: ${result.detail}`)
  return (result as { ok: true; value: T }).value
}

function code(result: Result<unknown>): string {
  return result.ok ? 'ok' : result.code
}

/** A body larger than a store keeps inline, so it travels and is kept as a blob file. */
function large(seed: number): Uint8Array {
  const data = new Uint8Array(100_000)
  for (let index = 0; index < data.length; index++) data[index] = (index * 7 + seed) & 0xff
  return data
}

function text(data: string): Uint8Array {
  return new TextEncoder().encode(data)
}

/** A PUT whose body comes on a stream, as the ingress sends one; the stream is returned too. */
function streamedPut(key: string, data: Uint8Array, conditions?: { ifNoneMatch: '*' }) {
  const stream = memoryStream()
  stream.push(data)
  stream.end()
  const msg: Body<CoordinatorMsg> = {
    kind: 'object.put',
    bucket: BUCKET,
    key,
    http: HTTP,
    userMeta: {},
    expect: {},
    stream: stream.handle,
    ...(conditions === undefined ? {} : { conditions }),
  }
  return { msg, stream }
}

/** A PUT straight to one store, stamped as a coordinator would: a write the others missed. */
function stampedPut(key: string, data: Uint8Array, stamp: string): Body<StoreMsg> {
  return {
    kind: 'object.put',
    bucket: BUCKET,
    key,
    http: HTTP,
    userMeta: {},
    expect: {},
    body: data,
    stamp,
  }
}

async function put(cluster: CoordinatedCluster, key: string, data: Uint8Array) {
  return value(await cluster.send<PutResult>(streamedPut(key, data).msg))
}

async function newBucket(cluster: CoordinatedCluster, versioning?: 'Enabled'): Promise<void> {
  value(await cluster.send({ kind: 'bucket.create', bucket: BUCKET, owner: 'u1' }))
  if (versioning !== undefined) {
    value(await cluster.send({ kind: 'bucket.versioning.put', bucket: BUCKET, status: versioning }))
  }
}

/** A GET through the coordinator: the bytes (hex, for short diffs), or the failure's code. */
async function getThrough(cluster: CoordinatedCluster, key: string): Promise<string> {
  const stream = memoryStream()
  const answer = await cluster.send<GetResult | MarkerResult>({
    kind: 'object.get',
    bucket: BUCKET,
    key,
    stream: stream.handle,
  })
  if (!answer.ok) return answer.code
  if ('marker' in answer.value) return 'marker'
  // A small body comes with the answer (the stream then carries nothing), a larger one on it.
  if (answer.value.body !== undefined) return hex(answer.value.body)
  stream.request(0, answer.value.info.size - 1)
  const got = await cluster.drive(stream.received(), 0)
  assert.ok(got.ended, 'the body came whole')
  return hex(got.bytes)
}

/** A newer version of `k` written straight to n2's and n3's stores, stamped as a coordinator
 * would: one n1 missed. */
async function newerOnN2AndN3(
  cluster: CoordinatedCluster,
  bytes: Uint8Array,
): Promise<{ stamp: string; written: PutResult }> {
  const stamp = hlcString({ wallMs: cluster.clock.nowMs, logical: 0, node: nodeTag('n2') })
  const written = value(await cluster.sendTo<PutResult>('n2', stampedPut('k', bytes, stamp)))
  value(await cluster.sendTo<PutResult>('n3', stampedPut('k', bytes, stamp)))
  return { stamp, written }
}

function hex(data: Uint8Array): string {
  return Buffer.from(data).toString('hex')
}

/** What one store holds of a key, asked of it directly (stamped: an absence is an answer). */
async function heldBy(cluster: CoordinatedCluster, id: NodeId, key: string) {
  return value(
    await cluster.sendTo<GetResult | AbsentResult | MarkerResult>(id, {
      kind: 'object.get',
      bucket: BUCKET,
      key,
      stamped: true,
    }),
  )
}

/** The bytes one store holds of a key, streamed from it directly (hex). */
async function bytesOn(cluster: CoordinatedCluster, id: NodeId, key: string): Promise<string> {
  const stream = memoryStream()
  const head = value(
    await cluster.sendTo<GetResult>(id, {
      kind: 'object.get',
      bucket: BUCKET,
      key,
      stream: stream.handle,
    }),
  )
  if (head.body !== undefined) return hex(head.body)
  stream.request(0, head.info.size - 1)
  const got = await cluster.drive(stream.received(), 0)
  assert.ok(got.ended, 'the body came whole')
  return hex(got.bytes)
}

async function isAbsent(cluster: CoordinatedCluster, id: NodeId, key: string): Promise<boolean> {
  return 'absent' in (await heldBy(cluster, id, key))
}

async function hintCount(cluster: CoordinatedCluster): Promise<number> {
  return value(await cluster.send<number>({ kind: 'hint.count' }))
}

function answeredYet<T>(request: Promise<T>): () => boolean {
  let done = false
  void request.then(() => (done = true))
  return () => done
}

test('a PUT answers after W acknowledgements; every replica holds the same record', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster, 'Enabled')
  const n2 = cluster.hold('n2', ['object.put'])
  const n3 = cluster.hold('n3', ['object.put'])
  const data = large(1)
  const request = cluster.send<PutResult>(streamedPut('k', data).msg)
  const answered = answeredYet(request)
  await cluster.settle()
  assert.is(n2.waiting() + n3.waiting(), 2, 'both other replicas took the body')
  assert.not.ok(answered(), 'one acknowledgement (the local one) is not a write quorum')
  n2.release()
  await cluster.settle()
  assert.ok(answered(), 'the second acknowledgement answers')
  assert.is(n3.waiting(), 1, 'without waiting for the third')
  const written = value(await request)
  assert.type(written.versionId, 'string')
  n3.release()
  await cluster.settle()
  for (const id of NODE_IDS) {
    const held = await heldBy(cluster, id, 'k')
    assert.ok('info' in held, id)
    const { etag, lastModifiedMs, versionId } = (held as GetResult).info
    assert.equal(
      { etag, lastModifiedMs, versionId },
      { etag: written.etag, lastModifiedMs: written.lastModifiedMs, versionId: written.versionId },
      id,
    )
  }
  assert.is(await getThrough(cluster, 'k'), hex(data))
})

test('a replica that misses a PUT is hinted; two missing refuse it, its body unread', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  // Cut off while gossip still shows it Alive: it is sent the write, which fails.
  cluster.cut('n3')
  await put(cluster, 'cut', text('one'))
  await cluster.settle()
  assert.is(await hintCount(cluster), 1, 'a hint for n3')
  // Dead to gossip: it is not sent the write at all, and is hinted all the same.
  cluster.setStatus('n3', 'Dead')
  cluster.advance(1_000)
  await put(cluster, 'dead', text('two'))
  await cluster.settle()
  assert.is(await hintCount(cluster), 2, 'a hint for each key n3 missed')
  assert.ok(await isAbsent(cluster, 'n3', 'cut'))
  // Two of three cut (gossip still says Alive): no write quorum, and the body is not read.
  cluster.setStatus('n3', 'Alive')
  cluster.cut('n2')
  cluster.advance(1_000)
  const { msg, stream } = streamedPut('refused', large(2))
  const refused = await cluster.send<PutResult>(msg)
  assert.is(code(refused), 'unavailable')
  assert.ok(stream.cancelled !== null, 'the body stream was cancelled')
  assert.is(stream.unread, 1, 'and its bytes were never read')
  await cluster.settle()
  assert.ok(await isAbsent(cluster, 'n1', 'refused'), 'nothing written locally either')
  assert.is(await hintCount(cluster), 2, 'no hint for a change no replica took')
  // Counted for /metrics, as is a read that finds one replica where it needs two; a replica's own
  // refusal (no such key) is no quorum failure.
  assert.is(await getThrough(cluster, 'cut'), 'unavailable')
  cluster.heal('n2')
  assert.is(await getThrough(cluster, 'never-written'), 'no_such_key')
  const counters = value(await cluster.send<CoordinatorCounters>({ kind: 'coordinator.counters' }))
  assert.equal([counters.quorumWriteFailures, counters.quorumReadFailures], [1, 1])
})

test('hints are paged and delivered by key.bring: objects, deletions, no lost change', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'gone', text('to delete'))
  cluster.cut('n3')
  const written = await put(cluster, 'k', large(9))
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'gone' }))
  // Written and deleted while n3 was away: n3 must still get the tombstone.
  await put(cluster, 'never', text('brief'))
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'never' }))
  // A new upload of `k` changes no key state: its stamp, newer than the put's, must not take the
  // hint's place (then no state of `k` would ever reach the hinted stamp).
  const http = { contentType: 'application/octet-stream' }
  value(await cluster.send({ kind: 'upload.create', bucket: BUCKET, key: 'k', http, userMeta: {} }))
  await cluster.settle()
  const page = value(
    await cluster.send<Hint[]>({ kind: 'hint.page', node: 'n3', after: null, limit: 10 }),
  )
  assert.equal(
    page.map((hint) => [hint.node, hint.key]),
    [
      ['n3', 'gone'],
      ['n3', 'k'],
      ['n3', 'never'],
    ],
  )
  assert.is((page[1] as Hint).stamp, ((await heldBy(cluster, 'n1', 'k')) as GetResult).info.stamp)
  // The clock moves while a delivery that failed waits to try again (bring.ts).
  const bring = (hint: Hint) =>
    cluster.drive(cluster.send<KeyBrought>({ kind: 'key.bring', ...hint, node: hint.node }), 500)
  // n3 still cut: the delivery fails, and the hints stay.
  assert.is(code(await bring(page[1] as Hint)), 'unavailable')
  cluster.heal('n3')
  // A change no reachable replica holds while a replica is out of reach may rest there: it is
  // never delivered.
  const unheld = { ...(page[1] as Hint), stamp: `${(page[1] as Hint).stamp}z` }
  cluster.cut('n2')
  assert.is(code(await bring(unheld)), 'unavailable')
  cluster.heal('n2')
  // Every replica answered and none holds it: the change is nowhere (its write failed), and the
  // replica is brought the newest state there is.
  assert.equal(value(await bring(unheld)), 'repaired')
  assert.equal(value(await bring(page[1] as Hint)), 'current')
  assert.equal(value(await bring(page[0] as Hint)), 'repaired')
  await cluster.settle()
  const held = await heldBy(cluster, 'n3', 'k')
  assert.ok('info' in held, 'n3 holds the object')
  assert.is((held as GetResult).info.etag, written.etag)
  assert.is((held as GetResult).info.lastModifiedMs, written.lastModifiedMs)
  assert.ok(await isAbsent(cluster, 'n3', 'gone'), 'n3 deleted the key')
  assert.equal(value(await bring(page[2] as Hint)), 'repaired')
  const tombstone = await heldBy(cluster, 'n3', 'never')
  assert.equal(tombstone, { absent: true, keyStamp: (page[2] as Hint).stamp })
  assert.equal(value(await bring(page[1] as Hint)), 'current')
  // Done: removed, unless a newer hint of the key replaced it meanwhile.
  const newer = { ...(page[0] as Hint), stamp: `${(page[0] as Hint).stamp}z` }
  value(await cluster.send({ kind: 'hint.put', hints: [newer] }))
  assert.is(value(await cluster.send<number>({ kind: 'hint.done', hints: page })), 2)
  const left = value(
    await cluster.send<Hint[]>({ kind: 'hint.page', node: 'n3', after: null, limit: 10 }),
  )
  assert.equal(left, [newer])
  assert.is(await hintCount(cluster), 1)
})

async function manifestOf(cluster: CoordinatedCluster, id: NodeId, key: string) {
  return value(await cluster.sendTo<KeyManifest>(id, { kind: 'key.manifest', bucket: BUCKET, key }))
}

test('key.sync gives each replica what it lacks: versions, deletes, multipart', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster, 'Enabled')
  const first = await put(cluster, 'v', text('one'))
  cluster.cut('n3')
  await put(cluster, 'v', large(1))
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'v' }))
  value(
    await cluster.send({
      kind: 'object.delete',
      bucket: BUCKET,
      key: 'v',
      versionId: first.versionId as string,
    }),
  )
  const big = new Uint8Array(5 * 1024 * 1024).fill(7)
  const multipart = await uploadThrough(cluster, 'm', [big, large(3)], {
    userMeta: { origin: 'sync' },
  })
  cluster.heal('n3')
  await cluster.settle()
  for (const key of ['v', 'm']) {
    const before = await manifestOf(cluster, 'n3', key)
    assert.not.equal(before.digest, (await manifestOf(cluster, 'n1', key)).digest, key)
    const synced = value(
      await cluster.send<KeySynced>({ kind: 'key.sync', bucket: BUCKET, key, nodes: ['n1', 'n3'] }),
    )
    assert.ok(synced.replayed > 0, key)
    const [held, theirs] = [
      await manifestOf(cluster, 'n3', key),
      await manifestOf(cluster, 'n1', key),
    ]
    assert.equal(held, theirs, `${key}: n3 holds what n1 holds`)
  }
  const copied = await heldBy(cluster, 'n3', 'm')
  assert.ok('info' in copied)
  assert.is((copied as GetResult).info.etag, multipart.etag)
  assert.is((copied as GetResult).info.partsCount, 2)
  assert.equal((copied as GetResult).info.userMeta, { origin: 'sync' })
  // In sync: nothing more to replay either way.
  const again = value(
    await cluster.send<KeySynced>({
      kind: 'key.sync',
      bucket: BUCKET,
      key: 'v',
      nodes: ['n3', 'n1'],
    }),
  )
  assert.equal(again, { replayed: 0, bytes: 0 })
})

/** A bucket's objects and bytes as one store counts them (its own figures, asked directly), or
 * through the coordinator for the cluster. */
async function figuresOf(cluster: CoordinatedCluster, id?: NodeId) {
  const asked = { kind: 'bucket.stats' as const }
  const stats = value(
    await (id === undefined
      ? cluster.send<BucketStats[]>(asked)
      : cluster.sendTo<BucketStats[]>(id, asked)),
  )
  const bucket = stats.find((one) => one.name === BUCKET)
  return { objects: bucket?.objectsCount, bytes: bucket?.storageUsedBytes }
}

/** What a listing through the coordinator adds up to. */
async function listedFigures(cluster: CoordinatedCluster) {
  const page = value(
    await cluster.send<ListPage>({
      kind: 'object.list',
      bucket: BUCKET,
      prefix: '',
      delimiter: '',
      after: '',
      maxKeys: 1000,
    }),
  )
  const { sizes } = page.objects
  return { objects: sizes.length, bytes: sizes.reduce((sum, size) => sum + size, 0) }
}

/** A multipart upload begun through the coordinator, its parts streamed, with `userMeta`;
 * `afterPart` runs after each part. */
async function uploadParts(
  cluster: CoordinatedCluster,
  key: string,
  parts: Uint8Array[],
  between: { userMeta?: Record<string, string>; afterPart?: (partNumber: number) => void },
) {
  const created = value(
    await cluster.send<{ uploadId: string }>({
      kind: 'upload.create',
      bucket: BUCKET,
      key,
      http: HTTP,
      userMeta: between.userMeta ?? {},
    }),
  )
  const completed: { partNumber: number; etag: string }[] = []
  for (const [index, data] of parts.entries()) {
    const stream = memoryStream()
    stream.push(data)
    stream.end()
    const part = value(
      await cluster.send<PartInfo>({
        kind: 'upload.part',
        bucket: BUCKET,
        key,
        uploadId: created.uploadId,
        partNumber: index + 1,
        expect: {},
        stream: stream.handle,
      }),
    )
    completed.push({ partNumber: index + 1, etag: part.etag })
    between.afterPart?.(index + 1)
  }
  return { uploadId: created.uploadId, parts: completed }
}

/** A multipart upload through the coordinator (uploadParts); `beforeComplete` runs before the
 * complete. */
async function uploadThrough(
  cluster: CoordinatedCluster,
  key: string,
  parts: Uint8Array[],
  between: {
    userMeta?: Record<string, string>
    afterPart?: (partNumber: number) => void
    beforeComplete?: () => void
  },
) {
  const { uploadId, parts: completed } = await uploadParts(cluster, key, parts, between)
  between.beforeComplete?.()
  const done = value(
    await cluster.send<PutResult>({
      kind: 'upload.complete',
      bucket: BUCKET,
      key,
      uploadId,
      parts: completed,
    }),
  )
  return { uploadId, etag: done.etag }
}

test('a multipart object a hint brings to a replica that held its upload counts once', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'small', text('thirty bytes of a small object'))
  const parts = [new Uint8Array(5 * 1024 * 1024).fill(3), large(4)]
  const size = parts.reduce((sum, part) => sum + part.byteLength, 0)
  // n3 holds the upload and every part, then misses the complete (down): a hint is kept for it.
  await uploadThrough(cluster, 'big', parts, { beforeComplete: () => cluster.cut('n3') })
  await cluster.settle()
  cluster.heal('n3')
  const [hint] = value(
    await cluster.send<Hint[]>({ kind: 'hint.page', node: 'n3', after: null, limit: 10 }),
  )
  assert.ok(hint !== undefined && hint.key === 'big', 'n3 is hinted the complete')
  assert.equal(value(await cluster.send<KeyBrought>({ kind: 'key.bring', ...hint })), 'repaired')
  await cluster.settle()
  const listed = await listedFigures(cluster)
  assert.equal(listed, { objects: 2, bytes: size + 30 })
  for (const id of NODE_IDS) assert.equal(await figuresOf(cluster, id), listed, id)
  assert.equal(await figuresOf(cluster), listed, 'the cluster figures')
})

test('a pool larger than RF counts each object once, though each node holds a part', async () => {
  const cluster = await CoordinatedCluster.start({ SVC_REPLICATION_FACTOR: '2' })
  await newBucket(cluster)
  for (let index = 0; index < 12; index++) await put(cluster, `k${index}`, text(`object ${index}`))
  await cluster.settle()
  const held = await Promise.all(NODE_IDS.map(async (id) => (await figuresOf(cluster, id)).objects))
  assert.is(
    held.reduce((sum: number, objects) => sum + (objects ?? 0), 0),
    24,
    'two copies of each',
  )
  assert.ok(
    held.every((objects) => objects !== 12),
    `no node holds every object: ${held.join(', ')}`,
  )
  const listed = await listedFigures(cluster)
  assert.is(listed.objects, 12)
  assert.equal(await figuresOf(cluster), listed)
})

test('a replica that refused a complete the quorum took ends the upload there', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  const parts = [new Uint8Array(5 * 1024 * 1024).fill(5), large(6)]
  const size = parts.reduce((sum, part) => sum + part.byteLength, 0)
  // n3 misses the second part, so it answers the complete InvalidPart and keeps the first.
  const { uploadId } = await uploadThrough(cluster, 'big', parts, {
    afterPart: (partNumber) => (partNumber === 1 ? cluster.cut('n3') : cluster.heal('n3')),
  })
  await cluster.settle()
  const states = value(
    await cluster.sendTo<string[]>('n3', {
      kind: 'upload.states',
      bucket: BUCKET,
      uploadIds: [uploadId],
    }),
  )
  assert.equal(states, ['ended'], 'n3 no longer holds the upload open')
  assert.equal(await figuresOf(cluster, 'n3'), { objects: 0, bytes: 0 })
  const [hint] = value(
    await cluster.send<Hint[]>({ kind: 'hint.page', node: 'n3', after: null, limit: 10 }),
  )
  assert.ok(hint !== undefined, 'n3 is hinted the complete it refused')
  assert.equal(value(await cluster.send<KeyBrought>({ kind: 'key.bring', ...hint })), 'repaired')
  await cluster.settle()
  const listed = await listedFigures(cluster)
  assert.equal(listed, { objects: 1, bytes: size })
  for (const id of NODE_IDS) assert.equal(await figuresOf(cluster, id), listed, id)
})

test('a complete that failed its quorum before a replica took it is hinted to others', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  const parts = [new Uint8Array(5 * 1024 * 1024).fill(7), large(8)]
  const size = parts.reduce((sum, part) => sum + part.byteLength, 0)
  // Every replica holds the upload and its parts; the complete is stamped with n2 still reachable.
  const { uploadId, parts: completed } = await uploadParts(cluster, 'big', parts, {})
  cluster.cut('n3')
  const stamps = cluster.hold('n2', ['object.stamps'])
  const local = cluster.hold('n1', ['upload.complete'])
  const request = cluster.send<PutResult>({
    kind: 'upload.complete',
    bucket: BUCKET,
    key: 'big',
    uploadId,
    parts: completed,
  })
  await cluster.settle()
  assert.is(stamps.waiting(), 1, 'n2 answered the stamp read')
  // Then cut off: the complete fails on n2 and n3 at once, while n1, which took it, answers late.
  cluster.cut('n2')
  stamps.release()
  await cluster.settle()
  assert.is(local.waiting(), 1, 'n1 took the complete and keeps its answer')
  assert.is(code(await request), 'unavailable', 'no quorum acknowledged the complete')
  local.release()
  await cluster.settle()
  cluster.heal('n2')
  cluster.heal('n3')
  const hints = value(
    await cluster.send<Hint[]>({ kind: 'hint.page', node: 'n2', after: null, limit: 10 }),
  ).concat(
    value(await cluster.send<Hint[]>({ kind: 'hint.page', node: 'n3', after: null, limit: 10 })),
  )
  assert.equal(
    hints.map((hint) => [hint.node, hint.key]),
    [
      ['n2', 'big'],
      ['n3', 'big'],
    ],
    'both replicas that missed the complete are hinted once n1 took it',
  )
  for (const hint of hints) {
    assert.is(value(await cluster.send<KeyBrought>({ kind: 'key.bring', ...hint })), 'repaired')
  }
  await cluster.settle()
  for (const id of NODE_IDS) {
    const states = value(
      await cluster.sendTo<string[]>(id, {
        kind: 'upload.states',
        bucket: BUCKET,
        uploadIds: [uploadId],
      }),
    )
    assert.equal(states, ['ended'], `${id} no longer holds the upload open`)
  }
  const listed = await listedFigures(cluster)
  assert.equal(listed, { objects: 1, bytes: size })
  for (const id of NODE_IDS) assert.equal(await figuresOf(cluster, id), listed, id)
})

/** The grace of the tests of purged tombstones: a minute, as days. */
const GRACE_MS = 60_000

/** n3 purges its tombstones of `key`'s partition older than now, as its anti-entropy does once
 * the other replicas hold them too (here whatever their age: the store does what it is told). */
async function purgeOnN3(cluster: CoordinatedCluster, key: string): Promise<number> {
  const purge = {
    kind: 'ae.purge' as const,
    partition: partitionOf(BUCKET, key),
    beforeMs: cluster.clock.nowMs + 1,
    after: null,
    limit: 1_000,
  }
  return value(await cluster.sendTo<Purged>('n3', purge)).purged
}

const NOTHING: KeyManifest = { stamp: null, versions: [], deleted: [], digest: null }

test('key.sync and key.bring leave a tombstone past the grace where it was purged', async () => {
  const cluster = await CoordinatedCluster.start({
    SVC_GC_GRACE_DAYS: String(GRACE_MS / 86_400_000),
  })
  await newBucket(cluster)
  const sync = (key: string) =>
    cluster.send<KeySynced>({ kind: 'key.sync', bucket: BUCKET, key, nodes: ['n1', 'n3'] })
  // Deleted everywhere, purged on n3, then past the grace: n1's tombstone is not replayed to n3,
  // by a sync or by a hint's delivery.
  await put(cluster, 'old', text('old'))
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'old' }))
  // Its stamp and its null tombstone.
  assert.is(await purgeOnN3(cluster, 'old'), 2)
  cluster.advance(GRACE_MS + 1_000)
  await cluster.settle()
  const tombstone = (await manifestOf(cluster, 'n1', 'old')).stamp as string
  assert.equal(value(await sync('old')), { replayed: 0, bytes: 0 })
  const hint = { bucket: BUCKET, key: 'old', node: 'n3', stamp: tombstone }
  assert.is(value(await cluster.send<KeyBrought>({ kind: 'key.bring', ...hint })), 'current')
  assert.equal(await manifestOf(cluster, 'n3', 'old'), NOTHING)
  assert.is((await manifestOf(cluster, 'n1', 'old')).stamp, tombstone)
  // Within the grace, the same tombstone missing on n3 is replayed to it.
  await put(cluster, 'young', text('young'))
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'young' }))
  assert.is(await purgeOnN3(cluster, 'young'), 2)
  assert.is(value(await sync('young')).replayed, 1)
  assert.equal(await manifestOf(cluster, 'n3', 'young'), await manifestOf(cluster, 'n1', 'young'))
  // Past the grace, a deletion n3 missed while it holds the object is replayed all the same.
  await put(cluster, 'stale', text('stale'))
  cluster.cut('n3')
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'stale' }))
  cluster.heal('n3')
  cluster.advance(GRACE_MS + 1_000)
  await cluster.settle()
  assert.ok('info' in (await heldBy(cluster, 'n3', 'stale')))
  assert.is(value(await sync('stale')).replayed, 1)
  assert.ok(await isAbsent(cluster, 'n3', 'stale'))
})

test('an old delete by id is replayed where its version is, not where it was purged', async () => {
  const cluster = await CoordinatedCluster.start({
    SVC_GC_GRACE_DAYS: String(GRACE_MS / 86_400_000),
  })
  await newBucket(cluster, 'Enabled')
  const first = await put(cluster, 'v', text('one'))
  await put(cluster, 'v', text('two'))
  cluster.cut('n3')
  const byId = { kind: 'object.delete' as const, bucket: BUCKET, key: 'v' }
  value(await cluster.send({ ...byId, versionId: first.versionId as string }))
  cluster.heal('n3')
  cluster.advance(GRACE_MS + 1_000)
  await cluster.settle()
  const sync = () =>
    cluster.send<KeySynced>({ kind: 'key.sync', bucket: BUCKET, key: 'v', nodes: ['n1', 'n3'] })
  // n3 still holds the version: the delete, past the grace, is replayed.
  assert.is((await manifestOf(cluster, 'n3', 'v')).versions.length, 2)
  assert.is(value(await sync()).replayed, 1)
  const synced = await manifestOf(cluster, 'n3', 'v')
  assert.equal(synced, await manifestOf(cluster, 'n1', 'v'))
  // n3 purges it: n1's is not replayed back; the version stays gone.
  assert.is(await purgeOnN3(cluster, 'v'), 1)
  assert.equal(value(await sync()), { replayed: 0, bytes: 0 })
  const purged = await manifestOf(cluster, 'n3', 'v')
  assert.equal([purged.deleted, purged.versions], [[], synced.versions])
})

test('a DELETE that n3 missed wins over its stale object, which read repair removes', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'k', large(3))
  cluster.cut('n3')
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'k' }))
  cluster.heal('n3')
  assert.ok('info' in (await heldBy(cluster, 'n3', 'k')), 'n3 still holds the object')
  // n2 cut at the read, so the read quorum is n1 (the tombstone) and n3 (the stale object).
  cluster.cut('n2')
  assert.is(await getThrough(cluster, 'k'), 'no_such_key')
  await cluster.settle()
  assert.ok(await isAbsent(cluster, 'n3', 'k'), 'n3 repaired')
  const counters = value(await cluster.send<CoordinatorCounters>({ kind: 'coordinator.counters' }))
  assert.is(counters.readRepairs, 1)
  cluster.heal('n2')
  for (const id of NODE_IDS) assert.ok(await isAbsent(cluster, id, 'k'), id)
})

test('a newer object n1 missed is relayed from a replica; n1 is repaired with it', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'k', large(5))
  cluster.advance(10)
  // A write n1 missed: straight to n2's and n3's stores, stamped as a coordinator would.
  const newer = large(6)
  const { stamp, written } = await newerOnN2AndN3(cluster, newer)
  assert.is(await getThrough(cluster, 'k'), hex(newer), 'the newest stamp wins, relayed')
  await cluster.settle()
  const repaired = await heldBy(cluster, 'n1', 'k')
  assert.ok('info' in repaired, 'n1 holds the object')
  const { etag, lastModifiedMs } = (repaired as GetResult).info
  assert.equal(
    { etag, lastModifiedMs, keyStamp: repaired.keyStamp },
    { etag: written.etag, lastModifiedMs: written.lastModifiedMs, keyStamp: stamp },
  )
  assert.is(await bytesOn(cluster, 'n1', 'k'), hex(newer), "n1's own bytes")
  const counters = value(await cluster.send<CoordinatorCounters>({ kind: 'coordinator.counters' }))
  assert.is(counters.readRepairs, 1)
})

test('a direct read of an object n1 missed names its holder, where it is the newest', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'k', large(5))
  cluster.advance(10)
  const newer = large(9)
  const { stamp } = await newerOnN2AndN3(cluster, newer)
  const unused = memoryStream()
  const answer = value(
    await cluster.send<GetResult>({
      kind: 'object.get',
      bucket: BUCKET,
      key: 'k',
      stream: unused.handle,
      direct: true,
    }),
  )
  const readFrom = answer.readFrom
  assert.ok(readFrom !== undefined, 'the answer names where the bytes are')
  assert.ok(readFrom.target.id === 'n2' || readFrom.target.id === 'n3', `${readFrom.target.id}`)
  assert.is(readFrom.keyStamp, stamp)
  assert.ok((await cluster.drive(unused.received(), 0)).ended === false, 'nothing came relayed')
  // What the ingress does with it: the read, on the holder, of the version the quorum found.
  const stream = memoryStream()
  const held = value(
    await cluster.sendTo<GetResult>(readFrom.target.id as NodeId, {
      ...readFrom.msg,
      stream: stream.handle,
    }),
  )
  assert.is(held.keyStamp, stamp)
  stream.request(0, newer.byteLength - 1)
  const got = await cluster.drive(stream.received(), 0)
  assert.is(hex(got.bytes), hex(newer))
  await cluster.settle()
})

test('a relay whose copy is corrupt takes the same version from the next replica', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'k', large(7))
  cluster.advance(10)
  // A newer version on n2 and n3 only, so that the read relays it; n2's copy then goes bad.
  const newer = large(8)
  const { stamp } = await newerOnN2AndN3(cluster, newer)
  await cluster.settle()
  const n2 = cluster.store('n2')
  const sha256 = createHash('sha256').update(newer).digest('hex')
  const blob = decodeBlob(n2.ctx.kv.get(blobKey(sha256)) as Uint8Array)
  n2.ctx.blobs.corrupt(blob.file as string, 99)
  const asked = cluster.asked.length
  assert.is(await getThrough(cluster, 'k'), hex(newer), 'the right bytes, from n3')
  const reads = cluster.asked.slice(asked).filter((one) => one.kind === 'object.get')
  // The quorum asked n1 and n2 (the winner: read repair reads it too, for n1); n3 only when
  // n2's copy failed.
  assert.equal(reads.slice(0, 2), [
    { node: 'n1', from: 'n1', kind: 'object.get' },
    { node: 'n2', from: 'n1', kind: 'object.get' },
  ])
  assert.ok(
    reads.some((one) => one.node === 'n3'),
    'n3 was read',
  )
  assert.ok(n2.state.damaged.has(sha256), "n2's store holds its copy damaged")
  await cluster.settle()
})

test('a listing hides a key deleted where n3 missed it, and shows a key only n3 has', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  await put(cluster, 'deleted', text('gone'))
  await put(cluster, 'kept', text('here'))
  cluster.cut('n3')
  value(await cluster.send({ kind: 'object.delete', bucket: BUCKET, key: 'deleted' }))
  cluster.heal('n3')
  // A write n1 and n2 missed: straight to n3's store, stamped as a coordinator would.
  const stamp = hlcString({ wallMs: cluster.clock.nowMs, logical: 0, node: nodeTag('n3') })
  const only = value(
    await cluster.sendTo<PutResult>('n3', {
      kind: 'object.put',
      bucket: BUCKET,
      key: 'only-n3',
      http: HTTP,
      userMeta: {},
      expect: {},
      body: text('lone'),
      stamp,
    }),
  )
  assert.ok(await isAbsent(cluster, 'n1', 'only-n3'))
  assert.ok('info' in (await heldBy(cluster, 'n3', 'deleted')), 'n3 still lists the deleted key')
  const page = value(
    await cluster.send<ListPage>({
      kind: 'object.list',
      bucket: BUCKET,
      prefix: '',
      delimiter: '',
      after: '',
      maxKeys: 100,
    }),
  )
  assert.equal(page.objects.keys, ['kept', 'only-n3'])
  assert.equal(page.objects.etags[1], only.etag)
  assert.not.ok(page.truncated)
})

test('two If-None-Match PUTs of one key started together: one ok, one 412', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  for (let round = 0; round < 3; round++) {
    const key = `race-${round}`
    const first = streamedPut(key, text(`first ${round}`), { ifNoneMatch: '*' })
    const second = streamedPut(key, text(`second ${round}`), { ifNoneMatch: '*' })
    // The clock moves while they run: a claim not granted is asked again after a pause.
    const answers = await cluster.drive(
      Promise.all([cluster.send<PutResult>(first.msg), cluster.send<PutResult>(second.msg)]),
      5,
    )
    assert.equal(answers.map(code).sort(), ['ok', 'precondition_failed'], key)
    const winner = answers[0]?.ok === true ? `first ${round}` : `second ${round}`
    assert.is(await getThrough(cluster, key), hex(text(winner)), key)
  }
})

test('DeleteObjects of keys in several partitions deletes each on every replica', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  const keys: string[] = []
  const partitions = new Set<number>()
  for (let index = 0; keys.length < 4; index++) {
    const key = `key-${index}`
    if (partitions.has(partitionOf(BUCKET, key))) continue
    partitions.add(partitionOf(BUCKET, key))
    keys.push(key)
  }
  for (const key of keys) await put(cluster, key, text(key))
  await put(cluster, 'other', text('stays'))
  const result = value(
    await cluster.send<DeleteManyResult>({
      kind: 'object.delete-many',
      bucket: BUCKET,
      objects: keys.map((key) => ({ key })),
    }),
  )
  assert.equal(result.errors, [])
  assert.equal(
    result.deleted.map((entry) => entry.key),
    keys,
  )
  await cluster.settle()
  for (const id of NODE_IDS) {
    for (const key of keys) assert.ok(await isAbsent(cluster, id, key), `${key} on ${id}`)
    assert.not.ok(await isAbsent(cluster, id, 'other'), `other on ${id}`)
  }
})

test('a replica that stays silent costs a read the hedge, then the next one is asked', async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  const data = large(4)
  await put(cluster, 'k', data)
  await cluster.settle()
  const slow = cluster.hold('n2', ['object.get'])
  const asked = cluster.asked.length
  const read = getThrough(cluster, 'k')
  const answered = answeredYet(read)
  await cluster.settle()
  assert.is(slow.waiting(), 1, 'n2 was asked and keeps its answer')
  cluster.advance(HEDGE_MS - 1)
  await cluster.settle()
  assert.not.ok(answered(), 'nothing else is asked before the hedge')
  cluster.advance(1)
  await cluster.settle()
  assert.ok(answered(), 'answered at the hedge')
  assert.is(await read, hex(data))
  assert.is(slow.waiting(), 1, 'while n2 still keeps its answer')
  const gets = cluster.asked.slice(asked).filter((one) => one.kind === 'object.get')
  assert.equal(
    gets.map((one) => one.node),
    ['n1', 'n2', 'n3', 'n1'],
    'n1 and n2 asked, then n3, then n1 (the winner) streams',
  )
  slow.release()
  await cluster.settle()
})

test("a write goes by the versioning its coordinator read, not a replica's own", async () => {
  const cluster = await CoordinatedCluster.start()
  await newBucket(cluster)
  // A change asked of n2 while it was cut off fails, but took effect there first: n2's catalog
  // leads the others', and n1 coordinates.
  cluster.cut('n1')
  cluster.cut('n3')
  const change = { kind: 'bucket.versioning.put', bucket: BUCKET, status: 'Enabled' } as const
  assert.is(code(await cluster.sendTo('n2', change)), 'unavailable')
  cluster.heal('n1')
  cluster.heal('n3')
  const status = async (id: NodeId) =>
    value(
      await cluster.sendTo<{ status: string | null }>(id, {
        kind: 'bucket.versioning.get',
        bucket: BUCKET,
      }),
    ).status
  assert.equal([await status('n1'), await status('n2')], [null, 'Enabled'])
  const written = await put(cluster, 'k', text('one object'))
  assert.is(written.versionId, undefined)
  await cluster.settle()
  for (const id of NODE_IDS) {
    const held = await heldBy(cluster, id, 'k')
    assert.ok('info' in held, id)
    // n2 names a version by its own view, so the object written without versioning is `null`.
    assert.is((held as GetResult).info.versionId ?? 'null', 'null', id)
  }
  const removed = value(
    await cluster.send<{ deleteMarker: boolean }>({
      kind: 'object.delete',
      bucket: BUCKET,
      key: 'k',
    }),
  )
  assert.is(removed.deleteMarker, false)
  await cluster.settle()
  for (const id of NODE_IDS) assert.ok(await isAbsent(cluster, id, 'k'), `no marker on ${id}`)
})

test.run()
