/** @module Records of the store's metadata and their encoding: JSON (each record is at most a few
 * KiB: user metadata is capped at 2 KiB by the HTTP layer), except inline blob bytes and system
 * records, which are stored raw. Bytes read back from disk come from outside the process, so
 * decoding validates their shape and fails with `corrupt` rather than asserting. */
import { ServiceError } from '../../protocol/errors.js'
import type { UploadChecksum } from '../../protocol/multipart-checksum.js'
import type {
  BucketInfo,
  Checksums,
  ChecksumType,
  HttpMeta,
  ObjectInfo,
} from '../../protocol/objects.js'
import type { PartInfo } from '../../protocol/messages.js'
import {
  isAttributes,
  isAttributeStamps,
  summaryOf,
  type AttributeStamps,
  type ObjectAttributes,
} from '../../protocol/object-attributes.js'
import { shownVersionId } from '../../protocol/s3-rules/versioning.js'

export type VersioningStatus = 'Enabled' | 'Suspended'

export interface BucketRecord {
  createdMs: number
  /** The user id of the principal that created it; absent on buckets made before owners were
   * recorded, which are nobody's: every user sees them listed, none owns them. */
  owner?: string
  /** Absent until versioning is first configured; it can be suspended, never removed. */
  versioning?: VersioningStatus
  /** Cluster mode: the pool that holds the bucket's objects, chosen at creation for good. */
  pool?: string
  /** Objects in the bucket and the sum of their sizes, kept by every mutating batch. */
  objects: number
  bytes: number
}

/** One blob of an object's bytes, in order. */
export interface BlobRef {
  sha256: string
  size: number
}

/** A part of a multipart object: its blob, and its checksum when the upload named an algorithm. */
export interface PartRef extends BlobRef {
  checksums?: Checksums
}

export interface ObjectRecord {
  size: number
  etag: string
  lastModifiedMs: number
  http: HttpMeta
  userMeta: Record<string, string>
  checksums: Checksums
  /** How a multipart object's checksum was made; absent for every other object. */
  checksumType?: ChecksumType
  /** Content address of the blob holding the bytes; exactly one of `sha256` and `parts` is set. */
  sha256?: string
  /** A multipart object: the blobs of its parts, in order (each part's bytes are one blob, and
   * completing an upload moves the parts' references here without copying a byte). */
  parts?: PartRef[]
  /** Versioning (see versions.ts): the version's id (`null`, or its token) and its token, set on
   * objects written while the bucket had versioning configured; absent, the object is the `null`
   * version. */
  versionId?: string
  versionToken?: string
  /** A delete marker: a version without bytes (size 0, no blob), only ever under V\0. */
  deleteMarker?: true
  /** The version's attributes (protocol/object-attributes.ts, engine/attributes.ts); absent when
   * it has none. */
  attributes?: ObjectAttributes
  /** Cluster mode: for each attribute changed after the version was written, the stamp of its
   * last change (absent: it is the write's own): replicas keep the newest of each attribute
   * whatever order the changes came in. */
  attributeStamps?: AttributeStamps
  /** Cluster mode: the stamp of the change that wrote it (absent: written unstamped). */
  stamp?: string
}

/** A multipart upload in progress: what the object it makes will carry. */
export interface UploadRecord {
  initiatedMs: number
  http: HttpMeta
  userMeta: Record<string, string>
  attributes?: ObjectAttributes
  /** x-amz-checksum-algorithm and -type of CreateMultipartUpload. */
  checksum?: UploadChecksum
}

/** A completed multipart upload, kept so that a retried complete (its response was lost) answers
 * the same result; the expiry sweep removes it SVC_MULTIPART_EXPIRY_HOURS after the completion. */
export interface CompletedUploadRecord {
  bucket: string
  key: string
  /** SHA-256 of the parts list the complete took (completedPartsDigest). */
  partsDigest: string
  etag: string
  lastModifiedMs: number
  versionId?: string
  /** The object's checksum made at complete, when the upload named an algorithm. */
  checksums?: Checksums
  checksumType?: ChecksumType
}

/** An uploaded part: it holds one reference to its blob until the upload completes or ends. */
export interface PartRecord {
  size: number
  etag: string
  lastModifiedMs: number
  checksums: Checksums
  sha256: string
  /** Cluster mode: the stamp of the upload of this part. */
  stamp?: string
}

export interface BlobRecord {
  size: number
  crc32: number
  /** Object records that point at this blob; the blob is garbage when it reaches 0. */
  refs: number
  /** File id of a large blob; absent for an inline blob, whose bytes are under D\0<sha256>. */
  file?: string
  /** The scrubber found this copy corrupt (read twice) and no good copy replaced it yet: reads of
   * its bytes answer `corrupt` at once rather than stream what they would cut short. */
  corrupt?: true
}

