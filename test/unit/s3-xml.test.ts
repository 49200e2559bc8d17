/** @module Unit tests of http/s3/xml/s3-xml.ts. Goal: the S3 XML we build has Amazon S3's element
 * names and survives any key byte for byte, and the parser refuses every body S3 would refuse (or
 * that could hurt us) with malformed_xml. Method: build documents and read them back with our own
 * generic parser, compare exact strings where S3's spelling matters, and feed hand-written tricky,
 * malformed, oversized and hostile bodies to the parsers. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  copyObjectResultXml,
  decodeContinuationToken,
  deleteResultXml,
  encodeContinuationToken,
  errorXml,
  listBucketsXml,
  listObjectsV1Xml,
  listObjectsV2Xml,
  locationConstraintXml,
  parseDeleteObjects,
  parseXmlBody,
  s3Timestamp,
  s3UrlEncode,
  xmlChildText,
  xmlChildren,
  xmlText,
  type XmlElement,
  type XmlNode,
} from '../../http/s3/xml/s3-xml.js'
import {
  DELETE_OBJECTS_KEYS_MAX,
  KEY_BYTES_MAX,
  XML_BODY_BYTES_MAX,
} from '../../protocol/limits.js'
import { objectColumns } from '../../protocol/object-columns.js'
import type { ListPage, ObjectSummary } from '../../protocol/objects.js'

const NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
const DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>'
const OWNER = { id: 'owner-id', displayName: 'owner-name' }
const TRICKY_KEYS = [
  'a<b',
  'x&y',
  'x&amp;y',
  '&#65;&#x41;&lt',
  ']]>',
  '<![CDATA[x]]>',
  ' leading',
  'trailing ',
  '   ',
  '007',
  '1e3',
  'true',
  'é/日本/😀',
  'control\u0001\u001f\r\t\n',
  '"quoted\'',
  'percent%20plus+',
]

function root(xml: string, name: string): XmlElement {
  const parsed = parseXmlBody(xml, name)
  if (!parsed.ok) throw new Error(`${parsed.code}: ${parsed.detail}`)
  return parsed.value
}

function child(element: XmlElement, name: string): XmlNode {
  const [only, ...rest] = xmlChildren(element, name)
  assert.ok(only !== undefined, `missing ${name}`)
  assert.is(rest.length, 0, `more than one ${name}`)
  return only
}

function textOf(element: XmlElement, name: string): string | undefined {
  const value = xmlChildText(element, name)
  if (!value.ok) throw new Error(value.detail)
  return value.value
}

function element(node: XmlNode): XmlElement {
  assert.type(node, 'object')
  return node as XmlElement
}

function summary(key: string, size = 3): ObjectSummary {
  const etag = '"900150983cd24fb0d6963f7d28e17f72"'
  return { key, size, etag, lastModifiedMs: Date.UTC(2024, 0, 1) }
}

function page(objects: ObjectSummary[], commonPrefixes: string[], truncated: boolean): ListPage {
  const last = [...objects.map((object) => object.key), ...commonPrefixes].sort().at(-1) ?? ''
  return { objects: objectColumns(objects), commonPrefixes, truncated, lastReturned: last }
}

/** How a client reverses encoding-type=url: `%XX` decoding (S3 writes no `+` for a space). */
function urlDecode(value: string): string {
  return decodeURIComponent(value)
}

test('ListAllMyBucketsResult has Owner and Buckets with ISO 8601 millisecond dates', () => {
  const xml = listBucketsXml({
    buckets: [
      { name: 'alpha', createdMs: Date.UTC(2024, 0, 1) },
      { name: 'beta', createdMs: Date.UTC(2024, 5, 30, 12, 34, 56, 789) },
    ],
    by: OWNER,
    region: 'us-east-1',
  })
  assert.ok(xml.startsWith(`${DECLARATION}<ListAllMyBucketsResult ${NS}>`))
  const result = root(xml, 'ListAllMyBucketsResult')
  const owner = element(child(result, 'Owner'))
  assert.is(textOf(owner, 'ID'), 'owner-id')
  assert.is(textOf(owner, 'DisplayName'), 'owner-name')
  const buckets = xmlChildren(element(child(result, 'Buckets')), 'Bucket').map(element)
  assert.equal(
    buckets.map((bucket) => [textOf(bucket, 'Name'), textOf(bucket, 'CreationDate')]),
    [
      ['alpha', '2024-01-01T00:00:00.000Z'],
      ['beta', '2024-06-30T12:34:56.789Z'],
    ],
  )
})

