// Goal: the digests a cluster-mode replica-store keeps in the batch of every change of a key's
// replicated records (digests.ts; protocol/anti-entropy.ts says what they are), and its answers to
// anti-entropy. Two stores given the same stamped changes in different orders hold the same
// roots, leaves and key digests, and those a rebuild from the records gives; a store that missed
// one change differs in exactly that key, its leaf and its root; deleting everything leaves no
// digest; single mode keeps none; archiving and promoting a version written before versioning
// leaves its key's digest as it was; one stamp written as a version and as `null` differs, and
// digests of an older form are rebuilt; key.manifest lists what was written; Replica.Op serves the
// questions to peers and refuses malformed ones.
// Method: replica-store actors in this thread on fake contexts (test/support/store-harness.ts),
// sent stamped messages as a coordinator would; the digests are read back through the store's
// own answers (ae.roots, ae.leaves, ae.keys) and the kv's E\0 and Z\0 ranges.
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { treePlace } from '../../actors/replica-store/replication/digests.js'
import {
  DIGESTS_KEPT_KEY,
  NULL_TOMBSTONE_TOKEN,
  stampToken,
} from '../../actors/replica-store/keys.js'
import { AE_KEYS_PAGE_MAX, type KeyDigest, type KeyManifest } from '../../protocol/anti-entropy.js'
import { hlcString } from '../../protocol/hlc.js'
import type { PartInfo } from '../../protocol/messages.js'
import { partitionOf, PARTITIONS } from '../../protocol/placement.js'
import {
  clusterStore,
  code,
  startStore,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'
import { fromPeer } from '../support/peer-boundary.js'

/** The wall clock of the stamps below: version tokens hold clocks of this century exactly. */
const T = 1_700_000_000_000

function stamp(ms: number): string {
  return hlcString({ wallMs: T + ms, logical: 0, node: 7 })
}

const HTTP = { contentType: 'application/octet-stream' }

function put(bucket: string, key: string, body: string, ms?: number): Body {
  const stamped = ms === undefined ? {} : { stamp: stamp(ms) }
  const data = new TextEncoder().encode(body)
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

function deleted(bucket: string, key: string, ms: number, versionId?: string): Body {
  const named = versionId === undefined ? {} : { versionId }
  return { kind: 'object.delete', bucket, key, stamp: stamp(ms), ...named }
}

/** One step of a history: what a coordinator sends one store. */
type Step = (store: Store) => Promise<void>

function send(body: Body): Step {
  return async (store) => void value(await store.send(body))
}

const UPLOAD_ID = '0'.repeat(31) + '1'

/** A multipart upload of one part, completed: its steps only make sense in this order. */
const multipart: Step = async (store) => {
  const at = { bucket: 'p', key: 'm' }
  value(
    await store.send({
      kind: 'upload.create',
      ...at,
      http: HTTP,
      userMeta: {},
      uploadId: UPLOAD_ID,
      stamp: stamp(1000),
    }),
  )
  const part = value(
    await store.send<PartInfo>({
      kind: 'upload.part',
      ...at,
      uploadId: UPLOAD_ID,
      partNumber: 1,
      expect: {},
      body: new TextEncoder().encode('the only part'),
      stamp: stamp(1100),
    }),
  )
  const parts = [{ partNumber: 1, etag: part.etag }]
  value(
    await store.send({
      kind: 'upload.complete',
      ...at,
      uploadId: UPLOAD_ID,
      parts,
      stamp: stamp(1200),
    }),
  )
}

/** The history: a list per key, whose changes commute (stamps order them) unless `ordered`. Bucket
 * p has no versioning, v has it Enabled. */
const HISTORY: { steps: Step[]; ordered?: true }[] = [
  // An overwrite; a put then its delete.
  { steps: [send(put('p', 'a', 'first', 1000)), send(put('p', 'a', 'second', 1100))] },
  { steps: [send(put('p', 'b', 'gone', 1000)), send(deleted('p', 'b', 1200))] },
  // Versions and a delete marker; a version deleted by id.
  {
    steps: [
      send(put('v', 'c', 'one', 1000)),
      send(put('v', 'c', 'two', 1100)),
      send(deleted('v', 'c', 1200)),
    ],
  },
  {
    steps: [
      send(put('v', 'd', 'one', 1000)),
      send(put('v', 'd', 'two', 1100)),
      send(deleted('v', 'd', 1300, stampToken(stamp(1000)))),
    ],
  },
  // Tags of a version, once it is there.
  {
    steps: [
      send(put('v', 'e', 'tagged', 1000)),
      send({
        kind: 'object.attributes.put',
        bucket: 'v',
        key: 'e',
        versionId: stampToken(stamp(1000)),
        attributes: { tags: [{ key: 'colour', value: 'blue' }] },
        stamp: stamp(1400),
      }),
    ],
    ordered: true,
  },
  { steps: [multipart], ordered: true },
]

async function buckets(store: Store): Promise<void> {
  value(await store.send({ kind: 'bucket.create', bucket: 'p' }))
  value(await store.send({ kind: 'bucket.create', bucket: 'v' }))
  value(await store.send({ kind: 'bucket.versioning.put', bucket: 'v', status: 'Enabled' }))
}

/** A store given the history: keys in order and each key's changes in order, or both reversed
 * where they commute; `skip` leaves one step out. */
async function replica(
  store: Store,
  reversed: boolean,
  skip?: { key: number; step: number },
): Promise<Store> {
  await buckets(store)
  const keys = reversed ? [...HISTORY].reverse() : HISTORY
  for (const history of keys) {
    const index = HISTORY.indexOf(history)
    const steps = history.steps.filter((_, step) => skip?.key !== index || skip.step !== step)
    for (const step of reversed && history.ordered !== true ? steps.reverse() : steps) {
      await step(store)
    }
  }
  return store
}

interface Digests {
  roots: (string | null)[]
  leaves: { partition: number; leaf: number; digest: string }[]
  keys: (KeyDigest & { partition: number; leaf: number })[]
}

/** Every digest a store holds, as its answers give them (ae.keys a few keys a page, to cross
 * pages). */
async function digestsOf(store: Store): Promise<Digests> {
  const partitions = Array.from({ length: PARTITIONS }, (_, p) => p)
  const roots = value(await store.send<(string | null)[]>({ kind: 'ae.roots', partitions }))
  const digests: Digests = { roots, leaves: [], keys: [] }
  for (const partition of partitions.filter((p) => roots[p] !== null)) {
    const leaves = value(
      await store.send<{ leaf: number; digest: string }[]>({ kind: 'ae.leaves', partition }),
    )
    for (const { leaf, digest } of leaves) {
      digests.leaves.push({ partition, leaf, digest })
      let after: KeyDigest | null = null
      for (let pages = 0; pages < 100; pages++) {
        const page: KeyDigest[] = value(
          await store.send<KeyDigest[]>({ kind: 'ae.keys', partition, leaf, after, limit: 2 }),
        )
        digests.keys.push(...page.map((key) => ({ ...key, partition, leaf })))
        if (page.length < 2) break
        after = page[page.length - 1] as KeyDigest
      }
    }
  }
  return digests
}

/** The rows of a one-letter record kind. */
function rows(store: Store, kind: string): string[] {
  return store.ctx.kv
    .scan({ gte: `${kind}\0`, lt: `${kind}\x01`, limit: 10_000 })
    .map(([key]) => key)
}

function manifest(store: Store, bucket: string, key: string): Promise<KeyManifest> {
  return store.send<KeyManifest>({ kind: 'key.manifest', bucket, key }).then(value)
}

/** A key's digest from its items' canonical strings: the XOR of their SHA-256. */
function itemsDigest(items: string[]): string {
  const digest = Buffer.alloc(32)
  for (const item of items) {
    const hash = createHash('sha256').update(item).digest()
    for (let index = 0; index < 32; index++)
      digest[index] = (digest[index] as number) ^ (hash[index] as number)
  }
  return digest.toString('hex')
}

// ---------------------------------------------------------------------------------------------

test('the same changes in another order give the same digests, as a rebuild does', async () => {
  const inOrder = await replica(await clusterStore(), false)
  const reversed = await replica(await clusterStore(), true)
  const digests = await digestsOf(inOrder)
  assert.equal(await digestsOf(reversed), digests)
  // Every key of the history has a digest; its partition is placement's.
  const named = digests.keys.map(({ bucket, key }) => `${bucket}/${key}`).sort()
  assert.equal(named, ['p/a', 'p/b', 'p/m', 'v/c', 'v/d', 'v/e'])
  for (const { bucket, key, partition } of digests.keys) {
    assert.is(partition, partitionOf(bucket, key))
  }
  assert.is(
    digests.leaves.length,
    rows(inOrder, 'Z').length - new Set(digests.keys.map((k) => k.partition)).size,
  )
  // The same history in single mode keeps no digest; started in cluster mode on its kv, the
  // store rebuilds them from the records before it answers.
  const single = await replica(await startStore(), false)
  assert.equal([rows(single, 'E'), rows(single, 'Z')], [[], []])
  assert.is(single.ctx.kv.get(DIGESTS_KEPT_KEY), undefined)
  const upgraded = await clusterStore({ kv: single.ctx.kv, blobs: single.ctx.blobs })
  assert.ok(upgraded.ctx.kv.get(DIGESTS_KEPT_KEY) !== undefined)
  assert.equal(await digestsOf(upgraded), digests)
})

test('a store that missed a change differs in that key, its leaf and its root', async () => {
  const all = await digestsOf(await replica(await clusterStore(), false))
  // The overwrite of p/a.
  const missed = await digestsOf(await replica(await clusterStore(), false, { key: 0, step: 1 }))
  const { partition, leaf } = treePlace('p', 'a')
  const differing = all.roots.flatMap((root, p) => (root === missed.roots[p] ? [] : [p]))
  assert.equal(differing, [partition])
  const leafOf = (d: Digests) => d.leaves.filter((l) => l.partition === partition)
  const leaves = leafOf(all).filter((l, i) => l.digest !== leafOf(missed)[i]?.digest)
  assert.equal(
    leaves.map((l) => l.leaf),
    [leaf],
  )
  assert.is(leafOf(all).length, leafOf(missed).length)
  const keys = all.keys.filter((k, i) => k.digest !== missed.keys[i]?.digest)
  assert.equal(
    keys.map((k) => `${k.bucket}/${k.key}`),
    ['p/a'],
  )
  assert.is(all.keys.length, missed.keys.length)
})

test('deleting every object, then the buckets, leaves no digest', async () => {
  const store = await replica(await clusterStore(), false)
  assert.ok(rows(store, 'E').length > 0)
  value(await store.send(deleted('p', 'a', 2000)))
  value(await store.send(deleted('p', 'm', 2000)))
  value(await store.send({ kind: 'bucket.delete', bucket: 'p' }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'v', force: true }))
  assert.equal([rows(store, 'E'), rows(store, 'Z')], [[], []])
  const roots = await store.send<(string | null)[]>({ kind: 'ae.roots', partitions: [0, 255] })
  assert.equal(value(roots), [null, null])
})

test('a version from before versioning keeps its digest, archived and promoted', async () => {
  const store = await clusterStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'w' }))
  value(await store.send(put('w', 'k', 'before versioning', 1000)))
  const before = (await manifest(store, 'w', 'k')).digest
  assert.ok(before !== null)
  value(await store.send({ kind: 'bucket.versioning.put', bucket: 'w', status: 'Enabled' }))
  // Unstamped: neither the put nor its delete by id moves the key's stamp.
  const written = value(await store.send<{ versionId: string }>(put('w', 'k', 'after')))
  const archived = await manifest(store, 'w', 'k')
  assert.equal(
    archived.versions.map((v) => v.current),
    [true, false],
  )
  assert.ok(archived.digest !== before)
  const byId = { kind: 'object.delete', bucket: 'w', key: 'k', versionId: written.versionId }
  value(await store.send(byId as Body))
  const promoted = await manifest(store, 'w', 'k')
  assert.equal(
    promoted.versions.map((v) => [v.current, v.versionId]),
    [[true, 'null']],
  )
  assert.is(promoted.digest, before)
})

