/** Goal: S3's versioning rules decide as Amazon S3 documents them for every write of a version:
 * the version id a write or a delete marker gets in a bucket never configured, Enabled and
 * Suspended, which of them replace the `null` version, what DeleteObject without a version id
 * does, which keep an older change as history, the id an answer names, and a marker's tags. Method:
 * protocol/s3-rules/versioning.ts called on a table of bucket states. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  deleteWithoutId,
  keepsOlderChanges,
  markerHasNoAttributes,
  newestIsCurrent,
  newVersionId,
  replacesNullVersion,
  shownVersionId,
  type Versioning,
} from '../../protocol/s3-rules/versioning.js'

test('a write per bucket state: version id, null version replaced, older changes kept', () => {
  const rows: [Versioning, string | undefined, boolean, boolean][] = [
    [undefined, undefined, false, false],
    ['Enabled', 'tok', false, true],
    ['Suspended', 'null', true, false],
  ]
  for (const [status, versionId, replacesNull, keepsOlder] of rows) {
    const name = String(status)
    assert.is(newVersionId(status, 'tok'), versionId, name)
    assert.is(replacesNullVersion(status), replacesNull, name)
    assert.is(keepsOlderChanges(status), keepsOlder, name)
  }
})

test('DeleteObject without a version id: removes, or adds a marker named as a write', () => {
  let drawn = 0
  const draw = (): string => `tok${++drawn}`
  assert.equal(deleteWithoutId(undefined, draw), { marker: false })
  // A bucket never configured names no version: no token is drawn.
  assert.is(drawn, 0)
  assert.equal(deleteWithoutId('Enabled', draw), { marker: true, token: 'tok1', versionId: 'tok1' })
  assert.equal(deleteWithoutId('Suspended', draw), {
    marker: true,
    token: 'tok2',
    versionId: 'null',
  })
})

test('the version id an answer names: its own, null before versioning, none unversioned', () => {
  assert.is(shownVersionId(false, undefined), undefined)
  assert.is(shownVersionId(false, 'tok'), undefined)
  assert.is(shownVersionId(true, undefined), 'null')
  assert.is(shownVersionId(true, 'tok'), 'tok')
  assert.is(shownVersionId(true, 'null'), 'null')
})

test('the newest version is the current object unless it is a delete marker', () => {
  assert.is(newestIsCurrent({}), true)
  assert.is(newestIsCurrent({ deleteMarker: false }), true)
  assert.is(newestIsCurrent({ deleteMarker: true }), false)
})

test('a delete marker has no attributes: 405 by version id, 404 as the current version', () => {
  const at = { bucket: 'b', key: 'k' }
  const byId = markerHasNoAttributes(at, { byId: true })
  assert.ok(!byId.ok && byId.code === 'method_not_allowed')
  const current = markerHasNoAttributes(at, { byId: false })
  assert.ok(!current.ok && current.code === 'no_such_key')
})

test.run()