test('s3Timestamp writes what toISOString writes, for any time a Date can hold', () => {
  const DAY = 86_400_000
  const times = [0, -0, 0.9, -0.5, -1, 1, DAY - 1, DAY, Date.UTC(2000, 1, 29, 23, 59, 59, 999)]
  times.push(Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), -62135596800000)
  times.push(8.64e15, -8.64e15, 1795000000123.7)
  // A fixed pseudo-random walk over ±8000 years, with fractions, crossing days in both orders.
  let seed = 12345
  for (let index = 0; index < 20_000; index++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    times.push(((seed / 2 ** 31) * 2 - 1) * 2.5e14 + (index % 3 === 0 ? 0.25 : 0))
  }
  for (const time of times) assert.is(s3Timestamp(time), new Date(time).toISOString(), `${time}`)
})

test('ListAllMyBucketsResult with no buckets has an empty Buckets element', () => {
  const xml = listBucketsXml({ buckets: [], by: OWNER, region: 'us-east-1' })
  assert.ok(xml.includes('<Buckets/>') || xml.includes('<Buckets></Buckets>'))
})

test('ListObjectsV2 writes the S3 elements and omits the optional ones when unset', () => {
  const xml = listObjectsV2Xml({
    bucket: 'bucket',
    prefix: '',
    delimiter: '',
    maxKeys: 1000,
    page: page([summary('a'), summary('b', 0)], [], false),
    fetchOwner: false,
    owner: OWNER,
  })
  assert.ok(xml.startsWith(`${DECLARATION}<ListBucketResult ${NS}>`))
  const result = root(xml, 'ListBucketResult')
  assert.is(textOf(result, 'Name'), 'bucket')
  assert.is(textOf(result, 'Prefix'), '')
  assert.is(textOf(result, 'KeyCount'), '2')
  assert.is(textOf(result, 'MaxKeys'), '1000')
  assert.is(textOf(result, 'IsTruncated'), 'false')
  for (const absent of [
    'Delimiter',
    'ContinuationToken',
    'NextContinuationToken',
    'StartAfter',
    'EncodingType',
    'CommonPrefixes',
  ]) {
    assert.equal(xmlChildren(result, absent), [], absent)
  }
  const contents = xmlChildren(result, 'Contents').map(element)
  assert.is(contents.length, 2)
  const first = contents[0]
  assert.ok(first !== undefined)
  assert.is(textOf(first, 'Key'), 'a')
  assert.is(textOf(first, 'LastModified'), '2024-01-01T00:00:00.000Z')
  assert.is(textOf(first, 'ETag'), '"900150983cd24fb0d6963f7d28e17f72"')
  assert.is(textOf(first, 'Size'), '3')
  assert.is(textOf(first, 'StorageClass'), 'STANDARD')
  assert.equal(xmlChildren(first, 'Owner'), [])
})

test('ListObjectsV2 echoes the request; its token names the last returned entry', () => {
  const xml = listObjectsV2Xml({
    bucket: 'bucket',
    prefix: 'photos/',
    delimiter: '/',
    maxKeys: 2,
    page: page([summary('photos/a.jpg')], ['photos/2024/'], true),
    continuationToken: 'previous-token',
    startAfter: 'photos/0',
    fetchOwner: true,
    owner: OWNER,
  })
  const result = root(xml, 'ListBucketResult')
  assert.is(textOf(result, 'Prefix'), 'photos/')
  assert.is(textOf(result, 'Delimiter'), '/')
  assert.is(textOf(result, 'StartAfter'), 'photos/0')
  assert.is(textOf(result, 'ContinuationToken'), 'previous-token')
  assert.is(textOf(result, 'KeyCount'), '2')
  assert.is(textOf(result, 'IsTruncated'), 'true')
  const next = textOf(result, 'NextContinuationToken')
  assert.ok(next !== undefined)
  assert.equal(decodeContinuationToken(next), { ok: true, value: 'photos/a.jpg' })
  const contents = element(child(result, 'Contents'))
  assert.is(textOf(element(child(contents, 'Owner')), 'ID'), 'owner-id')
  assert.is(textOf(element(child(result, 'CommonPrefixes')), 'Prefix'), 'photos/2024/')
})