test('one stamp as a version and as null differs; older digests are rebuilt', async () => {
  const holders: Store[] = []
  for (const versioning of ['Enabled', 'Suspended'] as const) {
    const store = await clusterStore()
    value(await store.send({ kind: 'bucket.create', bucket: 'w' }))
    const written = { ...put('w', 'k', 'same bytes', 1000), versioning } as Body
    value(await store.send(written))
    holders.push(store)
  }
  const [versioned, suspended] = holders as [Store, Store]
  const digest = async (store: Store) => (await manifest(store, 'w', 'k')).digest
  assert.ok((await digest(versioned)) !== (await digest(suspended)))
  // A store whose mark names no form (digests made before version ids were hashed) rebuilds
  // them at its next start; they come out as those kept change by change.
  const kept = await digestsOf(versioned)
  await versioned.ctx.kv.commit([{ type: 'put', key: DIGESTS_KEPT_KEY, value: new Uint8Array(0) }])
  await versioned.ctx.kv.commit([{ type: 'del', key: rows(versioned, 'E')[0] as string }])
  const restarted = await clusterStore({ kv: versioned.ctx.kv, blobs: versioned.ctx.blobs })
  assert.equal(await digestsOf(restarted), kept)
})

test('key.manifest lists the stamp, versions and deletes by id a replica holds', async () => {
  const store = await replica(await clusterStore(), false)
  const digests = await digestsOf(store)
  const digestOf = (bucket: string, key: string) =>
    digests.keys.find((k) => k.bucket === bucket && k.key === key)?.digest
  const plain = await manifest(store, 'p', 'a')
  assert.equal(plain, {
    stamp: stamp(1100),
    versions: [
      {
        token: null,
        stamp: stamp(1100),
        etag: plain.versions[0]?.etag as string,
        size: 6,
        marker: false,
        parts: 0,
        current: true,
      },
    ],
    deleted: [],
    digest: digestOf('p', 'a') as string,
  })
  const gone = await manifest(store, 'p', 'b')
  // Deleted without versioning: its stamp, and the null tombstone of the object it removed.
  const nullTombstone = [{ token: NULL_TOMBSTONE_TOKEN, stamp: stamp(1200) }]
  assert.equal([gone.stamp, gone.versions, gone.deleted], [stamp(1200), [], nullTombstone])
  const marked = await manifest(store, 'v', 'c')
  assert.equal(
    marked.versions.map((v) => [v.token, v.versionId, v.stamp, v.marker, v.current, v.size]),
    [1200, 1100, 1000].map((ms) => {
      const token = stampToken(stamp(ms))
      return [token, token, stamp(ms), ms === 1200, false, ms === 1200 ? 0 : 3]
    }),
  )
  const byId = await manifest(store, 'v', 'd')
  assert.equal(byId.deleted, [{ token: stampToken(stamp(1000)), stamp: stamp(1300) }])
  assert.equal(
    byId.versions.map((v) => [v.token, v.current]),
    [[stampToken(stamp(1100)), true]],
  )
  // The digests follow the items protocol/anti-entropy.ts names, hashed as digests.ts says: p/b
  // holds its stamp and its null tombstone; v/d a version, its stamp and a version deleted by id.
  const goneItems = [`q\0${stamp(1200)}`, `w\0${NULL_TOMBSTONE_TOKEN}\0${stamp(1200)}`]
  assert.is(gone.digest, itemsDigest(goneItems))
  const [token, etag] = [stampToken(stamp(1100)), byId.versions[0]?.etag as string]
  const items = [
    `v\0${token}\0${stamp(1100)}\0${etag}\0${0}\0${0}\0id\0${token}`,
    `q\0${stamp(1300)}`,
    `w\0${stampToken(stamp(1000))}\0${stamp(1300)}`,
  ]
  assert.is(byId.digest, itemsDigest(items))
  assert.is((await manifest(store, 'v', 'e')).versions[0]?.attributes?.tags, 1)
  const completed = await manifest(store, 'p', 'm')
  assert.equal([completed.stamp, completed.versions[0]?.parts], [stamp(1200), 1])
  assert.equal(await manifest(store, 'p', 'never'), {
    stamp: null,
    versions: [],
    deleted: [],
    digest: null,
  })
})

