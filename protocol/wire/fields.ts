/** @module Fields that several node-to-node messages share (object metadata, checksums, object
 * attributes, stamps), as zod schemas: each is both the TypeScript type of the field
 * (`z.infer`) and its check at the gRPC boundary. Objects are strict: a field the schema does not
 * name is refused, so a field added to a message is checked once it is added here. */
import { z } from 'zod'
import { KEY_BYTES_MAX } from '../limits.js'
import { validateAttributes } from '../object-attributes.js'

/** A message as it crosses: its own fields, and the sender's request id and deadline, which the
 * receiver replaces with the call's own (a message may come without them). */
export function message<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject({
    ...shape,
    requestId: z.string().exactOptional(),
    deadlineMs: z.number().exactOptional(),
  })
}

/** A message's fields without the request id and deadline its local form carries as `Request`. */
export type Fields<S extends z.ZodType> = Omit<z.infer<S>, 'requestId' | 'deadlineMs'>

/** A whole number from 0 up (a count, a size, an offset). */
export const count = z.int().min(0)
/** A byte, as partitions and leaves of the hash trees are numbered. */
export const byte = z.int().min(0).max(255)
/** A bucket's name: never empty, never a NUL (the store's keys separate names with it). */
export const bucketName = z.string().regex(/^[^\0]+$/, 'a malformed bucket name')
/** An object key: 1 to KEY_BYTES_MAX bytes, which are at most as many characters. */
export const objectKey = z.string().min(1).max(KEY_BYTES_MAX)
/** A hybrid-clock stamp as protocol/hlc.ts writes it. */
export const stamp = z.string().regex(/^[0-9a-f]{24}$/, 'a malformed stamp')
/** Cluster mode: the bucket's versioning as the coordinator of a stamped change read it on its
 * own node (null: never configured), decided once for every replica: each writes the change's
 * version id by it, not by its own copy of the catalog, which may lag or lead. */
export const decidedVersioning = z.enum(['Enabled', 'Suspended']).nullable()
/** A blob's content address: the SHA-256 of its bytes in hex. */
export const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a malformed sha256')

export const checksumAlgorithm = z.enum(['crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'])
/** Additional checksums (x-amz-checksum-*), base64 as on the wire. */
export const checksums = z.strictObject({
  crc32: z.string().exactOptional(),
  crc32c: z.string().exactOptional(),
  crc64nvme: z.string().exactOptional(),
  sha1: z.string().exactOptional(),
  sha256: z.string().exactOptional(),
})
/** x-amz-checksum-type: a checksum of the object's bytes, or (multipart) of its parts' checksums,
 * written `<base64>-<parts>`. */
export const checksumType = z.enum(['FULL_OBJECT', 'COMPOSITE'])

/** Content-* and caching headers S3 stores with an object and returns on GET/HEAD. */
export const httpMeta = z.strictObject({
  contentType: z.string(),
  contentEncoding: z.string().exactOptional(),
  contentDisposition: z.string().exactOptional(),
  contentLanguage: z.string().exactOptional(),
  cacheControl: z.string().exactOptional(),
  expires: z.string().exactOptional(),
})

/** x-amz-meta-* with the prefix removed, names lower-cased. */
export const userMeta = z.record(z.string(), z.string())

/** What a PUT's bytes must hash to; every field that is present is verified before commit. */
export const expectations = z.strictObject({
  md5Base64: z.string().exactOptional(),
  sha256Hex: z.string().exactOptional(),
  checksums: checksums.exactOptional(),
  /** A checksum to compute and keep with nothing to check it against (a part copied into an
   * upload created with that algorithm). */
  compute: checksumAlgorithm.exactOptional(),
  /** Exact byte count announced by the client (decoded length for aws-chunked). */
  size: count.exactOptional(),
})

/** A body's digests as protocol/body-hasher.ts computes them: MD5 (hex; absent where the sender
 * of a stream sends it with the end instead), SHA-256 (hex), CRC32, and the additional checksums
 * (base64) it was asked for other than CRC32 and SHA-256. */
export const bodyDigests = z.strictObject({
  size: count,
  md5Hex: z.string().exactOptional(),
  sha256Hex: z.string(),
  crc32: z.int(),
  checksums,
})

/** GET/HEAD/Copy preconditions (If-* headers), dates in ms since the epoch; a write's too. */
export const conditions = z.strictObject({
  ifMatch: z.string().exactOptional(),
  ifNoneMatch: z.string().exactOptional(),
  ifModifiedSinceMs: z.number().exactOptional(),
  ifUnmodifiedSinceMs: z.number().exactOptional(),
})

/** A multipart upload's checksum: x-amz-checksum-algorithm and -type of CreateMultipartUpload. */
export const uploadChecksum = z.strictObject({ algorithm: checksumAlgorithm, type: checksumType })

export const tag = z.strictObject({ key: z.string(), value: z.string() })

/** An object version's object lock retention: `OFF` is none (protocol/s3-rules/object-lock.ts). */
export const retention = z.strictObject({
  mode: z.enum(['GOVERNANCE', 'COMPLIANCE', 'OFF']),
  untilMs: z.number(),
})

/** An object version's canned ACL (`private` is none). */
export const objectAcl = z.enum(['private', 'public-read', 'authenticated-read'])

/** An object version's attributes, each checked by its own rules (protocol/object-attributes.ts,
 * which names them and what each means). */
export const objectAttributes = z
  .strictObject({
    tags: z.array(tag).exactOptional(),
    acl: objectAcl.exactOptional(),
    retention: retention.exactOptional(),
    legalHold: z.boolean().exactOptional(),
  })
  .superRefine((attributes, context) => {
    const valid = validateAttributes(attributes)
    if (!valid.ok) context.addIssue({ code: 'custom', message: valid.detail })
  })

/** What GET and HEAD report of a version's attributes (ObjectInfo.attributes). */
export const attributeSummary = z.strictObject({
  /** How many tags it has. */
  tags: count.exactOptional(),
  /** Its canned ACL, when not private. */
  acl: objectAcl.exactOptional(),
  /** Its object lock retention, when it has one (until may be past). */
  retention: retention.exactOptional(),
  /** Whether a legal hold is on it (absent when not). */
  legalHold: z.literal(true).exactOptional(),
})
