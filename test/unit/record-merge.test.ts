// Goal: replicas converge by exchanging a key's stamped records (records.get) and merging them
// (records.merge, actors/replica-store/replication/), whatever operations made them: for every
// pair of states (objects without versioning, versions, delete markers, deletes by id, tags set
// on either side, a version written before versioning was configured, null versions written while
// it was suspended, multipart objects, a blob kept in a file, two states with one stamp in either
// order) two replicas that merged each other's records hold equal digests, equal version listings
// and equal bytes of every version, their metadata consistent (the simulator's audit); a merge
// fetches the blobs it lacks from the sender and checks them; merging again changes nothing
// (idempotent), and the rule gives the same records whichever side merges (commutative).
// Method: two cluster-mode replica-store actors in this thread on fake contexts (store-harness),
// each other's peers (a Replica.* call is a peer.request to the other store, the range of a
// Replica.Read asked of its stream as the transport does). Each case writes a shared history to
// both, then a different one to each, as a coordinator's stamped messages, then merges A's
// records into B and B's (as they were before) into A.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { stampToken } from '../../actors/replica-store/keys.js'
import { heldRecords } from '../../actors/replica-store/replication/key-records.js'
import { canonical, mergeRecords } from '../../actors/replica-store/replication/record-merge.js'
import type { HeldRecords } from '../../actors/replica-store/replication/key-records.js'
import type { KeyMerged, KeyRecords } from '../../protocol/anti-entropy.js'
import type { BodyRange, PeerMethod } from '../../protocol/cluster.js'
import { fail } from '../../protocol/errors.js'
import { hlcString } from '../../protocol/hlc.js'
import { PART_BYTES_MIN } from '../../protocol/limits.js'
import type { GetResult, PartInfo, VersionListing } from '../../protocol/messages.js'
import { auditStore } from '../sim/store-audit.js'
import { memoryStream, type MemoryStream } from '../support/fake-context.js'
import {
  clusterStore,
  idle,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'

const T = 1_700_000_000_000
const HTTP = { contentType: 'application/octet-stream' }
const KEY = 'k'

function stamp(ms: number, node = 7): string {
  return hlcString({ wallMs: T + ms, logical: 0, node })
}

function put(bucket: string, body: string | Uint8Array, ms: number): Body {
  const data = typeof body === 'string' ? new TextEncoder().encode(body) : body
  return {
    kind: 'object.put',
    bucket,
    key: KEY,
    http: HTTP,
    userMeta: {},
    expect: {},
    body: data,
    stamp: stamp(ms),
  }
}

function del(bucket: string, ms: number, versionId?: string): Body {
  const named = versionId === undefined ? {} : { versionId }
  return { kind: 'object.delete', bucket, key: KEY, stamp: stamp(ms), ...named }
}

function tag(bucket: string, value: string, ms: number, versionId?: string): Body {
  const named = versionId === undefined ? {} : { versionId }
  const tags = [{ key: 'colour', value }]
  const attributes = { tags }
  return { kind: 'object.attributes.put', bucket, key: KEY, attributes, stamp: stamp(ms), ...named }
}

function versioning(bucket: string, status: 'Enabled' | 'Suspended'): Body {
  return { kind: 'bucket.versioning.put', bucket, status }
}

/** The version id a stamped write at `ms` gets in a bucket with versioning Enabled. */
function idAt(ms: number): string {
  return stampToken(stamp(ms))
}

type Step = Body | ((store: Store) => Promise<void>)

/** A multipart object of two parts (the first of the least size a part but the last may have),
 * completed at `ms`. */
function multipart(bucket: string, ms: number, bodies: [Uint8Array, Uint8Array]): Step {
  return async (store) => {
    const uploadId = String(ms).padStart(32, '0')
    const at = { bucket, key: KEY, uploadId }
    value(
      await store.send({
        kind: 'upload.create',
        bucket,
        key: KEY,
        http: HTTP,
        userMeta: {},
        uploadId,
        stamp: stamp(ms - 30),
      }),
    )
    const parts = []
    for (const [index, body] of bodies.entries()) {
      const part = value(
        await store.send<PartInfo>({
          kind: 'upload.part',
          ...at,
          partNumber: index + 1,
          expect: {},
          body,
          stamp: stamp(ms - 20 + index),
        }),
      )
      parts.push({ partNumber: index + 1, etag: part.etag })
    }
    value(await store.send({ kind: 'upload.complete', ...at, parts, stamp: stamp(ms) }))
  }
}

interface Case {
  name: string
  bucket: 'p' | 'v' | 's'
  shared?: Step[]
  a: Step[]
  b: Step[]
  /** Steps on both after the divergence (a bucket's versioning, which the catalog keeps alike). */
  after?: Step[]
  /** The versions both must list in the end (what the stamp rule keeps), when the case says. */
  listed?: number
  /** The tags the current version must carry in the end: the newest change's (null: none). */
  tagged?: string | null
}

const BIG = new Uint8Array(100 * 1024).map((_, index) => (index * 7) % 251)
const PARTS: [Uint8Array, Uint8Array] = [
  new Uint8Array(PART_BYTES_MIN).map((_, index) => (index * 13) % 241),
  new TextEncoder().encode('the last part'),
]

const CASES: Case[] = [
  { name: 'an object one replica lacks', bucket: 'p', a: [put('p', 'one', 100)], b: [] },
  {
    name: 'an overwrite',
    bucket: 'p',
    shared: [put('p', 'one', 100)],
    a: [put('p', 'two', 200)],
    b: [],
  },
  {
    name: 'two overwrites',
    bucket: 'p',
    a: [put('p', 'one', 100)],
    b: [put('p', 'two', 200)],
  },
  { name: 'a deletion', bucket: 'p', shared: [put('p', 'one', 100)], a: [del('p', 200)], b: [] },
  {
    name: 'a deletion of an object the other replica never had',
    bucket: 'p',
    a: [put('p', 'one', 100), del('p', 200)],
    b: [],
  },
  {
    name: 'a deletion older than the other replica’s write',
    bucket: 'p',
    shared: [put('p', 'one', 100)],
    a: [del('p', 200)],
    b: [put('p', 'two', 300)],
  },
  {
    name: 'tags set on one replica',
    bucket: 'p',
    shared: [put('p', 'one', 100)],
    a: [tag('p', 'blue', 200)],
    b: [],
  },
  {
    name: 'tags set on both, the newer wins',
    bucket: 'p',
    shared: [put('p', 'one', 100)],
    a: [tag('p', 'blue', 300)],
    b: [tag('p', 'red', 200)],
    tagged: 'blue',
  },
  {
    name: 'tags set on both, the newer on the other side',
    bucket: 'p',
    shared: [put('p', 'one', 100)],
    a: [tag('p', 'blue', 200)],
    b: [tag('p', 'red', 300)],
    tagged: 'red',
  },
  {
    // A change of tags orders no version: stamped above the overwrite (another node's clock
    // ahead), it does not keep the object it was of.
    name: 'an overwrite after the write, its tags changed later on the other replica',
    bucket: 'p',
    shared: [put('p', 'one', 100)],
    a: [put('p', 'two', 200)],
    b: [tag('p', 'blue', 300)],
    tagged: null,
  },
  {
    name: 'two objects with one stamp',
    bucket: 'p',
    a: [put('p', 'ours', 100)],
    b: [put('p', 'theirs', 100)],
  },
  {
    name: 'versions and a marker on either side',
    bucket: 'v',
    shared: [put('v', 'one', 100)],
    a: [put('v', 'two', 200), del('v', 400)],
    b: [put('v', 'three', 300)],
  },
  {
    name: 'a delete by id and a marker',
    bucket: 'v',
    shared: [put('v', 'one', 100), put('v', 'two', 200)],
    a: [del('v', 500, idAt(200))],
    b: [del('v', 300)],
  },
  {
    name: 'a delete by id of a version the other replica never had',
    bucket: 'v',
    shared: [put('v', 'one', 100)],
    a: [put('v', 'two', 200), del('v', 300, idAt(200))],
    b: [],
  },
  {
    name: 'tags of an older version, on both',
    bucket: 'v',
    shared: [put('v', 'one', 100), put('v', 'two', 200)],
    a: [tag('v', 'blue', 300, idAt(100))],
    b: [tag('v', 'red', 400, idAt(100))],
  },
  {
    name: 'two versions with one stamp',
    bucket: 'v',
    a: [put('v', 'ours', 100)],
    b: [put('v', 'theirs', 100)],
  },
  {
    name: 'a multipart object one replica lacks',
    bucket: 'v',
    shared: [put('v', 'one', 100)],
    a: [multipart('v', 300, PARTS)],
    b: [put('v', 'two', 200)],
  },
  {
    name: 'a multipart object without versioning, and a file blob',
    bucket: 'p',
    a: [multipart('p', 300, PARTS)],
    b: [put('p', BIG, 200)],
  },
  {
    name: 'a file blob one replica lacks',
    bucket: 'v',
    a: [put('v', BIG, 200)],
    b: [put('v', 'small', 100)],
  },
  {
    name: 'a version written before versioning, versions, then suspended null versions',
    bucket: 's',
    shared: [put('s', 'before', 100)],
    a: [versioning('s', 'Enabled'), put('s', 'enabled a', 200), del('s', 300)],
    b: [
      put('s', 'before, overwritten', 150),
      versioning('s', 'Enabled'),
      put('s', 'enabled b', 250),
    ],
    after: [versioning('s', 'Suspended')],
  },
  {
    name: 'suspended null versions written on either side',
    bucket: 's',
    shared: [
      put('s', 'before', 100),
      versioning('s', 'Enabled'),
      put('s', 'enabled', 200),
      versioning('s', 'Suspended'),
    ],
    a: [put('s', 'null a', 300)],
    b: [put('s', 'null b', 400), tag('s', 'blue', 500)],
  },
  {
    name: 'a suspended null marker against a null version',
    bucket: 's',
    shared: [versioning('s', 'Enabled'), put('s', 'enabled', 200), versioning('s', 'Suspended')],
    a: [del('s', 400)],
    b: [put('s', 'null b', 300)],
  },
  {
    name: 'a deletion before versioning was configured, which the other replica missed',
    bucket: 's',
    shared: [put('s', 'before', 100)],
    a: [del('s', 200)],
    b: [],
    after: [versioning('s', 'Enabled'), put('s', 'enabled', 300)],
    listed: 1,
  },
  {
    name: 'a null version deleted by id, which the other replica still holds',
    bucket: 's',
    shared: [put('s', 'before', 100), versioning('s', 'Enabled'), put('s', 'enabled', 200)],
    a: [del('s', 300, 'null')],
    b: [],
    listed: 1,
  },
  {
    name: 'a null version written before versioning on one side only',
    bucket: 's',
    a: [put('s', 'before', 100)],
    b: [],
    after: [versioning('s', 'Enabled')],
  },
]

/** Two stores, each the other's peer. */
async function pair(): Promise<{ a: Store; b: Store }> {
  const a = await clusterStore()
  const b = await clusterStore()
  const byId: Record<string, Store> = { n1: a, n2: b }
  for (const [self, store] of [
    ['n1', a],
    ['n2', b],
  ] as const) {
    store.ctx.onPeerCall(async (to, method, body, stream) => {
      const peer = byId[to.id ?? '']
      if (peer === undefined) return fail('unavailable', `no peer ${String(to.id)}`)
      const answer = await peer.send({
        kind: 'peer.request',
        method: method as PeerMethod,
        from: self,
        body,
        ...(stream === undefined ? {} : { stream }),
      } as Body)
      const range = (body as { range?: BodyRange }).range
      if (answer.ok && method === 'Replica.Read' && range !== undefined) {
        ;(stream as MemoryStream).request(range.start, range.end)
      }
      return answer
    })
  }
  for (const store of [a, b]) {
    for (const bucket of ['p', 'v', 's']) {
      value(await store.send({ kind: 'bucket.create', bucket }))
    }
    value(await store.send(versioning('v', 'Enabled')))
  }
  return { a, b }
}

async function run(store: Store, steps: readonly Step[]): Promise<void> {
  for (const step of steps) {
    if (typeof step === 'function') await step(store)
    else value(await store.send(step))
  }
}

function recordsOf(store: Store, bucket: string): Promise<KeyRecords> {
  return store.send<KeyRecords>({ kind: 'records.get', bucket, key: KEY }).then(value)
}

function merge(into: Store, bucket: string, records: KeyRecords, from: string): Promise<KeyMerged> {
  const sender = { id: from, grpcAddr: `${from}:9100` }
  return into
    .send<KeyMerged>({ kind: 'records.merge', bucket, key: KEY, records, from: sender })
    .then(value)
}

function held(store: Store, bucket: string): HeldRecords {
  return value(heldRecords(store.ctx, bucket, KEY))
}

function canonicalHeld(records: HeldRecords): string {
  const versions = [...records.versions]
    .sort(([x], [y]) => (x < y ? -1 : 1))
    .map(([token, record]) => [token, canonical(record)])
  const deleted = [...records.deleted].sort(([x], [y]) => (x < y ? -1 : 1))
  return JSON.stringify({ stamp: records.stamp, versions, current: records.current, deleted })
}

/** What a client sees of the key: its version listing and each version's bytes. */
async function seen(store: Store, bucket: string): Promise<string> {
  const listing = value(
    await store.send<VersionListing>({
      kind: 'object.list-versions',
      bucket,
      prefix: '',
      delimiter: '',
      keyMarker: '',
      versionIdMarker: '',
      maxKeys: 1000,
    }),
  )
  const bytes: string[] = []
  for (const version of listing.versions) {
    if (version.deleteMarker) continue
    const named = version.versionId === undefined ? {} : { versionId: version.versionId }
    bytes.push(await bytesOf(store, { bucket, key: KEY, ...named }))
  }
  const current = await store.send<GetResult>({ kind: 'object.get', bucket, key: KEY })
  const head = current.ok ? JSON.stringify(current.value.info ?? current.value) : current.code
  return JSON.stringify({ versions: listing.versions, bytes, head })
}

/** A version's bytes, read as a GET streams them. */
async function bytesOf(
  store: Store,
  at: { bucket: string; key: string; versionId?: string },
): Promise<string> {
  const stream = memoryStream()
  const got = value(
    await store.send<GetResult>({ kind: 'object.get', ...at, stream: stream.handle }),
  )
  if (got.body !== undefined) return Buffer.from(got.body).toString('base64')
  stream.request(0, got.info.size - 1)
  const received = await stream.received()
  assert.ok(received.ended, 'the bytes came whole')
  return Buffer.from(received.bytes).toString('base64')
}

async function digestOf(store: Store, bucket: string): Promise<string | null> {
  const manifest = value(
    await store.send<{ digest: string | null }>({ kind: 'key.manifest', bucket, key: KEY }),
  )
  return manifest.digest
}

for (const one of CASES) {
  test(`merge converges: ${one.name}`, async () => {
    const { a, b } = await pair()
    for (const store of [a, b]) await run(store, one.shared ?? [])
    await run(a, one.a)
    await run(b, one.b)
    for (const store of [a, b]) await run(store, one.after ?? [])
    // The rule is commutative: either side's merge gives the same records.
    const status = value(
      await a.send<{ status: string | null }>({
        kind: 'bucket.versioning.get',
        bucket: one.bucket,
      }),
    )
    const isVersioned = status.status !== null
    const ab = mergeRecords(held(a, one.bucket), held(b, one.bucket), isVersioned)
    const ba = mergeRecords(held(b, one.bucket), held(a, one.bucket), isVersioned)
    assert.is(canonicalHeld(ab), canonicalHeld(ba), 'the rule is commutative')
    assert.is(
      canonicalHeld(mergeRecords(ab, held(a, one.bucket), isVersioned)),
      canonicalHeld(ab),
      'merged again with a side, nothing changes',
    )
    const fromA = await recordsOf(a, one.bucket)
    const fromB = await recordsOf(b, one.bucket)
    const differed = JSON.stringify(fromA) !== JSON.stringify(fromB)
    const intoB = await merge(b, one.bucket, fromA, 'n1')
    const intoA = await merge(a, one.bucket, fromB, 'n2')
    assert.ok(intoA.changed || intoB.changed || !differed, 'a merge changed what differed')
    for (const store of [a, b]) await idle(store.state)
    assert.is(await digestOf(a, one.bucket), await digestOf(b, one.bucket), 'equal digests')
    assert.is(await seen(a, one.bucket), await seen(b, one.bucket), 'equal listings and bytes')
    assert.is(canonicalHeld(held(a, one.bucket)), canonicalHeld(ab), 'the stores hold the rule')
    for (const store of [a, b]) assert.equal(auditStore(store.ctx.kv), [], 'consistent metadata')
    if (one.tagged !== undefined) {
      for (const store of [a, b]) {
        const got = await store.send<{ attributes: { tags?: { value: string }[] } }>({
          kind: 'object.attributes.get',
          bucket: one.bucket,
          key: KEY,
        })
        assert.equal(
          (value(got).attributes.tags ?? []).map((t) => t.value),
          one.tagged === null ? [] : [one.tagged],
          'the newest tags',
        )
      }
    }
    if (one.listed !== undefined) {
      const listed = JSON.parse(await seen(a, one.bucket)) as { versions: unknown[] }
      assert.is(listed.versions.length, one.listed, 'the versions the rule keeps')
    }
    // Idempotent: merged again, in either direction, nothing changes.
    const again = await merge(b, one.bucket, await recordsOf(a, one.bucket), 'n1')
    const back = await merge(a, one.bucket, await recordsOf(b, one.bucket), 'n2')
    assert.not.ok(again.changed || back.changed, 'merged again, nothing changes')
  })
}

test('a blob copy that is not the blob is refused, and the merge changes nothing', async () => {
  const { a, b } = await pair()
  await run(a, [put('v', BIG, 200)])
  await run(b, [put('v', 'small', 100)])
  const before = canonicalHeld(held(b, 'v'))
  // A's copy went wrong on the way: bytes of the blob's size, but not its bytes.
  const other = BIG.map((byte) => byte ^ 1)
  b.ctx.onPeerCall((_to, method, body, stream) => {
    assert.is(method, 'Replica.Read')
    assert.is((body as { msg: { kind: string } }).msg.kind, 'blob.read')
    const sink = (stream as MemoryStream).asSink()
    void sink.write(other).then(() => sink.end())
    return { ok: true, value: { size: other.byteLength, crc32: 0, load: 0 } }
  })
  const merged = await b.send({
    kind: 'records.merge',
    bucket: 'v',
    key: KEY,
    records: await recordsOf(a, 'v'),
    from: { id: 'n1', grpcAddr: 'n1:9100' },
  })
  assert.is(merged.ok ? 'ok' : merged.code, 'bad_digest')
  await idle(b.state)
  assert.is(canonicalHeld(held(b, 'v')), before, 'nothing changed')
  assert.equal(await b.ctx.blobs.listTemporary(), [], 'no copy left behind')
  assert.equal(auditStore(b.ctx.kv), [])
})

test.run()