test('Replica.Op serves anti-entropy to peers and refuses malformed questions', async () => {
  const store = await replica(await clusterStore(), false)
  const { partition, leaf } = treePlace('p', 'a')
  const asked: Body[] = [
    { kind: 'ae.roots', partitions: [partition, 0] },
    { kind: 'ae.leaves', partition },
    { kind: 'ae.keys', partition, leaf, after: null, limit: AE_KEYS_PAGE_MAX },
    { kind: 'ae.keys', partition, leaf, after: { bucket: 'p', key: 'a' }, limit: 1 },
    { kind: 'key.manifest', bucket: 'p', key: 'a' },
  ]
  for (const msg of asked) {
    const asPeer = await fromPeer(store, 'Replica.Op', { msg })
    assert.equal(value(asPeer), value(await store.send(msg)), msg.kind)
  }
  const keys = { kind: 'ae.keys', partition: 1, leaf: 2, after: null, limit: 10 }
  const refused: unknown[] = [
    { kind: 'ae.roots', partitions: 3 },
    { kind: 'ae.roots', partitions: [256] },
    { kind: 'ae.roots', partitions: [-1] },
    { kind: 'ae.roots', partitions: [1.5] },
    { kind: 'ae.roots', partitions: ['1'] },
    { kind: 'ae.roots', partitions: Array.from({ length: 257 }, () => 0) },
    { kind: 'ae.leaves' },
    { kind: 'ae.leaves', partition: 256 },
    { ...keys, partition: undefined },
    { ...keys, leaf: 300 },
    { ...keys, limit: 0 },
    { ...keys, limit: AE_KEYS_PAGE_MAX + 1 },
    { ...keys, limit: '10' },
    { ...keys, after: undefined },
    { ...keys, after: 'p/a' },
    { ...keys, after: { bucket: 'p' } },
    { ...keys, after: { bucket: 'p\0q', key: 'a' } },
    { ...keys, after: { bucket: '', key: 'a' } },
    { ...keys, after: { bucket: 'p', key: '' } },
    { kind: 'key.manifest', bucket: 'p' },
    { kind: 'key.manifest', bucket: 'p\0', key: 'a' },
    { kind: 'key.manifest', bucket: 'p', key: 7 },
  ]
  // Refused at the boundary, by Replica.Op's schema: the store never sees them.
  for (const msg of refused) {
    const answer = await fromPeer(store, 'Replica.Op', { msg })
    assert.is(code(answer), 'invalid_argument', JSON.stringify(msg))
  }
  // A node not in cluster mode serves no peer.
  const single = await startStore()
  const roots = { kind: 'ae.roots', partitions: [0] }
  assert.is(code(await fromPeer(single, 'Replica.Op', { msg: roots })), 'invalid_request')
})

test.run()