test('tricky keys survive ListObjectsV2 unchanged without encoding-type', () => {
  const xml = listObjectsV2Xml({
    bucket: 'bucket',
    prefix: '',
    delimiter: '',
    maxKeys: 1000,
    page: page(
      TRICKY_KEYS.map((key) => summary(key)),
      [],
      false,
    ),
    fetchOwner: false,
    owner: OWNER,
  })
  // Characters XML 1.0 cannot carry literally travel as character references.
  assert.ok(xml.includes('control&#x1;&#x1F;&#xD;\t\n</Key>'))
  assert.not.ok(xml.includes('\u0001'))
  const keys = xmlChildren(root(xml, 'ListBucketResult'), 'Contents').map((contents) => {
    return textOf(element(contents), 'Key')
  })
  assert.equal(keys, TRICKY_KEYS)
})

test('encoding-type=url encodes like S3: percent on UTF-8, space as %20, slash kept', () => {
  assert.is(s3UrlEncode('test_file(3).png'), 'test_file%283%29.png')
  assert.is(s3UrlEncode('a b/c'), 'a%20b/c')
  assert.is(s3UrlEncode('quux ab/'), 'quux%20ab/')
  assert.is(s3UrlEncode('asdf+b'), 'asdf%2Bb')
  assert.is(s3UrlEncode("~!'*-._"), '%7E%21%27*-._')
  assert.is(s3UrlEncode('+%&=?#'), '%2B%25%26%3D%3F%23')
  assert.is(s3UrlEncode('é😀'), '%C3%A9%F0%9F%98%80')
  assert.is(s3UrlEncode('\u0001\r\n'), '%01%0D%0A')
  for (const key of TRICKY_KEYS) assert.is(urlDecode(s3UrlEncode(key)), key)
})

test('ListObjectsV2 with encoding-type=url encodes keys, prefixes, Delimiter, StartAfter', () => {
  const xml = listObjectsV2Xml({
    bucket: 'bucket',
    prefix: 'my docs/',
    delimiter: ' ',
    maxKeys: 10,
    page: page([summary('my docs/a(1).txt')], ['my docs/x y '], false),
    startAfter: 'my docs/0 0',
    continuationToken: 'tok+en',
    encodingType: 'url',
    fetchOwner: false,
    owner: OWNER,
  })
  const result = root(xml, 'ListBucketResult')
  assert.is(textOf(result, 'EncodingType'), 'url')
  assert.is(textOf(result, 'Prefix'), 'my%20docs/')
  assert.is(textOf(result, 'Delimiter'), '%20')
  assert.is(textOf(result, 'StartAfter'), 'my%20docs/0%200')
  // The token is ours and opaque: echoed as sent, never encoded.
  assert.is(textOf(result, 'ContinuationToken'), 'tok+en')
  assert.is(textOf(element(child(result, 'Contents')), 'Key'), 'my%20docs/a%281%29.txt')
  assert.is(textOf(element(child(result, 'CommonPrefixes')), 'Prefix'), 'my%20docs/x%20y%20')
})

