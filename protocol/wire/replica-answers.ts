/** @module What a replica answers each kind a Replica.* call carries (protocol/messages.ts
 * ObjectReply, protocol/anti-entropy.ts, protocol/scrubbing.ts say what each means). A body never
 * comes in an answer: a read's bytes follow it on the call's stream. */
import { z } from 'zod'
import type { ErrorCode } from '../errors.js'
import { keyRecords } from './anti-entropy.js'
import {
  attributeSummary,
  bucketName,
  checksums,
  checksumType,
  count,
  httpMeta,
  objectAttributes,
  objectKey,
  stamp,
  uploadChecksum,
  userMeta,
} from './fields.js'

const text = z.string()
const texts = z.array(text)
/** A stamp, or null where a replica holds none. */
const stampOrNone = stamp.nullable()

export const objectInfo = z.strictObject({
  key: objectKey,
  size: count,
  /** Quoted hex MD5, as S3 returns it in the ETag header. */
  etag: text,
  lastModifiedMs: z.number(),
  http: httpMeta,
  /** x-amz-meta-* with the prefix removed, names lower-cased. */
  userMeta,
  checksums,
  /** Set for a multipart object's checksum; absent, a checksum is of the whole (FULL_OBJECT). */
  checksumType: checksumType.exactOptional(),
  /** Parts of an object made by CompleteMultipartUpload (x-amz-mp-parts-count); else absent. */
  partsCount: count.exactOptional(),
  /** The version's id (`null` for the null version) when the bucket has versioning configured. */
  versionId: text.exactOptional(),
  /** What GET and HEAD report of the version's attributes; absent when it has none. */
  attributes: attributeSummary.exactOptional(),
  /** Cluster mode: the stamp of the write that made this version. */
  stamp: stamp.exactOptional(),
})

export const objectSummary = z.strictObject({
  key: objectKey,
  size: count,
  etag: text,
  lastModifiedMs: z.number(),
  /** Set only when the listing asked for it (ListRequest.withContentType). */
  contentType: text.exactOptional(),
})

/** A listing's objects, column by column: the same index in each is one object. */
export const objectColumns = z.strictObject({
  keys: z.array(objectKey),
  sizes: z.array(count),
  etags: texts,
  lastModifiedMs: z.array(z.number()),
  /** Present only when the listing asked for it (ListRequest.withContentType). */
  contentTypes: texts.exactOptional(),
  /** Cluster mode, when the listing asked for them (ListRequest.withStamps): each object's write
   * stamp, so that the coordinator can merge the pages of several replicas. */
  stamps: z.array(stamp).exactOptional(),
})

export const listPage = z.strictObject({
  objects: objectColumns,
  commonPrefixes: texts,
  truncated: z.boolean(),
  /** The last key or common prefix in this page: where the next page starts (exclusive). */
  lastReturned: text,
})

export const putResult = z.strictObject({
  etag: text,
  lastModifiedMs: z.number(),
  checksums,
  /** Set for a multipart object's checksum (FULL_OBJECT, or COMPOSITE `<base64>-N`). */
  checksumType: checksumType.exactOptional(),
  /** The new version's id when the bucket has versioning configured (`null` when suspended). */
  versionId: text.exactOptional(),
  /** CopyObject from a bucket with versioning: the version that was copied. */
  sourceVersionId: text.exactOptional(),
  /** Cluster mode: the replica already held a newer change of the key, so this write did not
   * become current (it was kept as an older version, or dropped where no versions are kept). */
  stale: z.literal(true).exactOptional(),
})

/** A GET's answer but for the bytes: those of a small object come with a local answer only
 * (protocol/messages.ts GetResult). */
export const getResult = z.strictObject({
  info: objectInfo,
  /** The inclusive byte range of the part the request named (partNumber), with the part's own
   * checksum when it has one. */
  part: z
    .strictObject({ start: count, end: count, checksums: checksums.exactOptional() })
    .exactOptional(),
  /** A multipart object's parts, when the request asked (withParts). */
  parts: z.array(z.strictObject({ size: count, checksums })).exactOptional(),
  /** Cluster mode (`stamped` requests): the stamp of the newest change of the key this replica
   * holds, deletions included; null when it holds none. */
  keyStamp: stampOrNone.exactOptional(),
  /** Cluster mode (`stamped` requests): the stamp of the version's newest attribute change, when
   * one came after its write; an attribute change leaves the key's stamp as it is. */
  changeStamp: stamp.exactOptional(),
})