/** Store-wide counters, updated in every mutating batch so that stats never need a scan. */
export interface Counters {
  buckets: number
  objects: number
  /** Sum of object sizes: logical bytes, every reference counted. */
  bytes: number
  /** Distinct blobs stored, and references to them (objects): their ratio is the dedup. */
  blobs: number
  refs: number
}

export const EMPTY_COUNTERS: Readonly<Counters> = {
  buckets: 0,
  objects: 0,
  bytes: 0,
  blobs: 0,
  refs: 0,
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

export function encodeRecord(record: object): Uint8Array {
  return encoder.encode(JSON.stringify(record))
}

/** A record's bytes, or its text as a scan of JSON records gives it (KvStore.scanText, whose
 * decoding replaces bytes that are not UTF-8 instead of failing: a record damaged that way still
 * fails here when it is read by key). */
type Encoded = Uint8Array | string

function decodeJson(encoded: Encoded, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(typeof encoded === 'string' ? encoded : decoder.decode(encoded))
  } catch {
    throw new ServiceError('corrupt', `${what} record is not JSON`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ServiceError('corrupt', `${what} record is not an object`)
  }
  return value as Record<string, unknown>
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** Counters one store shard keeps may be negative (keys.ts: C\0<shard>); only their sums are
 * counts. */
function requireSums(
  record: Record<string, unknown>,
  what: string,
  names: readonly string[],
): void {
  for (const name of names) {
    const value = record[name]
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      throw new ServiceError('corrupt', `${what} record: bad ${name}`)
    }
  }
}

function requireFields(
  record: Record<string, unknown>,
  what: string,
  counts: readonly string[],
  strings: readonly string[] = [],
): void {
  for (const name of counts) {
    if (!isCount(record[name])) throw new ServiceError('corrupt', `${what} record: bad ${name}`)
  }
  for (const name of strings) {
    if (typeof record[name] !== 'string') {
      throw new ServiceError('corrupt', `${what} record: bad ${name}`)
    }
  }
}

export function decodeBucket(encoded: Encoded): BucketRecord {
  const record = decodeJson(encoded, 'bucket')
  requireFields(record, 'bucket', ['createdMs'])
  requireSums(record, 'bucket', ['objects', 'bytes'])
  if (record['owner'] !== undefined) requireFields(record, 'bucket', [], ['owner'])
  return record as unknown as BucketRecord
}

function requireObjects(record: Record<string, unknown>, what: string, names: string[]): void {
  for (const name of names) {
    if (typeof record[name] !== 'object' || record[name] === null) {
      throw new ServiceError('corrupt', `${what} record: bad ${name}`)
    }
  }
}

export function decodeObject(encoded: Encoded): ObjectRecord {
  const record = decodeJson(encoded, 'object')
  requireFields(record, 'object', ['size', 'lastModifiedMs'], ['etag'])
  requireObjects(record, 'object', ['http', 'userMeta', 'checksums'])
  const parts = record['parts']
  readAttributes(record, 'object')
  if (record['deleteMarker'] === true) {
    if (record['sha256'] !== undefined || parts !== undefined || record['size'] !== 0) {
      throw new ServiceError('corrupt', 'object record: a delete marker with bytes')
    }
  } else if (parts === undefined) {
    requireFields(record, 'object', [], ['sha256'])
  } else {
    const valid =
      Array.isArray(parts) &&
      parts.length > 0 &&
      record['sha256'] === undefined &&
      parts.every((part: { sha256?: unknown; size?: unknown } | null) => {
        return typeof part?.sha256 === 'string' && isCount(part.size)
      })
    if (!valid) throw new ServiceError('corrupt', 'object record: bad parts')
  }
  return record as unknown as ObjectRecord
}

/** Checks a record's attributes and their stamps, and reads a record written before attributes
 * were one family, whose tags were `tags` and their stamp `tagsStamp`, as its `attributes` and
 * `attributeStamps` (in place), so that a data directory of that form reads as before. */
function readAttributes(record: Record<string, unknown>, what: string): void {
  const { tags, tagsStamp } = record
  if (tags !== undefined) {
    if (!Array.isArray(tags)) throw new ServiceError('corrupt', `${what} record: bad tags`)
    record['attributes'] = { ...(record['attributes'] as object | undefined), tags }
    delete record['tags']
  }
  if (tagsStamp !== undefined) {
    record['attributeStamps'] = {
      ...(record['attributeStamps'] as object | undefined),
      tags: tagsStamp,
    }
    delete record['tagsStamp']
  }
  const { attributes, attributeStamps } = record
  if (attributes !== undefined && !isAttributes(attributes)) {
    throw new ServiceError('corrupt', `${what} record: bad attributes`)
  }
  if (attributeStamps !== undefined && !isAttributeStamps(attributeStamps)) {
    throw new ServiceError('corrupt', `${what} record: bad attribute stamps`)
  }
}

/** The blobs that hold an object's bytes, in order. */
export function blobsOf(record: ObjectRecord): BlobRef[] {
  if (record.deleteMarker === true) return []
  if (record.parts !== undefined) return record.parts
  if (record.sha256 === undefined) throw new ServiceError('corrupt', 'object record: no blob')
  return [{ sha256: record.sha256, size: record.size }]
}

export function decodeUpload(encoded: Encoded): UploadRecord {
  const record = decodeJson(encoded, 'upload')
  requireFields(record, 'upload', ['initiatedMs'])
  requireObjects(record, 'upload', ['http', 'userMeta'])
  readAttributes(record, 'upload')
  return record as unknown as UploadRecord
}

export function decodeCompletedUpload(encoded: Encoded): CompletedUploadRecord {
  const record = decodeJson(encoded, 'completed upload')
  requireFields(
    record,
    'completed upload',
    ['lastModifiedMs'],
    ['bucket', 'key', 'partsDigest', 'etag'],
  )
  return record as unknown as CompletedUploadRecord
}

export function decodePart(encoded: Encoded): PartRecord {
  const record = decodeJson(encoded, 'part')
  requireFields(record, 'part', ['size', 'lastModifiedMs'], ['etag', 'sha256'])
  requireObjects(record, 'part', ['checksums'])
  return record as unknown as PartRecord
}

export function decodeBlob(encoded: Encoded): BlobRecord {
  const record = decodeJson(encoded, 'blob')
  requireFields(record, 'blob', ['size', 'crc32', 'refs'])
  if (record['file'] !== undefined && typeof record['file'] !== 'string') {
    throw new ServiceError('corrupt', 'blob record: bad file')
  }
  if (record['corrupt'] !== undefined && record['corrupt'] !== true) {
    throw new ServiceError('corrupt', 'blob record: bad corrupt mark')
  }
  return record as unknown as BlobRecord
}

/** A bucket's counters kept by a store shard other than 0 (keys.ts: K\0). */
export interface BucketCounters {
  objects: number
  bytes: number
}

export function decodeBucketCounters(encoded: Encoded): BucketCounters {
  const record = decodeJson(encoded, 'bucket counters')
  requireSums(record, 'bucket counters', ['objects', 'bytes'])
  return { objects: record['objects'] as number, bytes: record['bytes'] as number }
}

export function decodeCounters(encoded: Encoded): Counters {
  const record = decodeJson(encoded, 'counters')
  requireSums(record, 'counters', ['buckets', 'objects', 'bytes', 'blobs', 'refs'])
  return record as unknown as Counters
}

export function decodeText(bytes: Uint8Array, what: string): string {
  try {
    return decoder.decode(bytes)
  } catch {
    throw new ServiceError('corrupt', `${what} record is not UTF-8`)
  }
}

/** `versioned`: the bucket has versioning configured, so the answer names the version. */
export function objectInfo(key: string, record: ObjectRecord, versioned = false): ObjectInfo {
  const info: ObjectInfo = {
    key,
    size: record.size,
    etag: record.etag,
    lastModifiedMs: record.lastModifiedMs,
    http: record.http,
    userMeta: record.userMeta,
    checksums: record.checksums,
  }
  if (record.parts !== undefined) info.partsCount = record.parts.length
  if (record.checksumType !== undefined) info.checksumType = record.checksumType
  const attributes = summaryOf(record.attributes)
  if (attributes !== undefined) info.attributes = attributes
  const versionId = shownVersionId(versioned, record.versionId)
  if (versionId !== undefined) info.versionId = versionId
  // Read repair writes a stale replica the winner's object again under this same stamp.
  if (record.stamp !== undefined) info.stamp = record.stamp
  return info
}

/** A part as the answers of upload.part and upload.list-parts show it. */
export function partInfo(partNumber: number, record: PartRecord): PartInfo {
  const { size, etag, lastModifiedMs, checksums, stamp } = record
  const info: PartInfo = { partNumber, size, etag, lastModifiedMs, checksums }
  if (stamp !== undefined) info.stamp = stamp
  return info
}

export function bucketInfo(name: string, record: BucketRecord): BucketInfo {
  const info: BucketInfo = { name, createdMs: record.createdMs }
  if (record.pool !== undefined) info.pool = record.pool
  return info
}
