/** Goal: an object version's attributes are one family (protocol/object-attributes.ts): each is
 * checked by its own rules, a value that is none is not kept, GET and HEAD get a summary, a copy
 * keeps the source's tags unless the request names them, and a key's digest names the tags as it
 * did before attributes were a family (so digests a store already keeps stay valid). Method: the
 * pure functions called on tables of attributes. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  attributesDigest,
  copiedAttributes,
  copyReadsSource,
  summaryOf,
  validateAttributes,
  withAttributes,
} from '../../protocol/object-attributes.js'

const tags = [{ key: 'colour', value: 'blue' }]
const STAMP = '0000018c0000000000000001'

test('each attribute is checked by its own rules', () => {
  assert.ok(validateAttributes({}).ok)
  assert.ok(validateAttributes({ tags }).ok)
  const reserved = validateAttributes({ tags: [{ key: 'aws:x', value: '' }] })
  assert.ok(!reserved.ok && reserved.code === 'invalid_tag')
  const many = Array.from({ length: 11 }, (_, index) => ({ key: `k${index}`, value: '' }))
  const tooMany = validateAttributes({ tags: many })
  assert.ok(!tooMany.ok && tooMany.code === 'invalid_tag')
})

test('a record keeps no attribute that is none, and GET reports a summary of the rest', () => {
  assert.equal(withAttributes(undefined), {})
  assert.equal(withAttributes({ tags: [] }), {})
  assert.equal(withAttributes({ tags }), { attributes: { tags } })
  assert.is(summaryOf(undefined), undefined)
  assert.is(summaryOf({ tags: [] }), undefined)
  assert.equal(summaryOf({ tags }), { tags: 1 })
})

test("a copy keeps the source's tags unless the request names them (REPLACE)", () => {
  const other = [{ key: 'shape', value: 'round' }]
  assert.equal(copiedAttributes({ tags }, undefined), { tags })
  assert.equal(copiedAttributes({ tags }, {}), { tags })
  assert.equal(copiedAttributes({ tags }, { tags: other }), { tags: other })
  assert.equal(copiedAttributes({ tags }, { tags: [] }), { tags: [] })
  assert.equal(copiedAttributes(undefined, undefined), {})
  // The source is read only when it has an attribute the copy keeps.
  assert.is(copyReadsSource({ tags: 1 }, undefined), true)
  assert.is(copyReadsSource({ tags: 1 }, { tags: [] }), false)
  assert.is(copyReadsSource(undefined, undefined), false)
})

test('the digest names the tag count, then the stamp of their change if any', () => {
  assert.is(attributesDigest(undefined, undefined), '\0' + '0')
  assert.is(attributesDigest({ tags }, undefined), '\0' + '1')
  assert.is(attributesDigest({ tags }, { tags: STAMP }), `\0${'1'}\0${STAMP}`)
  assert.is(attributesDigest(undefined, { tags: STAMP }), `\0${'0'}\0${STAMP}`)
})

test.run()
