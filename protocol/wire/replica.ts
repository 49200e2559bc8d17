/** @module The Replica.* calls (cluster mode): a coordinator elsewhere sends an object request to
 * this node's replica, as the store's own message without its body or stream. Replica.Op carries
 * one without bytes (and anti-entropy's questions, the store's figures), Replica.Write an
 * object.put or upload.part whose bytes follow on the call's stream, Replica.Read an object.get (or
 * a scrubber's blob.read) whose bytes go back on it, from the request's `range`. Never a system.*
 * or catalog request, and only the kinds each method allows. The object messages' local types
 * (protocol/messages.ts) are these schemas' with their body or stream added. */
import { z } from 'zod'
import { DELETE_OBJECTS_KEYS_MAX, PART_NUMBER_MAX } from '../limits.js'
import { antiEntropyQuestion } from './anti-entropy.js'
import {
  bodyDigests,
  bucketName,
  checksums,
  conditions,
  count,
  decidedVersioning,
  expectations,
  httpMeta,
  message,
  objectAttributes,
  objectKey,
  sha256Hex,
  stamp,
  uploadChecksum,
  userMeta,
} from './fields.js'

const partNumber = z.int().min(1).max(PART_NUMBER_MAX)

export const objectPut = message({
  kind: z.literal('object.put'),
  bucket: bucketName,
  key: objectKey,
  http: httpMeta,
  userMeta,
  /** The version's attributes (protocol/object-attributes.ts), validated by the ingress. */
  attributes: objectAttributes.exactOptional(),
  expect: expectations,
  /** The sender hashes the streamed body with MD5 and sends the digest with the stream's end,
   * so the store need not: MD5 is the slowest of its hashes, and it then runs on another
   * thread while the store computes the rest. */
  streamMd5: z.boolean().exactOptional(),
  /** A single node's ingress writes the streamed body itself, to a file the store lends it on the
   * stream, and sends the digests with the end (ByteSource.lendWrite). */
  lentWrite: z.literal(true).exactOptional(),
  /** A single node's ingress hashed the inline body itself (protocol/body-hasher.ts). */
  digests: bodyDigests.exactOptional(),
  /** If-Match, If-None-Match, If-Unmodified-Since: checked in the commit that writes the
   * object (protocol/s3-rules/conditions.ts). */
  conditions: conditions.exactOptional(),
  /** Cluster mode: the coordinator's stamp of this change (see protocol/messages.ts). */
  stamp: stamp.exactOptional(),
  versioning: decidedVersioning.exactOptional(),
})

export const objectGet = message({
  kind: z.literal('object.get'),
  bucket: bucketName,
  key: objectKey,
  /** GET/HEAD ?partNumber=N: the reply says which bytes part N holds. */
  partNumber: partNumber.exactOptional(),
  /** A version by id (`null` included); absent, the current version. */
  versionId: z.string().exactOptional(),
  /** Answer with each part's size and checksums (GetObjectAttributes' ObjectParts). */
  withParts: z.literal(true).exactOptional(),
  /** Cluster mode: every answer carries the key's stamp, and a key or version this replica
   * does not hold answers AbsentResult rather than no_such_key or no_such_version. */
  stamped: z.literal(true).exactOptional(),
})

export const objectDelete = message({
  kind: z.literal('object.delete'),
  bucket: bucketName,
  key: objectKey,
  versionId: z.string().exactOptional(),
  /** The request bypasses governance retention, and may (protocol/s3-rules/object-lock.ts). */
  bypassGovernance: z.literal(true).exactOptional(),
  stamp: stamp.exactOptional(),
  versioning: decidedVersioning.exactOptional(),
})

export const objectDeleteMany = message({
  kind: z.literal('object.delete-many'),
  bucket: bucketName,
  objects: z
    .array(z.strictObject({ key: objectKey, versionId: z.string().exactOptional() }))
    .max(DELETE_OBJECTS_KEYS_MAX),
  bypassGovernance: z.literal(true).exactOptional(),
  /** Cluster mode: one stamp for every key of the batch (each key is changed once). */
  stamp: stamp.exactOptional(),
  versioning: decidedVersioning.exactOptional(),
})

/** Cluster mode: the stamp of the newest change of each key this replica holds (null: none),
 * deletions included, so that a listing can tell a key deleted here from one never received. */