/** A delete marker where an object was asked for. */
export const markerResult = z.strictObject({
  marker: z.strictObject({
    versionId: text,
    lastModifiedMs: z.number(),
    /** The request named this version by id (S3 answers 405), or wanted the current one (404). */
    byId: z.boolean(),
  }),
  /** As GetResult.keyStamp. */
  keyStamp: stampOrNone.exactOptional(),
})

/** A `stamped` GET of a key or version this replica does not hold (never held, or deleted). */
export const absentResult = z.strictObject({ absent: z.literal(true), keyStamp: stampOrNone })

/** What a replica holds of a key, for a merged listing: the stamp of the key's newest change here
 * (null: none), and the current object with its write stamp (null: none, or deleted). */
export const keyHead = z.strictObject({
  stamp: stampOrNone,
  object: objectSummary.extend({ stamp, contentType: text }).nullable(),
})

/** A part as UploadPart and UploadPartCopy answer it, and as ListParts lists it. */
export const partInfo = z.strictObject({
  partNumber: count,
  size: count,
  /** Quoted hex MD5 of the part's bytes. */
  etag: text,
  lastModifiedMs: z.number(),
  checksums,
  /** Cluster mode: the stamp of the upload of this part (a part uploaded again replaces it). */
  stamp: stamp.exactOptional(),
})

export const uploadCreated = z.strictObject({ uploadId: text })

export const uploadSummary = z.strictObject({
  key: objectKey,
  uploadId: text,
  initiatedMs: z.number(),
})

export const uploadListing = z.strictObject({
  uploads: z.array(uploadSummary),
  commonPrefixes: texts,
  truncated: z.boolean(),
  /** Where the next page starts: after this key and upload id (both null when not truncated). */
  nextKeyMarker: text.nullable(),
  nextUploadIdMarker: text.nullable(),
})

export const partListing = z.strictObject({
  parts: z.array(partInfo),
  truncated: z.boolean(),
  /** The last part number of this page, or the marker when the page is empty. */
  nextPartNumberMarker: count,
  initiatedMs: z.number(),
  http: httpMeta,
  checksum: uploadChecksum.exactOptional(),
})

/** An object version's attributes, and which version it was when the bucket has versioning. */
export const attributesResult = z.strictObject({
  attributes: objectAttributes,
  versionId: text.exactOptional(),
})

const deleteResultShape = {
  /** The version it removed (by id). */
  versionId: text.exactOptional(),
  /** Whether it added a delete marker. */
  deleteMarker: z.boolean(),
  /** Cluster mode: as PutResult.stale (the marker was kept as an older version, or dropped). */
  stale: z.literal(true).exactOptional(),
}
/** What a delete did: the version it removed (by id), or the delete marker it added. */
export const deleteResult = z.strictObject(deleteResultShape)

export const deletedEntry = z.strictObject({
  ...deleteResultShape,
  key: objectKey,
  /** The version id the request named, if any. */
  requestedVersionId: text.exactOptional(),
})

export const deleteManyResult = z.strictObject({
  deleted: z.array(deletedEntry),
  /** Keys not deleted, each with its ErrorCode: the S3 surface maps it to S3's Code and Message. */
  errors: z.array(
    z.strictObject({
      key: objectKey,
      code: z.custom<ErrorCode>((code) => typeof code === 'string' && code.length > 0),
      detail: text,
    }),
  ),
})

export const versionEntry = z.strictObject({
  key: objectKey,
  versionId: text,
  isLatest: z.boolean(),
  deleteMarker: z.boolean(),
  size: count,
  etag: text,
  lastModifiedMs: z.number(),
})

export const versionListing = z.strictObject({
  versions: z.array(versionEntry),
  commonPrefixes: texts,
  truncated: z.boolean(),
  nextKeyMarker: text.nullable(),
  nextVersionIdMarker: text.nullable(),
})