test('ListObjects (V1) has Marker, and NextMarker only when truncated with a delimiter', () => {
  const base = {
    bucket: 'bucket',
    prefix: 'p/',
    maxKeys: 1,
    marker: '',
    owner: OWNER,
  }
  const plain = root(
    listObjectsV1Xml({ ...base, delimiter: '', page: page([summary('p/a')], [], true) }),
    'ListBucketResult',
  )
  assert.is(textOf(plain, 'Marker'), '')
  assert.equal(xmlChildren(plain, 'NextMarker'), [])
  assert.equal(xmlChildren(plain, 'Delimiter'), [])
  assert.is(textOf(plain, 'IsTruncated'), 'true')
  const contents = element(child(plain, 'Contents'))
  assert.is(textOf(element(child(contents, 'Owner')), 'ID'), 'owner-id')
  assert.equal(xmlChildren(plain, 'KeyCount'), [])

  const grouped = root(
    listObjectsV1Xml({ ...base, marker: 'p/0', delimiter: '/', page: page([], ['p/q/'], true) }),
    'ListBucketResult',
  )
  assert.is(textOf(grouped, 'Marker'), 'p/0')
  assert.is(textOf(grouped, 'NextMarker'), 'p/q/')
  assert.is(textOf(grouped, 'Delimiter'), '/')
  assert.is(textOf(element(child(grouped, 'CommonPrefixes')), 'Prefix'), 'p/q/')

  const complete = root(
    listObjectsV1Xml({ ...base, delimiter: '/', page: page([summary('p/a')], [], false) }),
    'ListBucketResult',
  )
  assert.equal(xmlChildren(complete, 'NextMarker'), [])
})

test('ListObjects (V1) with encoding-type=url encodes Marker and NextMarker too', () => {
  const result = root(
    listObjectsV1Xml({
      bucket: 'bucket',
      prefix: 'a b',
      delimiter: '/',
      maxKeys: 1,
      marker: 'a b/0',
      owner: OWNER,
      encodingType: 'url',
      page: page([], ['a b/c d/'], true),
    }),
    'ListBucketResult',
  )
  assert.is(textOf(result, 'Marker'), 'a%20b/0')
  assert.is(textOf(result, 'NextMarker'), 'a%20b/c%20d/')
  assert.is(textOf(result, 'EncodingType'), 'url')
})

test('DeleteResult lists Deleted and Error entries, and only errors when quiet', () => {
  const options = {
    deleted: [{ key: 'gone' }, { key: 'versioned', versionId: 'v1' }],
    errors: [{ key: 'locked', code: 'AccessDenied', message: 'Access Denied' }],
  }
  const loud = root(deleteResultXml({ ...options, quiet: false }), 'DeleteResult')
  const deleted = xmlChildren(loud, 'Deleted').map(element)
  assert.equal(
    deleted.map((entry) => [textOf(entry, 'Key'), textOf(entry, 'VersionId')]),
    [
      ['gone', undefined],
      ['versioned', 'v1'],
    ],
  )
  const error = element(child(loud, 'Error'))
  assert.is(textOf(error, 'Key'), 'locked')
  assert.is(textOf(error, 'Code'), 'AccessDenied')
  assert.is(textOf(error, 'Message'), 'Access Denied')

  const quiet = root(deleteResultXml({ ...options, quiet: true }), 'DeleteResult')
  assert.equal(xmlChildren(quiet, 'Deleted'), [])
  assert.is(xmlChildren(quiet, 'Error').length, 1)
})

test('tricky keys round-trip through DeleteResult and back through parseDeleteObjects', () => {
  const built = deleteResultXml({
    deleted: TRICKY_KEYS.map((key) => ({ key })),
    errors: [],
    quiet: false,
  })
  const keys = xmlChildren(root(built, 'DeleteResult'), 'Deleted').map((entry) => {
    return textOf(element(entry), 'Key')
  })
  assert.equal(keys, TRICKY_KEYS)
  // The same escaping, read back as a request body.
  const request = built
    .replace(`<DeleteResult ${NS}>`, '<Delete>')
    .replace('</DeleteResult>', '</Delete>')
    .replaceAll('Deleted>', 'Object>')
  const parsed = parseDeleteObjects(request)
  assert.ok(parsed.ok)
  assert.equal(
    parsed.value.keys.map((entry) => entry.key),
    TRICKY_KEYS,
  )
})