export const objectStamps = message({
  kind: z.literal('object.stamps'),
  bucket: bucketName,
  keys: z.array(objectKey),
})

/** Cluster mode: a merged listing's point check of keys this replica did not list: each key's
 * newest change here and its current object, if any (KeyHead). */
export const objectHeads = message({
  kind: z.literal('object.heads'),
  bucket: bucketName,
  keys: z.array(objectKey),
})

/** Cluster mode: whether each version was deleted by id here (its tombstone is kept). */
export const objectVersionsDeleted = message({
  kind: z.literal('object.versions-deleted'),
  bucket: bucketName,
  versions: z.array(z.strictObject({ key: objectKey, versionId: z.string() })),
})

export const objectList = message({
  kind: z.literal('object.list'),
  bucket: bucketName,
  prefix: z.string(),
  delimiter: z.string(),
  /** List keys strictly after this one (start-after, marker or a decoded continuation token). */
  after: z.string(),
  maxKeys: count,
  /** Each summary carries the object's Content-Type (the admin listing; S3's does not ask). */
  withContentType: z.literal(true).exactOptional(),
  /** Cluster mode: the page carries each object's write stamp (ObjectColumns.stamps). */
  withStamps: z.literal(true).exactOptional(),
})

export const objectListVersions = message({
  kind: z.literal('object.list-versions'),
  bucket: bucketName,
  prefix: z.string(),
  delimiter: z.string(),
  keyMarker: z.string(),
  versionIdMarker: z.string(),
  maxKeys: count,
})

/** Sets attributes of an object version (protocol/object-attributes.ts): each one named is
 * replaced whole (a value that is none removes it), the others and the bytes untouched. */
export const objectAttributesPut = message({
  kind: z.literal('object.attributes.put'),
  bucket: bucketName,
  key: objectKey,
  versionId: z.string().exactOptional(),
  attributes: objectAttributes,
  stamp: stamp.exactOptional(),
  /** Cluster mode: the stamp of the write that made the version the change is of; a replica
   * whose version there is another write's leaves it. */
  versionStamp: stamp.exactOptional(),
})

export const objectAttributesGet = message({
  kind: z.literal('object.attributes.get'),
  bucket: bucketName,
  key: objectKey,
  versionId: z.string().exactOptional(),
})

export const uploadCreate = message({
  kind: z.literal('upload.create'),
  bucket: bucketName,
  key: objectKey,
  http: httpMeta,
  userMeta,
  /** x-amz-checksum-algorithm and -type: every part must carry that checksum. */
  checksum: uploadChecksum.exactOptional(),
  /** The attributes of the object it completes, validated by the ingress. */
  attributes: objectAttributes.exactOptional(),
  /** Cluster mode: the stamp, and the upload id the coordinator chose (equal everywhere): 32 hex
   * digits, as the store makes them. */
  stamp: stamp.exactOptional(),
  uploadId: z
    .string()
    .regex(/^[0-9a-f]{32}$/, 'a malformed upload id')
    .exactOptional(),
})

export const uploadPart = message({
  kind: z.literal('upload.part'),
  bucket: bucketName,
  key: objectKey,
  uploadId: z.string(),
  partNumber,
  expect: expectations,
  /** As in object.put. */
  streamMd5: z.boolean().exactOptional(),
  lentWrite: z.literal(true).exactOptional(),
  digests: bodyDigests.exactOptional(),
  stamp: stamp.exactOptional(),
})

/** A part of a CompleteMultipartUpload request: its number and the ETag the client kept, and the
 * checksums it names. */
export const completedPart = z.strictObject({
  partNumber: z.int(),
  etag: z.string(),
  checksums: checksums.exactOptional(),
})

export const uploadComplete = message({
  kind: z.literal('upload.complete'),
  bucket: bucketName,
  key: objectKey,
  uploadId: z.string(),
  parts: z.array(completedPart).min(1).max(PART_NUMBER_MAX),
  /** As in object.put. */
  conditions: conditions.exactOptional(),
  /** Cluster mode, with `conditions`: the key's current object as the coordinator's quorum
   * read found it (null: none), which the conditions are checked against instead of the
   * replica's own, in the place a single node checks them. */
  judgedOn: z
    .strictObject({ etag: z.string(), lastModifiedMs: z.number() })
    .nullable()
    .exactOptional(),
  /** The whole object's checksum the client expects (x-amz-checksum-* on Complete). */
  expect: checksums.exactOptional(),
  stamp: stamp.exactOptional(),
  versioning: decidedVersioning.exactOptional(),
})

