/** @module A multipart upload's checksum, as Amazon S3 defines it: the algorithm and type named at
 * CreateMultipartUpload (x-amz-checksum-algorithm, x-amz-checksum-type), and the whole object's
 * checksum made from its parts' at completion. COMPOSITE is the algorithm over the concatenated raw
 * part checksums, written `<base64>-<parts>`; FULL_OBJECT is the CRC of all the bytes, combined
 * from the parts' CRCs. S3 allows COMPOSITE for CRC32, CRC32C, SHA-1 and SHA-256 (the default
 * for all but CRC64NVME), FULL_OBJECT for the three CRCs (the only type of CRC64NVME). */
import { createHash } from 'node:crypto'
import type { z } from 'zod'
import { CHECKSUM_ALGORITHMS, crc32Update, crc32cUpdate, crcToBase64 } from './checksums.js'
import { CRC32C_MODEL, CRC32_MODEL, CRC64NVME_MODEL, combineCrcs } from './crc-combine.js'
import { fail, ok, type Result } from './errors.js'
import type { ChecksumAlgorithm } from './objects.js'
import type { uploadChecksum } from './wire/fields.js'

export type UploadChecksum = z.infer<typeof uploadChecksum>

const CRC_MODELS = {
  crc32: CRC32_MODEL,
  crc32c: CRC32C_MODEL,
  crc64nvme: CRC64NVME_MODEL,
} as const

/** The upload's checksum from CreateMultipartUpload's headers; null when it names none. */
export function parseUploadChecksum(
  algorithmHeader: string | undefined,
  typeHeader: string | undefined,
): Result<UploadChecksum | null> {
  if (algorithmHeader === undefined) {
    if (typeHeader === undefined) return ok(null)
    return fail(
      'invalid_request',
      'The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.',
    )
  }
  const algorithm = CHECKSUM_ALGORITHMS.find((name) => name === algorithmHeader.toLowerCase())
  if (algorithm === undefined) {
    return fail(
      'invalid_request',
      'Checksum algorithm provided is unsupported. Please try again with any of the valid ' +
        'types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]',
    )
  }
  const crc = algorithm in CRC_MODELS
  const type =
    typeHeader?.toUpperCase() ?? (algorithm === 'crc64nvme' ? 'FULL_OBJECT' : 'COMPOSITE')
  if (type !== 'FULL_OBJECT' && type !== 'COMPOSITE') {
    return fail('invalid_request', 'Value for x-amz-checksum-type header is invalid.')
  }
  if ((type === 'FULL_OBJECT' && !crc) || (type === 'COMPOSITE' && algorithm === 'crc64nvme')) {
    return fail(
      'invalid_request',
      `The ${type} checksum type cannot be used with the ${algorithm} checksum algorithm.`,
    )
  }
  return ok({ algorithm, type })
}

/** The whole object's checksum from its parts' (base64, in order) and their sizes. Synchronous, so
 * that completing an upload reads and writes with no await in between. */
export function objectChecksum(
  upload: UploadChecksum,
  parts: { checksum: string; size: number }[],
): string {
  const raw = parts.map((part) => Buffer.from(part.checksum, 'base64'))
  if (upload.type === 'COMPOSITE') {
    return `${compositeDigest(upload.algorithm, Buffer.concat(raw))}-${parts.length}`
  }
  const model = CRC_MODELS[upload.algorithm as keyof typeof CRC_MODELS]
  const pieces = parts.map((part, index) => ({
    crc: BigInt('0x' + (raw[index]?.toString('hex') || '0')),
    bytes: part.size,
  }))
  const combined = combineCrcs(model, pieces)
  const hex = combined.toString(16).padStart(model.width / 4, '0')
  return Buffer.from(hex, 'hex').toString('base64')
}

/** A COMPOSITE algorithm's digest of the concatenated part checksums (CRC64NVME is never one). */
function compositeDigest(algorithm: ChecksumAlgorithm, bytes: Buffer): string {
  switch (algorithm) {
    case 'crc32':
      return crcToBase64(crc32Update(0, bytes))
    case 'crc32c':
      return crcToBase64(crc32cUpdate(0, bytes))
    case 'sha1':
    case 'sha256':
      return createHash(algorithm).update(bytes).digest('base64')
    case 'crc64nvme':
      throw new Error('CRC64NVME has no COMPOSITE checksum')
  }
}
