/** Goal: a request goes to the shard that owns its key (the same one for every request of a key,
 * the copy's target for a copy), any other to shard 0; keys spread over every shard; a delete of
 * many keys is split so that each shard gets exactly its keys, and the answers join into one, a
 * part that failed as a whole failing its keys only. Method: the routing functions on literal
 * messages. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { keyShard } from '../../protocol/key-shard.js'
import { fail, ok } from '../../protocol/errors.js'
import type { StoreMsg } from '../../protocol/messages.js'
import {
  joinDeleteMany,
  shardInstance,
  shardOfInstance,
  splitDeleteMany,
  storeShardOf,
  type DeleteManyMsg,
} from '../../runtime/store-shards.js'

const SHARDS = 4
const request = { requestId: 'r', deadlineMs: 0 }

test('a key has one shard, every shard gets keys, one shard takes everything', () => {
  const seen = new Set<number>()
  for (let n = 0; n < 200; n++) {
    const shard = keyShard('bucket', `key-${n}`, SHARDS)
    assert.ok(shard >= 0 && shard < SHARDS)
    assert.is(keyShard('bucket', `key-${n}`, SHARDS), shard)
    seen.add(shard)
    assert.is(keyShard('bucket', `key-${n}`, 1), 0)
  }
  assert.is(seen.size, SHARDS)
  // The bucket is part of the key: a separator keeps "ab"/"c" and "a"/"bc" apart.
  const pairs = Array.from({ length: 50 }, (_, n) => [`ab${n}`, 'c', `a`, `b${n}c`] as const)
  assert.ok(pairs.some(([b1, k1, b2, k2]) => keyShard(b1, k1, 8) !== keyShard(b2, k2, 8)))
})

test('requests by key go to its shard, a copy to its target, the rest to shard 0', () => {
  const key = { bucket: 'b', key: 'some/key' }
  const owner = keyShard('b', 'some/key', SHARDS)
  const byKey = [
    { ...request, kind: 'object.get', ...key },
    { ...request, kind: 'object.delete', ...key },
    { ...request, kind: 'upload.create', ...key, http: {}, userMeta: {} },
  ] as unknown as StoreMsg[]
  for (const msg of byKey) assert.is(storeShardOf(msg, SHARDS), owner, msg.kind)
  const copy = {
    ...request,
    kind: 'object.copy',
    source: { bucket: 'other', key: 'source' },
    target: key,
    conditions: {},
  } as unknown as StoreMsg
  assert.is(storeShardOf(copy, SHARDS), owner)
  const others = [
    { ...request, kind: 'bucket.create', bucket: 'b' },
    { ...request, kind: 'object.list', bucket: 'b', prefix: '' },
    { ...request, kind: 'system.get', name: 'x' },
    { ...request, kind: 'blob.read', sha256: 'a'.repeat(64) },
  ] as unknown as StoreMsg[]
  for (const msg of others) assert.is(storeShardOf(msg, SHARDS), 0, msg.kind)
  assert.is(storeShardOf(byKey[0] as StoreMsg, 1), 0)
})

test('instance names follow the supervisor: the role alone, or numbered from 1', () => {
  assert.is(shardInstance('replica-store', 0, 1), 'replica-store')
  assert.is(shardInstance('replica-store', 2, 3), 'replica-store-3')
  assert.is(shardInstance('coordinator', 0, 2), 'coordinator-1')
  assert.is(shardOfInstance('replica-store'), 0)
  assert.is(shardOfInstance('replica-store-3'), 2)
})

test('a delete of many keys: each shard its keys; answers joined, a failed part its keys', () => {
  const objects = Array.from({ length: 40 }, (_, n) => ({ key: `k${n}` }))
  const msg = { ...request, kind: 'object.delete-many', bucket: 'b', objects } as DeleteManyMsg
  const parts = splitDeleteMany(msg, SHARDS)
  const keysOf = (part: DeleteManyMsg): string[] => part.objects.map((each) => each.key)
  assert.equal(parts.flatMap(([, part]) => keysOf(part)).sort(), objects.map((o) => o.key).sort())
  for (const [shard, part] of parts) {
    for (const key of keysOf(part)) assert.is(keyShard('b', key, SHARDS), shard)
    assert.is(part.bucket, 'b')
  }
  const [first, ...rest] = parts.map(([, part]) => part)
  assert.ok(first !== undefined)
  const answers = [
    fail<never>('unavailable', 'replica-store-1 is down'),
    ...rest.map((part) =>
      ok({ deleted: part.objects.map(({ key }) => ({ key, deleteMarker: false })), errors: [] }),
    ),
  ]
  const joined = joinDeleteMany([first, ...rest], answers)
  assert.ok(joined.ok)
  assert.equal(joined.value.errors.map((error) => error.key).sort(), keysOf(first).sort())
  assert.ok(joined.value.errors.every((error) => error.code === 'unavailable'))
  assert.is(joined.value.deleted.length, objects.length - first.objects.length)
  const none = joinDeleteMany(
    [first, ...rest],
    [first, ...rest].map(() => fail<never>('no_such_bucket', 'no bucket b')),
  )
  assert.equal(none, fail('no_such_bucket', 'no bucket b'))
})

test.run()