test('parseDeleteObjects reads Quiet, Keys and VersionIds exactly as sent', () => {
  const body = `<?xml version="1.0" encoding="UTF-8"?>
<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Quiet>true</Quiet>
  <Object><Key>007</Key></Object>
  <Object><Key>  spaced  </Key><VersionId>3/L4kqtJl40Nr8X8gdRQBpUMLUo</VersionId></Object>
  <Object><Key>a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;</Key></Object>
  <Object><Key>ctl&#x1;&#9;&#13;&#x1F600;</Key></Object>
  <Object><Key>cd<![CDATA[<&amp;]]>ata</Key></Object>
  <Object><Key>日本語/ключ</Key></Object>
</Delete>`
  const parsed = parseDeleteObjects(body)
  assert.equal(parsed, {
    ok: true,
    value: {
      quiet: true,
      keys: [
        { key: '007' },
        { key: '  spaced  ', versionId: '3/L4kqtJl40Nr8X8gdRQBpUMLUo' },
        { key: 'a&b <c> "d" \'e\'' },
        { key: 'ctl\u0001\t\r😀' },
        { key: 'cd<&amp;ata' },
        { key: '日本語/ключ' },
      ],
    },
  })
})

test('parseDeleteObjects: Quiet defaults to false; bytes, a BOM and prefixes are accepted', () => {
  const withoutQuiet = parseDeleteObjects('<Delete><Object><Key>k</Key></Object></Delete>')
  assert.equal(withoutQuiet, { ok: true, value: { quiet: false, keys: [{ key: 'k' }] } })
  const bytes = new TextEncoder().encode(
    '\uFEFF<Delete><Quiet>False</Quiet><Object><Key>é</Key></Object></Delete>',
  )
  assert.equal(parseDeleteObjects(bytes), {
    ok: true,
    value: { quiet: false, keys: [{ key: 'é' }] },
  })
  const prefixed =
    '<s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">' +
    '<s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>'
  assert.equal(parseDeleteObjects(prefixed), {
    ok: true,
    value: { quiet: false, keys: [{ key: 'k' }] },
  })
})

function assertMalformed(body: string | Uint8Array, why: string): void {
  const parsed = parseDeleteObjects(body)
  assert.is(parsed.ok, false, why)
  if (!parsed.ok) assert.is(parsed.code, 'malformed_xml', why)
}

test('parseDeleteObjects refuses malformed and invalid bodies with malformed_xml', () => {
  const cases: [string, string][] = [
    ['', 'empty body'],
    ['not xml at all', 'text'],
    ['<Delete><Object><Key>k</Key></Object>', 'unclosed root'],
    ['<Delete><Object><Key>k</Object></Delete>', 'mismatched tags'],
    ['<Delete><Object><Key>a&b</Key></Object></Delete>', 'bare ampersand'],
    ['<Delete><Object><Key>a<b</Key></Object></Delete>', 'bare less-than'],
    ['<Delete><Object><Key>&nbsp;</Key></Object></Delete>', 'HTML entity'],
    ['<Delete><Object><Key>&constructor;</Key></Object></Delete>', 'prototype entity'],
    ['<Delete><Object><Key>&#0;</Key></Object></Delete>', 'NUL reference'],
    ['<Delete><Object><Key>&#xD800;</Key></Object></Delete>', 'surrogate reference'],
    ['<Delete><Object><Key>&#x110000;</Key></Object></Delete>', 'reference beyond Unicode'],
    ['<Remove><Object><Key>k</Key></Object></Remove>', 'wrong root'],
    ['<Delete><Object><Key>k</Key></Object></Delete><Delete/>', 'two roots'],
    ['<Delete/>', 'no objects'],
    ['<Delete><Quiet>true</Quiet></Delete>', 'no objects but Quiet'],
    ['<Delete><Object></Object></Delete>', 'Object without Key'],
    ['<Delete><Object><VersionId>v</VersionId></Object></Delete>', 'only a VersionId'],
    ['<Delete><Object><Key></Key></Object></Delete>', 'empty Key'],
    ['<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>', 'two Keys'],
    ['<Delete><Object><Key><Inner>a</Inner></Key></Object></Delete>', 'Key with children'],
    ['<Delete><Object>k</Object></Delete>', 'Object with text only'],
    ['<Delete><Object><Key>k</Key><VersionId/></Object></Delete>', 'empty VersionId'],
    ['<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>', 'bad Quiet'],
    ['<Delete><Quiet>true</Quiet><Quiet>1</Quiet><Object><Key>k</Key></Object></Delete>', 'Quiets'],
    ['<Delete>text<Object><Key>k</Key></Object></Delete', 'truncated'],
  ]
  for (const [body, why] of cases) assertMalformed(body, why)
  assertMalformed(new Uint8Array([0x3c, 0x44, 0x3e, 0xff, 0x3c, 0x2f, 0x44, 0x3e]), 'bad UTF-8')
})

