/** @module Checksums: incremental hashers for the additional checksums S3 accepts (x-amz-checksum-*
 * headers and aws-chunked trailers). Pure functions of the bytes fed to them, so the HTTP layer and
 * the storage actor compute the same value. Digests are base64 as they appear on the wire: CRC32
 * and CRC32C as 4 big-endian bytes, SHA-1 and SHA-256 as the raw digest. CRC32C is computed here
 * with slicing-by-8 tables: @aws-crypto/crc32c walks bytes through an iterator at about 46 MB/s,
 * ten times slower than this, and the tests use it as the independent reference. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { crc32 } from 'node:zlib'
import type { ChecksumAlgorithm } from './objects.js'

export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = [
  'crc32',
  'crc32c',
  'sha1',
  'sha256',
]

/** Header (and trailer) name prefix; the algorithm name follows in lower case. */
export const CHECKSUM_HEADER_PREFIX = 'x-amz-checksum-'

export interface Checksum {
  readonly algorithm: ChecksumAlgorithm
  update(chunk: Uint8Array): void
  /** The digest of everything fed so far. Further updates are refused after this call. */
  digestBase64(): string
}

export function createChecksum(algorithm: ChecksumAlgorithm): Checksum {
  switch (algorithm) {
    case 'crc32':
      return crc32Checksum()
    case 'crc32c':
      return crc32cChecksum()
    case 'sha1':
    case 'sha256':
      return hashChecksum(algorithm)
  }
}

/** One-shot form of createChecksum, for small bodies and tests. */
export function checksumBase64(algorithm: ChecksumAlgorithm, data: Uint8Array): string {
  const checksum = createChecksum(algorithm)
  checksum.update(data)
  return checksum.digestBase64()
}

/** Maps `x-amz-checksum-crc32` (any case) to 'crc32' and so on; null for anything else, including
 * `x-amz-checksum-algorithm` and `x-amz-checksum-type`, which name a checksum rather than carry
 * one. */
export function checksumAlgorithmFromHeader(name: string): ChecksumAlgorithm | null {
  const lower = name.toLowerCase()
  if (!lower.startsWith(CHECKSUM_HEADER_PREFIX)) return null
  const suffix = lower.slice(CHECKSUM_HEADER_PREFIX.length)
  return CHECKSUM_ALGORITHMS.find((algorithm) => algorithm === suffix) ?? null
}

export function checksumHeaderName(algorithm: ChecksumAlgorithm): string {
  return CHECKSUM_HEADER_PREFIX + algorithm
}

/** The 4 big-endian bytes S3 uses for a CRC, base64. */
export function crcToBase64(value: number): string {
  assert(Number.isInteger(value) && value >= 0 && value <= 0xffffffff)
  const bytes = Buffer.allocUnsafe(4)
  bytes.writeUInt32BE(value, 0)
  return bytes.toString('base64')
}

function crc32Checksum(): Checksum {
  // zlib.crc32 takes the running value as its second argument, so no state beyond one number.
  let value = 0
  let done = false
  return {
    algorithm: 'crc32',
    update(chunk) {
      assert(!done, 'checksum updated after digest')
      value = crc32(chunk, value)
    },
    digestBase64() {
      done = true
      return crcToBase64(value)
    },
  }
}

function crc32cChecksum(): Checksum {
  let value = 0
  let done = false
  return {
    algorithm: 'crc32c',
    update(chunk) {
      assert(!done, 'checksum updated after digest')
      value = crc32cUpdate(value, chunk)
    },
    digestBase64() {
      done = true
      return crcToBase64(value)
    },
  }
}

/** Castagnoli polynomial, bit-reversed. */
const CRC32C_POLYNOMIAL = 0x82f63b78

/** Eight 256-entry tables: table t maps a byte to its CRC after t further zero bytes, so eight
 * input bytes cost eight lookups and no loop over bits. Computed once, never written afterwards. */
const CRC32C_TABLES = buildCrc32cTables()

function buildCrc32cTables(): Int32Array {
  const tables = new Int32Array(8 * 256)
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ CRC32C_POLYNOMIAL : crc >>> 1
    tables[byte] = crc
  }
  for (let byte = 0; byte < 256; byte++) {
    let crc = tables[byte] ?? 0
    for (let table = 1; table < 8; table++) {
      crc = (tables[crc & 0xff] ?? 0) ^ (crc >>> 8)
      tables[table * 256 + byte] = crc
    }
  }
  return tables
}

/** CRC32C of `data` continuing from `crc` (0 to start), like zlib.crc32's second argument. */
export function crc32cUpdate(crc: number, data: Uint8Array): number {
  const t = CRC32C_TABLES
  let c = ~crc
  let i = 0
  const end8 = data.length - (data.length & 7)
  // Indexes are in range by construction; `!` keeps noUncheckedIndexedAccess off the hot loop.
  for (; i < end8; i += 8) {
    const a = c ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24))
    c =
      t[1792 + (a & 0xff)]! ^
      t[1536 + ((a >>> 8) & 0xff)]! ^
      t[1280 + ((a >>> 16) & 0xff)]! ^
      t[1024 + (a >>> 24)]! ^
      t[768 + data[i + 4]!]! ^
      t[512 + data[i + 5]!]! ^
      t[256 + data[i + 6]!]! ^
      t[data[i + 7]!]!
  }
  for (; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}

function hashChecksum(algorithm: 'sha1' | 'sha256'): Checksum {
  const hash = createHash(algorithm)
  let digest: string | null = null
  return {
    algorithm,
    update(chunk) {
      assert(digest === null, 'checksum updated after digest')
      hash.update(chunk)
    },
    digestBase64() {
      // A node Hash cannot digest twice; remember the answer so repeated calls agree.
      digest ??= hash.digest('base64')
      return digest
    },
  }
}
