/** Goal: lifecycle rules as Amazon S3 reads and applies them. The S3 documentation's example
 * configurations read back as written; a rule without an action, duplicate IDs, a day count of 0, a
 * Date not at midnight, a tag filter with delete-marker expiry, Days with ExpiredObjectDeleteMarker
 * and transitions are each refused with S3's code; a current version expires at the first day
 * boundary after its time plus the days (or on its Date), filtered by prefix, tags and size; a
 * noncurrent version counts from when it became noncurrent and the newest few are kept; a delete
 * marker is removed only when alone; an upload is aborted by prefix only. Method: the pure
 * functions of protocol/s3-rules/lifecycle.ts and the XML codec over tables of cases. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  currentVersionAction,
  DAY_MS,
  noncurrentVersionAction,
  uploadAction,
  type LifecycleConfiguration,
  type LifecycleRule,
} from '../../protocol/s3-rules/lifecycle.js'
import {
  lifecycleConfigurationXml,
  parseLifecycleConfiguration,
} from '../../http/s3/xml/lifecycle-xml.js'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)
const MIDNIGHT = Date.parse('2026-06-01T00:00:00Z')

function rule(overrides: Partial<LifecycleRule>): LifecycleRule {
  return {
    id: null,
    enabled: true,
    filter: { prefix: '', tags: [], sizeGreaterThan: null, sizeLessThan: null },
    expiration: null,
    expiredObjectDeleteMarker: false,
    noncurrentExpiration: null,
    abortUploadsAfterDays: null,
    ...overrides,
  }
}

function config(...rules: LifecycleRule[]): LifecycleConfiguration {
  return { rules }
}

test("the S3 documentation's examples read back as written", () => {
  const xml =
    '<LifecycleConfiguration><Rule><ID>ExampleRule</ID><Filter><And><Prefix>documents/</Prefix>' +
    '<Tag><Key>class</Key><Value>draft</Value></Tag>' +
    '<ObjectSizeGreaterThan>500</ObjectSizeGreaterThan>' +
    '</And></Filter><Status>Enabled</Status><Expiration><Days>365</Days></Expiration>' +
    '<NoncurrentVersionExpiration><NoncurrentDays>30</NoncurrentDays>' +
    '<NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>' +
    '<Rule><ID>uploads</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>' +
    '<AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation>' +
    '</AbortIncompleteMultipartUpload></Rule>' +
    '<Rule><Prefix>logs/</Prefix><Status>Disabled</Status>' +
    '<Expiration><Date>2027-01-01T00:00:00.000Z</Date></Expiration></Rule></LifecycleConfiguration>'
  const parsed = parseLifecycleConfiguration(bytes(xml))
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.detail)
  if (!parsed.ok) return
  const [first, second, third] = parsed.value.rules
  assert.equal(first?.filter, {
    prefix: 'documents/',
    tags: [{ key: 'class', value: 'draft' }],
    sizeGreaterThan: 500,
    sizeLessThan: null,
  })
  assert.equal(first?.noncurrentExpiration, { days: 30, newerVersionsKept: 3 })
  assert.is(second?.abortUploadsAfterDays, 7)
  assert.equal(third?.expiration, { days: null, dateMs: Date.parse('2027-01-01T00:00:00Z') })
  assert.is(third?.enabled, false)
  const again = parseLifecycleConfiguration(bytes(lifecycleConfigurationXml(parsed.value)))
  assert.equal(again, parsed)
})

test('refusals carry S3 codes', () => {
  const wrap = (inner: string): Uint8Array =>
    bytes(`<LifecycleConfiguration>${inner}</LifecycleConfiguration>`)
  const cases: [string, string, string][] = [
    ['no action', '<Rule><Filter/><Status>Enabled</Status></Rule>', 'invalid_request'],
    [
      'duplicate ids',
      (
        '<Rule><ID>a</ID><Filter/><Status>Enabled</Status>' +
        '<Expiration><Days>1</Days></Expiration></Rule>'
      ).repeat(2),
      'invalid_argument',
    ],
    [
      'zero days',
      '<Rule><Filter/><Status>Enabled</Status><Expiration><Days>0</Days></Expiration></Rule>',
      'invalid_argument',
    ],
    [
      'date not at midnight',
      '<Rule><Filter/><Status>Enabled</Status>' +
        '<Expiration><Date>2027-01-01T12:00:00Z</Date></Expiration></Rule>',
      'invalid_argument',
    ],
    [
      'tags with marker expiry',
      '<Rule><Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Status>Enabled</Status>' +
        '<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker>' +
        '</Expiration></Rule>',
      'invalid_request',
    ],
    [
      'days with marker expiry',
      '<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days>' +
        '<ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>',
      'malformed_xml',
    ],
    [
      'a transition',
      '<Rule><Filter/><Status>Enabled</Status><Transition><Days>30</Days>' +
        '<StorageClass>GLACIER</StorageClass></Transition></Rule>',
      'not_implemented',
    ],
    ['no rule', '', 'malformed_xml'],
  ]
  for (const [name, inner, code] of cases) {
    const parsed = parseLifecycleConfiguration(wrap(inner))
    assert.is(parsed.ok, false, name)
    if (!parsed.ok) assert.is(parsed.code, code, name)
  }
})

test('current versions: the day boundary after time plus days, a date, filters', () => {
  const expires = config(
    rule({
      filter: {
        prefix: 'tmp/',
        tags: [{ key: 'k', value: 'v' }],
        sizeGreaterThan: 10,
        sizeLessThan: 100,
      },
      expiration: { days: 2, dateMs: null },
    }),
  )
  const created = MIDNIGHT + 5 * 60 * 60 * 1000
  const version = {
    key: 'tmp/a',
    size: 50,
    tags: [{ key: 'k', value: 'v' }],
    lastModifiedMs: created,
    isDeleteMarker: false,
    versionsLeft: 0,
  }
  // Created at 05:00 on day 0: two days on is 05:00 on day 2, rounded up to midnight of day 3.
  assert.is(currentVersionAction(expires, version, MIDNIGHT + 3 * DAY_MS - 1), null)
  assert.is(currentVersionAction(expires, version, MIDNIGHT + 3 * DAY_MS), 'expire')
  const late = MIDNIGHT + 10 * DAY_MS
  assert.is(currentVersionAction(expires, { ...version, key: 'keep/a' }, late), null)
  assert.is(currentVersionAction(expires, { ...version, size: 10 }, late), null)
  assert.is(currentVersionAction(expires, { ...version, size: 100 }, late), null)
  assert.is(currentVersionAction(expires, { ...version, tags: [] }, late), null)
  assert.is(currentVersionAction(expires, { ...version, tags: null }, late), null)
  const disabled = config({ ...expires.rules[0]!, enabled: false })
  assert.is(currentVersionAction(disabled, version, late), null)
  const dated = config(rule({ expiration: { days: null, dateMs: MIDNIGHT + DAY_MS } }))
  assert.is(currentVersionAction(dated, version, MIDNIGHT + DAY_MS - 1), null)
  assert.is(currentVersionAction(dated, version, MIDNIGHT + DAY_MS), 'expire')
})

test('delete markers go when alone; noncurrent versions keep the newest few', () => {
  const markers = config(rule({ expiredObjectDeleteMarker: true }))
  const marker = {
    key: 'a',
    size: 0,
    tags: null,
    lastModifiedMs: MIDNIGHT,
    isDeleteMarker: true,
    versionsLeft: 0,
  }
  assert.is(currentVersionAction(markers, marker, MIDNIGHT), 'remove-marker')
  assert.is(currentVersionAction(markers, { ...marker, versionsLeft: 1 }, MIDNIGHT), null)
  const noncurrent = config(rule({ noncurrentExpiration: { days: 1, newerVersionsKept: 2 } }))
  const old = {
    key: 'a',
    size: 1,
    tags: null,
    lastModifiedMs: MIDNIGHT - 10 * DAY_MS,
    isDeleteMarker: false,
    becameNoncurrentMs: MIDNIGHT,
    newerNoncurrent: 2,
  }
  assert.is(noncurrentVersionAction(noncurrent, old, MIDNIGHT + DAY_MS - 1), null)
  assert.is(noncurrentVersionAction(noncurrent, old, MIDNIGHT + DAY_MS), 'expire')
  assert.is(
    noncurrentVersionAction(noncurrent, { ...old, newerNoncurrent: 1 }, MIDNIGHT + DAY_MS),
    null,
  )
})

test('uploads: aborted after their days, by prefix; a shorter day shortens everything', () => {
  const aborts = config(
    rule({
      filter: { prefix: 'in/', tags: [], sizeGreaterThan: null, sizeLessThan: null },
      abortUploadsAfterDays: 1,
    }),
  )
  const upload = { key: 'in/big', initiatedMs: MIDNIGHT }
  assert.is(uploadAction(aborts, upload, MIDNIGHT + DAY_MS - 1), null)
  assert.is(uploadAction(aborts, upload, MIDNIGHT + DAY_MS), 'abort')
  assert.is(uploadAction(aborts, { ...upload, key: 'out/big' }, MIDNIGHT + DAY_MS), null)
  // A one-second day (SVC_LIFECYCLE_DAY_SECS=1): the same rule acts within two seconds.
  assert.is(uploadAction(aborts, { ...upload, initiatedMs: 1_500 }, 3_000, 1_000), 'abort')
  assert.is(uploadAction(aborts, { ...upload, initiatedMs: 1_500 }, 2_999, 1_000), null)
})

test.run()
