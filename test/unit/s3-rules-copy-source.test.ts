/** Goal: S3's copy rules decide as Amazon S3 documents them, for a single node's copy and a
 * cluster's alike: a copy onto itself must change something (or name a source version), a delete
 * marker is no source, x-amz-copy-source-if-* fail with 412 only, 5 GiB at most, COPY and REPLACE
 * of metadata, a multipart source copied as new bytes, UploadPartCopy's range, and which
 * checksums a copied part keeps or has computed. Method: protocol/s3-rules/copy-source.ts called
 * on tables of requests; each row names the S3 error code it must give, or none. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { Result } from '../../protocol/errors.js'
import {
  checkCopySourceConditions,
  checkCopySourceSize,
  checkSelfCopy,
  checksumsOfBytes,
  copiedMetadata,
  etagIsMd5OfBytes,
  copiedPartExpect,
  markerAsSource,
  partCopyRange,
  SELF_COPY_REFUSED,
} from '../../protocol/s3-rules/copy-source.js'

const codeOf = (result: Result<unknown>): string | null => (result.ok ? null : result.code)
const at = { bucket: 'b', key: 'k' }

test('a copy onto itself must replace metadata or name a version', () => {
  const rows: [string, Parameters<typeof checkSelfCopy>, string | null][] = [
    ['itself, COPY', [at, at, false], 'invalid_request'],
    ['itself, REPLACE', [at, at, true], null],
    ['itself by version id (restores it)', [{ ...at, versionId: 'null' }, at, false], null],
    ['another key', [at, { bucket: 'b', key: 'k2' }, false], null],
    ['another bucket', [at, { bucket: 'b2', key: 'k' }, false], null],
  ]
  for (const [name, args, code] of rows) assert.is(codeOf(checkSelfCopy(...args)), code, name)
  const refused = checkSelfCopy(at, at, false)
  assert.ok(!refused.ok && refused.detail === SELF_COPY_REFUSED)
})

test('a delete marker is no source: InvalidRequest by version id, NoSuchKey as current', () => {
  assert.is(codeOf(markerAsSource(at, { byId: true })), 'invalid_request')
  assert.is(codeOf(markerAsSource(at, { byId: false })), 'no_such_key')
})

test('x-amz-copy-source-if-*: as a read, but 412 where a read says 304', () => {
  const source = { etag: '"abc"', lastModifiedMs: 1_700_000_000_500 }
  const second = 1_700_000_000_000
  const rows: [string, Parameters<typeof checkCopySourceConditions>[1], string | null][] = [
    ['none', {}, null],
    ['if-match matches', { ifMatch: '"abc"' }, null],
    ['if-match differs', { ifMatch: '"x"' }, 'precondition_failed'],
    ['if-none-match matches', { ifNoneMatch: '"abc"' }, 'precondition_failed'],
    ['if-none-match differs', { ifNoneMatch: '"x"' }, null],
    ['if-modified-since, unmodified', { ifModifiedSinceMs: second }, 'precondition_failed'],
    ['if-modified-since, modified', { ifModifiedSinceMs: second - 1000 }, null],
    [
      'if-unmodified-since, modified',
      { ifUnmodifiedSinceMs: second - 1000 },
      'precondition_failed',
    ],
    // S3: if-match true and if-unmodified-since false copies.
    ['if-match over if-unmodified-since', { ifMatch: '"abc"', ifUnmodifiedSinceMs: 0 }, null],
    // S3: if-none-match false and if-modified-since true is 412.
    [
      'if-none-match over if-modified-since',
      { ifNoneMatch: '"abc"', ifModifiedSinceMs: 0 },
      'precondition_failed',
    ],
  ]
  for (const [name, conditions, code] of rows) {
    assert.is(codeOf(checkCopySourceConditions(source, conditions)), code, name)
  }
})

test('metadata: COPY keeps the source, REPLACE takes the request', () => {
  const source = { http: { contentType: 'text/plain' }, userMeta: { a: '1' } }
  const replace = { http: { contentType: 'image/png' }, userMeta: { b: '2' } }
  assert.equal(copiedMetadata(source, {}), source)
  assert.equal(copiedMetadata(source, { replace }), replace)
})

test('CopyObject copies at most 5 GiB, as S3 does', () => {
  assert.is(codeOf(checkCopySourceSize(0)), null)
  assert.is(codeOf(checkCopySourceSize(5 * 1024 ** 3)), null)
  assert.is(codeOf(checkCopySourceSize(5 * 1024 ** 3 + 1)), 'invalid_request')
})

test('an ETag is the MD5 of the bytes unless CompleteMultipartUpload made the object', () => {
  assert.is(etagIsMd5OfBytes({}), true)
  assert.is(etagIsMd5OfBytes({ partsCount: undefined }), true)
  assert.is(etagIsMd5OfBytes({ partsCount: 1 }), false)
  assert.is(etagIsMd5OfBytes({ partsCount: 3 }), false)
})

test('UploadPartCopy: the range within the source, all of it without one', () => {
  const rows: [string, { start: number; end: number } | undefined, number, string | null][] = [
    ['no range', undefined, 10, null],
    ['first byte', { start: 0, end: 0 }, 10, null],
    ['last byte', { start: 9, end: 9 }, 10, null],
    ['past the end', { start: 5, end: 10 }, 10, 'invalid_range'],
    ['reversed', { start: 5, end: 4 }, 10, 'invalid_range'],
  ]
  for (const [name, range, size, code] of rows) {
    assert.is(codeOf(partCopyRange(range, size)), code, name)
  }
  assert.equal(partCopyRange(undefined, 10), { ok: true, value: { start: 0, end: 9 } })
})

test('a copied part keeps the checksums of all the source bytes, computes the upload one', () => {
  const plain = { size: 10, checksums: { crc32: 'c', sha1: 's' } }
  const composite = { ...plain, checksumType: 'COMPOSITE' as const }
  assert.equal(checksumsOfBytes(plain), plain.checksums)
  assert.equal(checksumsOfBytes(composite), {})
  const all = { start: 0, end: 9 }
  const some = { start: 1, end: 9 }
  assert.equal(copiedPartExpect(all, plain, undefined), { size: 10, checksums: plain.checksums })
  assert.equal(copiedPartExpect(all, plain, 'crc32'), { size: 10, checksums: plain.checksums })
  assert.equal(copiedPartExpect(all, plain, 'sha256'), {
    size: 10,
    checksums: plain.checksums,
    compute: 'sha256',
  })
  // A range has none of the source's checksums; a COMPOSITE one is of no bytes.
  assert.equal(copiedPartExpect(some, plain, 'crc32'), { size: 9, compute: 'crc32' })
  assert.equal(copiedPartExpect(some, plain, undefined), { size: 9 })
  assert.equal(copiedPartExpect(all, composite, 'crc32'), { size: 10, compute: 'crc32' })
})

test.run()