/** An upload as one replica knows it (`upload.states`). */
export const uploadState = z.enum(['open', 'ended', 'unknown'])

/** Per-bucket counters, kept by the same batches that change the bucket's objects. */
export const bucketStats = z.strictObject({
  name: bucketName,
  createdMs: z.number(),
  objectsCount: count,
  storageUsedBytes: count,
})

export const storeStats = z.strictObject({
  bucketsCount: count,
  objectsCount: count,
  storageUsedBytes: count,
  uniqueBlobs: count,
  totalReferences: count,
})

/** The answer to `blob.read` but for inline bytes, which a peer gets on the stream. */
export const blobHead = z.strictObject({
  size: count,
  crc32: count,
  corrupt: z.literal(true).exactOptional(),
  /** An unchecked read of a copy that cannot be read whole: why; no bytes follow. */
  unreadable: text.exactOptional(),
  /** How busy the store is (BlobPage.load). */
  load: z.number(),
})

const digest = z.string().regex(/^[0-9a-f]{64}$/, 'a malformed digest')

export const keyDigest = z.strictObject({ bucket: bucketName, key: objectKey, digest })

/** A version of a key as a replica holds it: its current object (`current`), one of its other
 * versions, or a delete marker. In a bucket without versioning the key's one object (token
 * null). */
export const aeVersionEntry = z.strictObject({
  /** The version token (keys.ts), null for an object written without versioning. */
  token: text.nullable(),
  /** The S3 version id (`null` for the null version); absent where no versioning was configured. */
  versionId: text.exactOptional(),
  /** The change that wrote it (absent: written unstamped). */
  stamp: stamp.exactOptional(),
  etag: text,
  size: count,
  marker: z.boolean(),
  /** Parts of a multipart object, 0 for an object of one blob. */
  parts: count,
  /** What it reports of its attributes, as ObjectInfo does; absent when it has none. */
  attributes: attributeSummary.exactOptional(),
  current: z.boolean(),
})

/** Everything a replica holds of one key that replication must agree on. */
export const keyManifest = z.strictObject({
  /** The newest change of the key this replica applied or refused as stale (its tombstone once
   * the object is gone); null when it holds none. */
  stamp: stampOrNone,
  versions: z.array(aeVersionEntry),
  /** Versions deleted by id: their tokens and the deletes' stamps. */
  deleted: z.array(z.strictObject({ token: text, stamp })),
  /** The key's digest as the store keeps it (null: no items), for a caller to see what it saw. */
  digest: digest.nullable(),
})

/** What a `records.merge` did: whether the replica's records changed, and the bytes of the blobs
 * it fetched (what anti-entropy's throttle counts). */
export const keyMerged = z.strictObject({ changed: z.boolean(), bytes: count })

/** Each kind a Replica.* call carries, and the answer it gets. */
export const REPLICA_ANSWERS = {
  'object.put': putResult,
  'upload.part': partInfo,
  'object.get': z.union([getResult, markerResult, absentResult]),
  'blob.read': blobHead,
  'object.delete': deleteResult,
  'object.delete-many': deleteManyResult,
  'object.stamps': z.array(stampOrNone),
  'object.heads': z.array(keyHead),
  'object.versions-deleted': z.array(z.boolean()),
  'object.list': listPage,
  'object.list-versions': versionListing,
  'object.attributes.put': attributesResult,
  'object.attributes.get': attributesResult,
  'upload.create': uploadCreated,
  'upload.complete': putResult,
  'upload.abort': z.null(),
  'upload.states': z.array(uploadState),
  'key.claim': z.strictObject({ granted: z.boolean() }),
  'key.release': z.null(),
  'upload.list-parts': partListing,
  'upload.list': uploadListing,
  'bucket.delete': z.null(),
  'bucket.stats': z.array(bucketStats),
  'system.stats': storeStats,
  'ae.roots': z.array(digest.nullable()),
  'ae.leaves': z.array(z.strictObject({ leaf: count, digest })),
  'ae.keys': z.array(keyDigest),
  'key.manifest': keyManifest,
  'records.get': keyRecords,
  'records.merge': keyMerged,
} as const

export type ReplicaKind = keyof typeof REPLICA_ANSWERS
