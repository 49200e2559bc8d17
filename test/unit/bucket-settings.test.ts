/** @module Unit tests of the bucket settings family (protocol/bucket-settings.ts,
 * actors/replica-store/engine/bucket-settings.ts). Goal: each setting keeps the key bytes the
 * store wrote for it before the family existed (R\0<bucket> for CORS, T\0<bucket> for tags), so
 * a data directory written then reads as before; tags answer NoSuchTagSet when absent and an empty
 * set deletes them; deleting a bucket deletes every setting of the registry, so a bucket created
 * again under the name has none, and in a cluster each of them is a stamped catalog change. Method:
 * the replica-store actor on test/support/fake-context.ts, records written into its kv as the
 * earlier code wrote them, a restart on the durable image of its kv. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { bucketSettingKey, isCatalogKey, stampKey } from '../../actors/replica-store/keys.js'
import {
  BUCKET_SETTING_NAMES,
  BUCKET_SETTINGS,
  type BucketSettingValues,
  type NamedBucketSetting,
} from '../../protocol/bucket-settings.js'
import { fakeContext } from '../support/fake-context.js'
import { clusterStore, code, startStore, value } from '../support/store-harness.js'

/** A valid value of every setting: the compiler asks for one of each new setting. */
const SAMPLES: BucketSettingValues = {
  cors: {
    rules: [
      { allowedOrigins: ['*'], allowedMethods: ['GET'], allowedHeaders: [], exposeHeaders: [] },
    ],
  },
  tags: [{ key: 'cost-center', value: '42' }],
  policy: {
    text: JSON.stringify({
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::b/*' },
      ],
    }),
  },
  acl: { canned: 'public-read' },
  quota: { maxBytes: 1024, maxObjects: null },
  objectLock: { enabled: true, defaultRetention: { mode: 'GOVERNANCE', days: 1, years: null } },
  lifecycle: {
    rules: [
      {
        id: 'tmp',
        enabled: true,
        filter: { prefix: 'tmp/', tags: [], sizeGreaterThan: null, sizeLessThan: null },
        expiration: { days: 7, dateMs: null },
        expiredObjectDeleteMarker: false,
        noncurrentExpiration: null,
        abortUploadsAfterDays: null,
      },
    ],
  },
}

function sample(name: keyof BucketSettingValues): NamedBucketSetting {
  return { name, value: SAMPLES[name] } as NamedBucketSetting
}

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value))

test('each setting keeps the key the store wrote before: a table name to its prefix', () => {
  assert.is(bucketSettingKey('photos', 'cors'), 'R\0photos')
  assert.is(bucketSettingKey('photos', 'tags'), 'T\0photos')
  assert.is(bucketSettingKey('photos', 'policy'), 'p\0photos')
  assert.is(bucketSettingKey('photos', 'acl'), 'a\0photos')
  assert.is(bucketSettingKey('photos', 'quota'), 'q\0photos')
  assert.is(bucketSettingKey('photos', 'objectLock'), 'o\0photos')
  assert.is(bucketSettingKey('photos', 'lifecycle'), 'l\0photos')
  const prefixes = BUCKET_SETTING_NAMES.map((name) => bucketSettingKey('b', name).slice(0, 2))
  assert.is(new Set(prefixes).size, BUCKET_SETTING_NAMES.length, 'two settings share a prefix')
  for (const name of BUCKET_SETTING_NAMES) {
    assert.ok(isCatalogKey(bucketSettingKey('b', name)), `${name} is not in the catalog`)
  }
})

test('records written before the family read back as each setting', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  // The records as the earlier code wrote them: its JSON, under R\0<bucket> and T\0<bucket>.
  await store.ctx.kv.commit([
    { type: 'put', key: 'R\0b', value: encode(SAMPLES.cors) },
    { type: 'put', key: 'T\0b', value: encode(SAMPLES.tags) },
  ])
  const restarted = await startStore(fakeContext({ kv: store.ctx.kv.durableCopy() }))
  for (const name of ['cors', 'tags'] as const) {
    const got = await restarted.send({ kind: 'bucket.setting.get', bucket: 'b', name })
    assert.equal(value(got), SAMPLES[name], name)
  }
})

test('tags: NoSuchTagSet when absent, an empty set deletes them and succeeds without', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const get = () => store.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'tags' })
  assert.is(code(await get()), BUCKET_SETTINGS.tags.absent.code)
  assert.is(code(await get()), 'no_such_tag_set')
  value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', ...sample('tags') }))
  assert.equal(value(await get()), SAMPLES.tags)
  value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', name: 'tags', value: [] }))
  assert.is(code(await get()), 'no_such_tag_set')
  assert.is(store.ctx.kv.durableCopy().get('T\0b'), undefined)
  value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', name: 'tags', value: [] }))
  value(await store.send({ kind: 'bucket.setting.delete', bucket: 'b', name: 'tags' }))
})

test('deleting a bucket deletes every setting: the bucket made again has none', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  for (const name of BUCKET_SETTING_NAMES) {
    value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', ...sample(name) }))
  }
  value(await store.send({ kind: 'bucket.delete', bucket: 'b' }))
  const durable = store.ctx.kv.durableCopy()
  for (const name of BUCKET_SETTING_NAMES) {
    assert.is(durable.get(bucketSettingKey('b', name)), undefined, `${name} outlived its bucket`)
  }
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  for (const name of BUCKET_SETTING_NAMES) {
    const got = await store.send({ kind: 'bucket.setting.get', bucket: 'b', name })
    assert.is(code(got), BUCKET_SETTINGS[name].absent.code, name)
  }
})

test('cluster: each setting change and the bucket delete stamp every setting key', async () => {
  const store = await clusterStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const stamps = () =>
    BUCKET_SETTING_NAMES.map((name) => store.ctx.kv.get(stampKey(bucketSettingKey('b', name))))
  for (const name of BUCKET_SETTING_NAMES) {
    value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', ...sample(name) }))
  }
  const put = stamps()
  assert.ok(
    put.every((stamp) => stamp !== undefined),
    'a setting put left no stamp',
  )
  value(await store.send({ kind: 'bucket.delete', bucket: 'b' }))
  const deleted = stamps()
  for (const [index, name] of BUCKET_SETTING_NAMES.entries()) {
    assert.ok(deleted[index] !== undefined, `${name}: the delete left no tombstone`)
    assert.not.equal(deleted[index], put[index], `${name}: the delete was not stamped`)
  }
})

test.run()
