// Goal: records written before an object version's attributes were one family (tags as `tags`,
// the stamp of their change as `tagsStamp`, an upload's tags as `tags`) read as before: decoding
// gives them as `attributes` and `attributeStamps`, a key's digest item hashes as it did (so the
// digests a store keeps stay valid), and a store on a data directory of that form answers their
// tags, reports their count, and completes an upload with its tags; attributes read from disk or
// a peer of a shape the registry does not know are corrupt.
// Method: records of the earlier form written into a store's kv (as the earlier code wrote them:
// the new record with its attributes renamed), then read by the codecs and by a store started
// afresh on that kv.
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { tokenOf } from '../../actors/replica-store/engine/versions.js'
import { objectKey, uploadKey } from '../../actors/replica-store/keys.js'
import {
  decodeObject,
  decodeUpload,
  encodeRecord,
  type ObjectRecord,
} from '../../actors/replica-store/records.js'
import { recordItem } from '../../actors/replica-store/replication/digests.js'
import type { AttributesResult, GetResult, PartInfo } from '../../protocol/messages.js'
import { hlcString } from '../../protocol/hlc.js'
import { fakeContext } from '../support/fake-context.js'
import { startStore, value, type TestStore } from '../support/store-harness.js'

const HTTP = { contentType: 'application/octet-stream' }
const TAGS = [{ key: 'colour', value: 'blue' }]
const STAMP = hlcString({ wallMs: 1_700_000_000_000, logical: 0, node: 7 })
const decoder = new TextDecoder()

/** The record as the earlier code wrote it: `tags` and `tagsStamp` for its attributes. */
function earlierForm(stored: Uint8Array, tagsStamp?: string): Uint8Array {
  const { attributes, attributeStamps, ...rest } = JSON.parse(decoder.decode(stored)) as Record<
    string,
    unknown
  > & { attributes?: { tags?: unknown }; attributeStamps?: unknown }
  assert.ok(attributes?.tags !== undefined, 'the store wrote the tags as an attribute')
  assert.is(attributeStamps, undefined)
  const earlier = {
    ...rest,
    tags: attributes.tags,
    ...(tagsStamp === undefined ? {} : { tagsStamp }),
  }
  return encodeRecord(earlier)
}

test('a record of the earlier form decodes with its tags and their stamp as attributes', () => {
  const record: ObjectRecord = {
    size: 1,
    etag: '"e"',
    lastModifiedMs: 1_700_000_000_000,
    http: HTTP,
    userMeta: {},
    checksums: {},
    sha256: 'a'.repeat(64),
    stamp: STAMP,
  }
  const later = hlcString({ wallMs: 1_700_000_001_000, logical: 0, node: 7 })
  const earlier = encodeRecord({ ...record, tags: TAGS, tagsStamp: later })
  const decoded = decodeObject(earlier)
  assert.equal(decoded.attributes, { tags: TAGS })
  assert.equal(decoded.attributeStamps, { tags: later })
  assert.not.ok('tags' in decoded || 'tagsStamp' in decoded)
  const upload = decodeUpload(
    encodeRecord({ initiatedMs: 1, http: HTTP, userMeta: {}, tags: TAGS }),
  )
  assert.equal(upload.attributes, { tags: TAGS })
  assert.not.ok('tags' in upload)
  // The digest item is the earlier code's, and the record of either form hashes alike.
  const stored = objectKey('b', 'k')
  const now = encodeRecord({
    ...record,
    attributes: { tags: TAGS },
    attributeStamps: { tags: later },
  })
  const earlierItem = `v\0${tokenOf(record)}\0${STAMP}\0"e"\0${'0'}\0${'1'}\0${later}`
  const hash = createHash('sha256').update(earlierItem).digest()
  assert.equal(recordItem(stored, earlier)?.hash, hash)
  assert.equal(recordItem(stored, now)?.hash, hash)
})

test('attributes read from outside the process are checked: a bad one is corrupt', () => {
  const record = {
    size: 1,
    etag: '"e"',
    lastModifiedMs: 1,
    http: HTTP,
    userMeta: {},
    checksums: {},
    sha256: 'a'.repeat(64),
  }
  const bad: [string, Record<string, unknown>][] = [
    ['an attribute the registry lacks', { attributes: { colour: 'blue' } }],
    ['tags that are no tags', { attributes: { tags: [{ key: 1 }] } }],
    ['tags S3 refuses', { attributes: { tags: [{ key: 'aws:x', value: '' }] } }],
    ['earlier tags that are no array', { tags: 'blue' }],
    ['a stamp of an attribute the registry lacks', { attributeStamps: { colour: STAMP } }],
    ['a stamp that is no string', { attributeStamps: { tags: 7 } }],
  ]
  for (const [name, fields] of bad) {
    assert.throws(() => decodeObject(encodeRecord({ ...record, ...fields })), /record: bad/, name)
  }
  const upload = { initiatedMs: 1, http: HTTP, userMeta: {}, attributes: { colour: 'blue' } }
  assert.throws(() => decodeUpload(encodeRecord(upload)), /bad attributes/)
})

async function rewritten(store: TestStore, key: string, bytes: Uint8Array): Promise<void> {
  await store.ctx.kv.commit([{ type: 'put', key, value: bytes }])
}

test('a store on earlier records answers their tags and completes with them', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const put = {
    kind: 'object.put' as const,
    bucket: 'b',
    http: HTTP,
    userMeta: {},
    expect: {},
    body: new Uint8Array([1, 2, 3]),
    attributes: { tags: TAGS },
  }
  value(await store.send({ ...put, key: 'k' }))
  const created = value(
    await store.send<{ uploadId: string }>({
      kind: 'upload.create',
      bucket: 'b',
      key: 'm',
      http: HTTP,
      userMeta: {},
      attributes: { tags: TAGS },
    }),
  )
  const at = { bucket: 'b', key: 'm', uploadId: created.uploadId }
  const part = value(
    await store.send<PartInfo>({
      kind: 'upload.part',
      ...at,
      partNumber: 1,
      expect: {},
      body: new Uint8Array([4, 5]),
    }),
  )
  // The records as the earlier code wrote them, read by a store started afresh on that kv.
  const objectAt = objectKey('b', 'k')
  const uploadAt = uploadKey('b', 'm', created.uploadId)
  await rewritten(store, objectAt, earlierForm(store.ctx.kv.get(objectAt) as Uint8Array))
  await rewritten(store, uploadAt, earlierForm(store.ctx.kv.get(uploadAt) as Uint8Array))
  assert.ok(decoder.decode(store.ctx.kv.get(objectAt)).includes('"tags":['))
  const again = await startStore(fakeContext({ kv: store.ctx.kv, blobs: store.ctx.blobs }))
  const got = value(await again.send<GetResult>({ kind: 'object.get', bucket: 'b', key: 'k' }))
  assert.equal(got.info.attributes, { tags: 1 })
  const attributes = value(
    await again.send<AttributesResult>({ kind: 'object.attributes.get', bucket: 'b', key: 'k' }),
  )
  assert.equal(attributes.attributes, { tags: TAGS })
  value(
    await again.send({
      kind: 'upload.complete',
      ...at,
      parts: [{ partNumber: 1, etag: part.etag }],
    }),
  )
  const completed = value(
    await again.send<AttributesResult>({ kind: 'object.attributes.get', bucket: 'b', key: 'm' }),
  )
  assert.equal(completed.attributes, { tags: TAGS })
})

test.run()
