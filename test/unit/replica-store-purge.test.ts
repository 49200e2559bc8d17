// Goal: the purge of old tombstones a cluster-mode replica-store runs for its own anti-entropy
// (`ae.purge`, actors/replica-store/replication/purge.ts). It removes the key stamps of keys left
// with no object, version or delete by id, and the deletes by id, whose changes are older than the
// cut it is given, and nothing else: newer tombstones, the stamps of keys that still hold an
// object, a version or a delete marker, the keys' hints and claims all stay, and the digests,
// references and counters match the records after it (the simulation's store audit). It walks a
// partition a bounded number of keys a call, from a cursor. A peer cannot ask it through
// Replica.Op. Method: replica-store actors in this thread on fake contexts
// (test/support/store-harness.ts), sent stamped messages as a coordinator would; what each key
// holds is read back with key.manifest, the rest from the kv's own ranges.
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { NULL_TOMBSTONE_TOKEN, stampToken } from '../../actors/replica-store/keys.js'
import type { KeyManifest, Purged } from '../../protocol/anti-entropy.js'
import { hlcString } from '../../protocol/hlc.js'
import { partitionOf, PARTITIONS } from '../../protocol/placement.js'
import { auditStore } from '../sim/store-audit.js'
import {
  clusterStore,
  code,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'
import { fromPeer } from '../support/peer-boundary.js'

/** The wall clock of the stamps below: version tokens hold clocks of this century exactly. */
const T = 1_700_000_000_000
/** The cut of the purges: changes before T + CUT_MS go. */
const CUT_MS = 2_000

function stamp(ms: number): string {
  return hlcString({ wallMs: T + ms, logical: 0, node: 7 })
}

function put(bucket: string, key: string, ms: number): Body {
  return {
    kind: 'object.put',
    bucket,
    key,
    http: { contentType: 'application/octet-stream' },
    userMeta: {},
    expect: {},
    body: new TextEncoder().encode(`${key} at ${ms}`),
    stamp: stamp(ms),
  }
}

function deleted(bucket: string, key: string, ms: number, versionOf?: number): Body {
  const named = versionOf === undefined ? {} : { versionId: stampToken(stamp(versionOf)) }
  return { kind: 'object.delete', bucket, key, stamp: stamp(ms), ...named }
}

async function run(store: Store, steps: Body[]): Promise<void> {
  for (const step of steps) value(await store.send(step))
}

/** Bucket p without versioning, v with versioning Enabled. */
async function buckets(store: Store): Promise<void> {
  await run(store, [
    { kind: 'bucket.create', bucket: 'p' },
    { kind: 'bucket.create', bucket: 'v' },
    { kind: 'bucket.versioning.put', bucket: 'v', status: 'Enabled' },
  ])
}

function manifest(store: Store, bucket: string, key: string): Promise<KeyManifest> {
  return store.send<KeyManifest>({ kind: 'key.manifest', bucket, key }).then(value)
}

const NOTHING: KeyManifest = { stamp: null, versions: [], deleted: [], digest: null }

/** Purges every partition, each a call of `limit` keys at a time: what went. */
async function purgeAll(store: Store, beforeMs: number, limit = 1_000): Promise<number> {
  let purged = 0
  for (let partition = 0; partition < PARTITIONS; partition++) {
    let after: Purged['next'] = null
    for (let calls = 0; calls < 100; calls++) {
      const msg: Body = { kind: 'ae.purge', partition, beforeMs, after, limit }
      const answer: Purged = value(await store.send<Purged>(msg))
      purged += answer.purged
      if (answer.next === null) break
      after = answer.next
    }
  }
  return purged
}

/** The rows of a one-letter record kind. */
function rows(store: Store, kind: string): string[] {
  return store.ctx.kv
    .scan({ gte: `${kind}\0`, lt: `${kind}\x01`, limit: 10_000 })
    .map(([key]) => key.replaceAll('\0', '/'))
}

test('ae.purge removes the old tombstones and deletes by id, and nothing else', async () => {
  const store = await clusterStore()
  await buckets(store)
  await run(store, [
    // Old tombstones: a deleted key, a version deleted by id, a key whose one version was.
    put('p', 'gone', 1000),
    deleted('p', 'gone', 1200),
    put('v', 'by-id', 1000),
    put('v', 'by-id', 1100),
    deleted('v', 'by-id', 1300, 1000),
    put('v', 'emptied', 1000),
    deleted('v', 'emptied', 1300, 1000),
    // Kept: a deletion after the cut, a live key, a delete marker, a delete by id after the cut.
    put('p', 'young', 1000),
    deleted('p', 'young', 5000),
    put('p', 'live', 1000),
    put('v', 'marked', 1000),
    deleted('v', 'marked', 1200),
    put('v', 'young-by-id', 1000),
    put('v', 'young-by-id', 1100),
    deleted('v', 'young-by-id', 5000, 1000),
  ])
  // The deleted key has a hint for a replica that missed it, and a claim.
  value(
    await store.send({
      kind: 'hint.put',
      hints: [{ node: 'n2', bucket: 'p', key: 'gone', stamp: stamp(1200) }],
    }),
  )
  const claim = { kind: 'key.claim' as const, bucket: 'p', key: 'gone' }
  assert.ok(value(await store.send<{ granted: boolean }>({ ...claim, claimant: 'c1' })).granted)
  const kept = [
    ['p', 'young'],
    ['p', 'live'],
    ['v', 'marked'],
    ['v', 'young-by-id'],
  ] as const
  const before = await Promise.all(kept.map(([bucket, key]) => manifest(store, bucket, key)))
  const byId = await manifest(store, 'v', 'by-id')

  // p/gone's stamp and null tombstone, v/by-id's delete by id, v/emptied's delete by id and stamp.
  assert.is(await purgeAll(store, T + CUT_MS), 5)
  assert.equal(await manifest(store, 'p', 'gone'), NOTHING)
  assert.equal(await manifest(store, 'v', 'emptied'), NOTHING)
  const purgedById = await manifest(store, 'v', 'by-id')
  assert.equal(purgedById.deleted, [])
  assert.equal([purgedById.stamp, purgedById.versions], [byId.stamp, byId.versions])
  assert.ok(purgedById.digest !== null && purgedById.digest !== byId.digest)
  const after = await Promise.all(kept.map(([bucket, key]) => manifest(store, bucket, key)))
  assert.equal(after, before)
  assert.equal(rows(store, 'W'), [
    `W/p/young/${NULL_TOMBSTONE_TOKEN}`,
    'W/v/young-by-id/' + stampToken(stamp(1000)),
  ])
  assert.ok(!rows(store, 'E').some((row) => row.includes('/gone') || row.includes('/emptied')))
  // The hint and the claim are the key's still.
  assert.equal(rows(store, 'J'), ['J/n2/p/gone'])
  assert.not.ok(value(await store.send<{ granted: boolean }>({ ...claim, claimant: 'c2' })).granted)
  assert.equal(auditStore(store.ctx.kv), [])
  // Nothing more to purge at that cut; later, the younger ones go too.
  assert.is(await purgeAll(store, T + CUT_MS), 0)
  assert.is(await purgeAll(store, T + 6_000), 3)
  assert.equal(await manifest(store, 'p', 'young'), NOTHING)
  assert.equal(rows(store, 'W'), [])
  assert.equal(auditStore(store.ctx.kv), [])
})

/** `count` keys of bucket p that fall in one partition. */
function keysOfOnePartition(count: number): { partition: number; keys: string[] } {
  const byPartition = new Map<number, string[]>()
  for (let index = 0; ; index++) {
    const key = `k${index}`
    const partition = partitionOf('p', key)
    const keys = [...(byPartition.get(partition) ?? []), key]
    if (keys.length === count) return { partition, keys }
    byPartition.set(partition, keys)
  }
}

test('ae.purge walks a partition a bounded number of keys a call, from its cursor', async () => {
  const store = await clusterStore()
  await buckets(store)
  const { partition, keys } = keysOfOnePartition(5)
  for (const key of keys) await run(store, [put('p', key, 1000), deleted('p', key, 1100)])
  // One of them written again: it keeps its stamp, and is walked all the same.
  await run(store, [put('p', keys[2] as string, 1200)])
  const answers: Purged[] = []
  let after: Purged['next'] = null
  for (let calls = 0; calls < 10; calls++) {
    const msg: Body = { kind: 'ae.purge', partition, beforeMs: T + CUT_MS, after, limit: 2 }
    const answer: Purged = value(await store.send<Purged>(msg))
    answers.push(answer)
    if (answer.next === null) break
    after = answer.next
  }
  assert.is(answers.length, 3)
  assert.equal(
    answers.map((answer) => answer.purged).reduce((sum, purged) => sum + purged, 0),
    9,
  )
  // Two keys a call, each with its stamp and its null tombstone (keys[2] keeps its stamp).
  assert.ok(answers.every((answer) => answer.purged <= 4))
  assert.equal(
    answers.map((answer) => answer.next === null),
    [false, false, true],
  )
  for (const key of keys) {
    const held = await manifest(store, 'p', key)
    assert.is(held.stamp, key === keys[2] ? stamp(1200) : null, key)
  }
  assert.equal(auditStore(store.ctx.kv), [])
})

test("ae.purge is this node's own: Replica.Op refuses it; malformed ones are refused", async () => {
  const store = await clusterStore()
  await buckets(store)
  await run(store, [put('p', 'gone', 1000), deleted('p', 'gone', 1200)])
  const partition = partitionOf('p', 'gone')
  const purge = { kind: 'ae.purge', partition, beforeMs: T + CUT_MS, after: null, limit: 10 }
  // Replica.Op's schema does not take it: the store never sees it.
  assert.is(code(await fromPeer(store, 'Replica.Op', { msg: purge })), 'invalid_argument')
  assert.is((await manifest(store, 'p', 'gone')).stamp, stamp(1200))
  const malformed = [
    { ...purge, partition: 256 },
    { ...purge, partition: -1 },
    { ...purge, limit: 0 },
    { ...purge, limit: 1_001 },
    { ...purge, beforeMs: Number.NaN },
  ]
  for (const msg of malformed) {
    assert.is(code(await store.send(msg as Body)), 'invalid_request', JSON.stringify(msg))
  }
  assert.is((await manifest(store, 'p', 'gone')).stamp, stamp(1200))
  assert.equal(value(await store.send<Purged>(purge as Body)), { purged: 2, next: null })
})

test.run()
