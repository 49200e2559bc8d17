/** @module Multipart checksum unit tests.
 * Goal: a FULL_OBJECT checksum combined from part CRCs equals the CRC of all the bytes, for each
 * CRC; a COMPOSITE one is the checksum of the raw part checksums with `-N`; CreateMultipartUpload's
 * headers are accepted and refused as S3 does. Method: random parts of uneven sizes (empty
 * included), compared with the checksum computed over their concatenation. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import { checksumBase64 } from '../../protocol/checksums.js'
import { objectChecksum, parseUploadChecksum } from '../../protocol/multipart-checksum.js'

test('FULL_OBJECT: combined part CRCs equal the CRC of the whole, for every CRC', async () => {
  const parts = [
    randomBytes(1000),
    randomBytes(0),
    randomBytes(70_001),
    randomBytes(1000),
    randomBytes(3),
  ]
  const whole = Buffer.concat(parts)
  for (const algorithm of ['crc32', 'crc32c', 'crc64nvme'] as const) {
    const sums = []
    for (const part of parts) {
      sums.push({ checksum: await checksumBase64(algorithm, part), size: part.length })
    }
    const combined = objectChecksum({ algorithm, type: 'FULL_OBJECT' }, sums)
    assert.is(combined, await checksumBase64(algorithm, whole), algorithm)
  }
})

test('COMPOSITE: the checksum of the raw part checksums, then -N', async () => {
  const parts = [Buffer.from('first part'), Buffer.from('second')]
  const raw = parts.map((part) => createHash('sha256').update(part).digest())
  const sums = parts.map((part, index) => ({
    checksum: raw[index]?.toString('base64') ?? '',
    size: part.length,
  }))
  const expected = createHash('sha256').update(Buffer.concat(raw)).digest('base64') + '-2'
  assert.is(objectChecksum({ algorithm: 'sha256', type: 'COMPOSITE' }, sums), expected)
})

test('upload checksum headers: defaults, and the combinations S3 refuses', () => {
  assert.equal(parseUploadChecksum(undefined, undefined), { ok: true, value: null })
  const cases: Array<[string | undefined, string | undefined, unknown]> = [
    ['CRC32', undefined, { algorithm: 'crc32', type: 'COMPOSITE' }],
    ['crc32c', 'FULL_OBJECT', { algorithm: 'crc32c', type: 'FULL_OBJECT' }],
    ['CRC64NVME', undefined, { algorithm: 'crc64nvme', type: 'FULL_OBJECT' }],
    ['SHA256', 'COMPOSITE', { algorithm: 'sha256', type: 'COMPOSITE' }],
    ['SHA1', 'FULL_OBJECT', null],
    ['CRC64NVME', 'COMPOSITE', null],
    ['MD5', undefined, null],
    [undefined, 'COMPOSITE', null],
    ['CRC32', 'OTHER', null],
  ]
  for (const [algorithm, type, expected] of cases) {
    const parsed = parseUploadChecksum(algorithm, type)
    if (expected === null) {
      assert.ok(!parsed.ok && parsed.code === 'invalid_request', `${algorithm} ${type}`)
    } else {
      assert.equal(parsed, { ok: true, value: expected }, `${algorithm} ${type}`)
    }
  }
})

test.run()