test('DTDs and entity expansion are refused, however small', () => {
  const laughs =
    '<?xml version="1.0"?><!DOCTYPE Delete [<!ENTITY a "aaaaaaaaaa">' +
    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>' +
    '<Delete><Object><Key>&c;</Key></Object></Delete>'
  assertMalformed(laughs, 'billion laughs')
  const external =
    '<!DOCTYPE Delete [<!ENTITY x SYSTEM "file:///etc/passwd">]>' +
    '<Delete><Object><Key>&x;</Key></Object></Delete>'
  assertMalformed(external, 'external entity')
  assertMalformed('<!DOCTYPE Delete><Delete><Object><Key>k</Key></Object></Delete>', 'bare DTD')
})

test('nesting is bounded', () => {
  const depth = 200
  const nested = `${'<a>'.repeat(depth)}${'</a>'.repeat(depth)}`
  const body = `<Delete>${nested}<Object><Key>k</Key></Object></Delete>`
  assertMalformed(body, 'deep nesting')
})

test('bodies over XML_BODY_BYTES_MAX are refused, a body of exactly the limit is read', () => {
  const head = '<Delete><Object><Key>k</Key></Object>'
  const tail = '</Delete>'
  const padding = XML_BODY_BYTES_MAX - head.length - tail.length
  const exact = head + ' '.repeat(padding) + tail
  assert.is(Buffer.byteLength(exact), XML_BODY_BYTES_MAX)
  assert.ok(parseDeleteObjects(exact).ok)
  assert.ok(parseDeleteObjects(new TextEncoder().encode(exact)).ok)
  const over = head + ' '.repeat(padding + 1) + tail
  assertMalformed(over, 'one byte over, as a string')
  assertMalformed(new TextEncoder().encode(over), 'one byte over, as bytes')
  // The limit counts UTF-8 bytes, not UTF-16 code units.
  const wide = head + 'é'.repeat(Math.ceil(padding / 2) + 1) + tail
  assert.ok(wide.length <= XML_BODY_BYTES_MAX)
  assertMalformed(wide, 'over in bytes though not in characters')
})

function deleteBody(count: number): string {
  const objects = Array.from({ length: count }, (_, index) => {
    return `<Object><Key>key-${String(index)}</Key></Object>`
  })
  return `<Delete>${objects.join('')}</Delete>`
}

test('DeleteObjects takes up to DELETE_OBJECTS_KEYS_MAX keys and refuses one more', () => {
  const full = parseDeleteObjects(deleteBody(DELETE_OBJECTS_KEYS_MAX))
  assert.ok(full.ok)
  assert.is(full.value.keys.length, DELETE_OBJECTS_KEYS_MAX)
  assert.is(full.value.keys.at(-1)?.key, `key-${String(DELETE_OBJECTS_KEYS_MAX - 1)}`)
  assertMalformed(deleteBody(DELETE_OBJECTS_KEYS_MAX + 1), 'too many keys')
})

