/** Goal: S3's multipart rules decide as Amazon S3 documents them, for every path that completes an
 * upload or stores a part: the list's order, its repeats, unknown parts and ETags, the 5 MiB
 * minimum of all parts but the last, the upload's checksum (the parts', a named one, COMPOSITE's
 * listed part checksums) and the object's ETag. Method: protocol/s3-rules/multipart.ts called on
 * tables of lists and stored parts; each row names the S3 error code it must give, or none. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { CompletedPart } from '../../protocol/messages.js'
import {
  checkListedParts,
  checkPartChecksum,
  checksumToCompute,
  completedChecksum,
  distinctParts,
  multipartEtag,
  type StoredPart,
} from '../../protocol/s3-rules/multipart.js'
import type { Result } from '../../protocol/errors.js'

const MIB = 1024 * 1024
const codeOf = (result: Result<unknown>): string | null => (result.ok ? null : result.code)
const listed = (...numbers: number[]): CompletedPart[] =>
  numbers.map((partNumber) => ({ partNumber, etag: `"e${partNumber}"` }))

test('distinctParts: ascending numbers, a repeated number counts once with its last entry', () => {
  const rows: [string, CompletedPart[], string | null, number[]][] = [
    ['ascending', listed(1, 2, 5), null, [1, 2, 5]],
    ['one part', listed(7), null, [7]],
    ['descending', listed(2, 1), 'invalid_part_order', []],
    ['out of order later', listed(1, 3, 2), 'invalid_part_order', []],
    ['repeated', listed(1, 2, 2, 3), null, [1, 2, 3]],
  ]
  for (const [name, parts, code, numbers] of rows) {
    const result = distinctParts(parts)
    assert.is(codeOf(result), code, name)
    if (result.ok)
      assert.equal(
        result.value.map((part) => part.partNumber),
        numbers,
        name,
      )
  }
  const repeated = distinctParts([
    { partNumber: 1, etag: '"first"' },
    { partNumber: 1, etag: '"second"' },
  ])
  assert.ok(repeated.ok)
  assert.equal(repeated.value, [{ partNumber: 1, etag: '"second"' }])
})

test('checkListedParts: InvalidPart before EntityTooSmall, the last part may be small', () => {
  const big = (etag: string): StoredPart => ({ etag, size: 5 * MIB, checksums: {} })
  const small = (etag: string): StoredPart => ({ etag, size: 5 * MIB - 1, checksums: {} })
  const rows: [string, (StoredPart | undefined)[], string | null][] = [
    ['every part at least 5 MiB', [big('"e1"'), big('"e2"')], null],
    ['the last part small', [big('"e1"'), small('"e2"')], null],
    ['a part but the last small', [small('"e1"'), big('"e2"')], 'entity_too_small'],
    ['ETags compare without quotes', [big('e1'), big('"e2"')], null],
    ['a part not uploaded', [big('"e1"'), undefined], 'invalid_part'],
    ['another ETag', [big('"e1"'), big('"other"')], 'invalid_part'],
    // Every part must exist before sizes count.
    ['small and missing', [small('"e1"'), undefined], 'invalid_part'],
  ]
  for (const [name, stored, code] of rows) {
    assert.is(codeOf(checkListedParts(listed(1, 2), stored)), code, name)
  }
  const withChecksum = [{ partNumber: 1, etag: '"e1"', checksums: { crc32: 'AAAAAA==' } }]
  const stored = { etag: '"e1"', size: 1, checksums: { crc32: 'AAAAAQ==' } }
  assert.is(codeOf(checkListedParts(withChecksum, [stored])), 'invalid_part')
})

test('multipartEtag: the MD5 of the parts binary MD5s, a dash and the count', () => {
  // The parts hold "a" and "b": their ETags are their MD5s.
  const a = '"0cc175b9c0f1b6a831c399e269772661"'
  const b = '92eb5ffee6ae2fec3ad71c777531578f'
  assert.is(multipartEtag([a, b]), '"96e024ba2074fe77e8e965ba43a704be-2"')
})

test('parts of an upload created with a checksum algorithm carry it', () => {
  const rows: [string, Parameters<typeof checkPartChecksum>, string | null][] = [
    ['no algorithm: any part', [undefined, { checksums: { sha1: 'x' } }], null],
    ['the algorithm carried', ['crc32', { checksums: { crc32: 'x' } }], null],
    ['another one carried', ['crc32', { checksums: { sha256: 'x' } }], 'invalid_request'],
    ['none carried', ['sha256', {}], 'invalid_request'],
    ['computed for a copied part', ['sha256', { compute: 'sha256' }], null],
  ]
  for (const [name, args, code] of rows) assert.is(codeOf(checkPartChecksum(...args)), code, name)
  assert.is(checksumToCompute(undefined, {}), undefined)
  assert.is(checksumToCompute('crc32', { crc32: 'x' }), undefined)
  assert.is(checksumToCompute('crc32', { sha1: 'x' }), 'crc32')
})

test('completedChecksum: from the stored parts, a named one checked, COMPOSITE lists parts', () => {
  // CRC32 of "a" is e8b7be43, of "b" 71beeff9 (base64 of their big-endian bytes).
  const parts: StoredPart[] = [
    { etag: '"e1"', size: 1, checksums: { crc32: '6Le+Qw==' } },
    { etag: '"e2"', size: 1, checksums: { crc32: 'cb7v+Q==' } },
  ]
  const full = { algorithm: 'crc32' as const, type: 'FULL_OBJECT' as const }
  const composite = { algorithm: 'crc32' as const, type: 'COMPOSITE' as const }
  const bare = listed(1, 2)
  const withSums = bare.map((part, index) => ({
    ...part,
    checksums: parts[index]?.checksums ?? {},
  }))
  assert.equal(completedChecksum(undefined, bare, parts, undefined), { ok: true, value: null })
  // The CRC32 of "ab" is 9e83486d.
  const whole = completedChecksum(full, bare, parts, undefined)
  assert.equal(whole, {
    ok: true,
    value: { checksums: { crc32: 'noNIbQ==' }, type: 'FULL_OBJECT' },
  })
  assert.is(codeOf(completedChecksum(full, bare, parts, { crc32: 'noNIbQ==' })), null)
  assert.is(
    codeOf(completedChecksum(full, bare, parts, { crc32: 'AAAAAA==' })),
    'checksum_mismatch',
  )
  assert.is(codeOf(completedChecksum(composite, bare, parts, undefined)), 'invalid_request')
  const listedSums = completedChecksum(composite, withSums, parts, undefined)
  assert.ok(listedSums.ok && listedSums.value?.checksums.crc32?.endsWith('-2'))
  // A wrong named checksum is BadDigest before the missing list entries.
  assert.is(codeOf(completedChecksum(composite, bare, parts, { crc32: 'x' })), 'checksum_mismatch')
  const unsummed = [parts[0] as StoredPart, { etag: '"e2"', size: 1, checksums: {} }]
  assert.is(codeOf(completedChecksum(full, bare, unsummed, undefined)), 'invalid_part')
})

test.run()