export const uploadAbort = message({
  kind: z.literal('upload.abort'),
  bucket: bucketName,
  key: objectKey,
  uploadId: z.string(),
  stamp: stamp.exactOptional(),
})

/** Cluster mode: the state of each upload here: in progress, ended (completed or aborted, its
 * record kept), or unknown to this replica. */
export const uploadStates = message({
  kind: z.literal('upload.states'),
  bucket: bucketName,
  uploadIds: z.array(z.string()),
})

/** Cluster mode: a conditional write of a key first holds it on a majority of its replicas
 * (each grants one live claim per key), so that of two racing conditional writes one waits for
 * the other and then sees its object. */
export const keyClaim = message({
  kind: z.literal('key.claim'),
  bucket: bucketName,
  key: objectKey,
  claimant: z.string(),
})

export const keyRelease = message({
  kind: z.literal('key.release'),
  bucket: bucketName,
  key: objectKey,
  claimant: z.string(),
})

export const uploadListParts = message({
  kind: z.literal('upload.list-parts'),
  bucket: bucketName,
  key: objectKey,
  uploadId: z.string(),
  afterPartNumber: count,
  maxParts: count,
})

export const uploadList = message({
  kind: z.literal('upload.list'),
  bucket: bucketName,
  prefix: z.string(),
  delimiter: z.string(),
  keyMarker: z.string(),
  uploadIdMarker: z.string(),
  maxUploads: count,
})

/** A bucket deleted through another node: this replica empties its copy, which only a forced
 * delete does (locally `force` may be absent). */
export const bucketDelete = message({
  kind: z.literal('bucket.delete'),
  bucket: bucketName,
  /** Remove every object and version first (uploads in progress go either way). */
  force: z.literal(true).exactOptional(),
})
const forcedBucketDelete = bucketDelete.refine((msg) => msg.force === true, {
  message: 'a peer deletes a bucket forced only',
  path: ['force'],
})

/** The store's figures, which a coordinator elsewhere adds up for cluster-wide stats. */
export const bucketStats = message({ kind: z.literal('bucket.stats') })
export const systemStats = message({ kind: z.literal('system.stats') })

/** A peer's read of a blob by its content address, for another node's scrubber healing its copy:
 * always checked (never the scrubber's unchecked read of its own store). */
export const blobRead = message({ kind: z.literal('blob.read'), sha256: sha256Hex })

/** The bytes a Replica.Read asks for, inclusive (protocol/cluster.ts BodyRange). */
export const bodyRange = z
  .strictObject({ start: count, end: count })
  .refine((range) => range.start <= range.end, { message: 'a range ends before its start' })

/** The issue of a message whose kind the method does not take (or no method does); any other,
 * such as a message that is no object, keeps its own. */
function kindRefused(method: string): z.core.$ZodErrorMap {
  return (issue) => (issue.code === 'invalid_union' ? `a kind ${method} does not take` : undefined)
}

export const replicaOp = z.strictObject({
  msg: z.discriminatedUnion(
    'kind',
    [
      objectGet,
      objectDelete,
      objectDeleteMany,
      objectStamps,
      objectHeads,
      objectVersionsDeleted,
      objectList,
      objectListVersions,
      objectAttributesPut,
      objectAttributesGet,
      uploadCreate,
      uploadComplete,
      uploadAbort,
      uploadStates,
      keyClaim,
      keyRelease,
      uploadListParts,
      uploadList,
      forcedBucketDelete,
      bucketStats,
      systemStats,
      ...antiEntropyQuestion.options,
    ],
    { error: kindRefused('Replica.Op') },
  ),
})

export const replicaWrite = z.strictObject({
  msg: z.discriminatedUnion('kind', [objectPut, uploadPart], {
    error: kindRefused('Replica.Write'),
  }),
})

export const replicaRead = z.strictObject({
  msg: z.discriminatedUnion('kind', [objectGet, blobRead], { error: kindRefused('Replica.Read') }),
  range: bodyRange.exactOptional(),
})

export type ReplicaOp = z.infer<typeof replicaOp>
export type ReplicaWrite = z.infer<typeof replicaWrite>
export type ReplicaRead = z.infer<typeof replicaRead>
