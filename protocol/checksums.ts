/** @module Checksums: incremental hashers for the additional checksums S3 accepts (x-amz-checksum-*
 * headers and aws-chunked trailers). Pure functions of the bytes fed to them, so the HTTP layer and
 * the storage actor compute the same value. Digests are base64 as they appear on the wire: CRC32
 * and CRC32C as 4 big-endian bytes, CRC64NVME as 8, SHA-1 and SHA-256 as the raw digest. A digest
 * is a promise because CRC64NVME's (from @aws-sdk/crc64-nvme, the SDK's own) is. Both CRC32s come
 * from @node-rs/crc32 (SIMD and the CPU's CRC32C instruction), several times faster than
 * zlib.crc32 and than slicing-by-8 tables in JavaScript. The store runs CRC32 over every byte it
 * writes and every whole object it reads. The tests check both against independent references
 * (zlib, @aws-crypto/crc32c). CRC64NVME runs in JavaScript, far slower, so it is computed only
 * when a client names it. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { crc32, crc32c } from '@node-rs/crc32'
import { Crc64Nvme } from '@aws-sdk/crc64-nvme'
import type { ChecksumAlgorithm } from './objects.js'

export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = [
  'crc32',
  'crc32c',
  'crc64nvme',
  'sha1',
  'sha256',
]

/** Header (and trailer) name prefix; the algorithm name follows in lower case. */
export const CHECKSUM_HEADER_PREFIX = 'x-amz-checksum-'

export interface Checksum {
  readonly algorithm: ChecksumAlgorithm
  update(chunk: Uint8Array): void
  /** The digest of everything fed so far. Further updates are refused after this call. */
  digestBase64(): Promise<string>
}

export function createChecksum(algorithm: ChecksumAlgorithm): Checksum {
  switch (algorithm) {
    case 'crc32':
      return crc32Checksum()
    case 'crc32c':
      return crc32cChecksum()
    case 'crc64nvme':
      return crc64nvmeChecksum()
    case 'sha1':
    case 'sha256':
      return hashChecksum(algorithm)
  }
}

/** One-shot form of createChecksum, for small bodies and tests. */
export function checksumBase64(algorithm: ChecksumAlgorithm, data: Uint8Array): Promise<string> {
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
  // The running value is the whole state.
  let value = 0
  let done = false
  return {
    algorithm: 'crc32',
    update(chunk) {
      assert(!done, 'checksum updated after digest')
      value = crc32Update(value, chunk)
    },
    digestBase64() {
      done = true
      return Promise.resolve(crcToBase64(value))
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
      return Promise.resolve(crcToBase64(value))
    },
  }
}

/** CRC32 (zlib's polynomial) of `data` continuing from `crc` (0 to start). */
export function crc32Update(crc: number, data: Uint8Array): number {
  return crc32(data, crc)
}

/** CRC32C (Castagnoli) of `data` continuing from `crc` (0 to start). */
export function crc32cUpdate(crc: number, data: Uint8Array): number {
  return crc32c(data, crc)
}

function crc64nvmeChecksum(): Checksum {
  const crc = new Crc64Nvme()
  let digest: Promise<string> | null = null
  return {
    algorithm: 'crc64nvme',
    update(chunk) {
      assert(digest === null, 'checksum updated after digest')
      crc.update(chunk)
    },
    digestBase64() {
      digest ??= crc.digest().then((bytes) => Buffer.from(bytes).toString('base64'))
      return digest
    },
  }
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
      return Promise.resolve(digest)
    },
  }
}