test('parseXmlBody returns the root content, an empty root as an empty element', () => {
  assert.equal(parseXmlBody('<VersioningConfiguration/>', 'VersioningConfiguration'), {
    ok: true,
    value: {},
  })
  const status = parseXmlBody(
    '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>',
    'VersioningConfiguration',
  )
  assert.ok(status.ok)
  assert.equal(xmlChildText(status.value, 'Status'), { ok: true, value: 'Enabled' })
  assert.equal(xmlChildText(status.value, 'MfaDelete'), { ok: true, value: undefined })
  const wrong = parseXmlBody('<CORSConfiguration/>', 'VersioningConfiguration')
  assert.is(wrong.ok, false)
  const text = parseXmlBody(
    '<VersioningConfiguration>x</VersioningConfiguration>',
    'VersioningConfiguration',
  )
  assert.is(text.ok, false)
  assert.is(xmlText('plain'), 'plain')
  assert.is(xmlText({ Child: 'x' }), undefined)
})

test('CopyObjectResult has LastModified and the quoted ETag', () => {
  const lastModifiedMs = Date.UTC(2024, 0, 2, 3, 4, 5, 6)
  const xml = copyObjectResultXml({ etag: '"abc"', lastModifiedMs })
  assert.ok(xml.startsWith(`${DECLARATION}<CopyObjectResult ${NS}>`))
  const result = root(xml, 'CopyObjectResult')
  assert.is(textOf(result, 'LastModified'), '2024-01-02T03:04:05.006Z')
  assert.is(textOf(result, 'ETag'), '"abc"')
})

test('LocationConstraint is empty for us-east-1 and names any other region', () => {
  assert.is(locationConstraintXml('us-east-1'), `${DECLARATION}<LocationConstraint ${NS}/>`)
  assert.is(
    locationConstraintXml('eu-west-1'),
    `${DECLARATION}<LocationConstraint ${NS}>eu-west-1</LocationConstraint>`,
  )
})

test('Error has Code, Message, Resource, RequestId and extras, and no namespace', () => {
  const xml = errorXml({
    code: 'NoSuchKey',
    message: 'The specified key does not exist.',
    resource: '/bucket/a&b',
    requestId: 'req-1',
    extra: { Key: 'a&b', BucketName: 'bucket' },
  })
  assert.is(
    xml,
    `${DECLARATION}<Error><Code>NoSuchKey</Code>` +
      '<Message>The specified key does not exist.</Message>' +
      '<Resource>/bucket/a&amp;b</Resource><RequestId>req-1</RequestId>' +
      '<Key>a&amp;b</Key><BucketName>bucket</BucketName></Error>',
  )
  const base = { code: 'X', message: 'm', resource: 'r', requestId: 'q' }
  assert.throws(() => errorXml({ ...base, extra: { Code: 'y' } }))
  assert.throws(() => errorXml({ ...base, extra: { 'a b': 'y' } }))
})

test('continuation tokens round-trip any key and are URL and XML safe', () => {
  const longest = 'k'.repeat(KEY_BYTES_MAX)
  const widest = '😀'.repeat(KEY_BYTES_MAX / 4)
  for (const key of [...TRICKY_KEYS, '', longest, widest]) {
    const token = encodeContinuationToken(key)
    assert.ok(/^[A-Za-z0-9_-]+$/.test(token), token)
    assert.equal(decodeContinuationToken(token), { ok: true, value: key })
  }
  assert.throws(() => encodeContinuationToken(`${longest}k`))
})

test('undecodable continuation tokens are refused with invalid_argument', () => {
  const refused = {
    ok: false,
    code: 'invalid_argument',
    detail: 'The continuation token provided is incorrect',
  }
  const tooLong = encodeContinuationToken('k'.repeat(KEY_BYTES_MAX)) + 'AAAA'
  const wrongVersion = Buffer.from('9key').toString('base64url')
  const badUtf8 = Buffer.from([0x31, 0xff, 0xfe]).toString('base64url')
  const padded = Buffer.from('1key').toString('base64')
  for (const token of ['', '!!!!', 'a b', 'a+b/', padded, tooLong, wrongVersion, badUtf8, 'MQ_']) {
    assert.equal(decodeContinuationToken(token), refused, token)
  }
})

test.run()
