/** @module Anti-entropy's questions to a peer's store, through Replica.Op (protocol/anti-entropy.ts
 * says what they mean): the roots, leaves and keys of its hash trees, a key's manifest, and the
 * records replicas exchange to converge (records.get, records.merge). Not `ae.purge`: a node purges
 * its own tombstones, when its own anti-entropy found every other replica alike. */
import { z } from 'zod'
import { PARTITIONS } from '../placement.js'
import { AE_KEYS_PAGE_MAX, MANIFEST_ENTRIES_MAX } from './bounds.js'
import { bucketName, byte, message, objectKey, stamp } from './fields.js'

/** Where a leaf's keys are listed from: after this key (null: from the first). */
export const keyCursor = z.strictObject({ bucket: bucketName, key: objectKey })

/** The unit of replication: everything a replica keeps of one key that replicas must agree on,
 * whatever S3 operation wrote it. Each version is its stored record (its stamp, tags and their
 * stamp, a multipart object's parts), by its token (a current object's is the one archiving would
 * give it); versions deleted by id by token, with the delete's stamp; and the key's stamp. Each
 * record is checked by the merge, as one read from disk. */
export const keyRecords = z.strictObject({
  stamp: stamp.nullable(),
  versions: z
    .array(z.strictObject({ token: z.string(), record: z.record(z.string(), z.unknown()) }))
    .max(MANIFEST_ENTRIES_MAX),
  deleted: z.array(z.strictObject({ token: z.string(), stamp })).max(MANIFEST_ENTRIES_MAX),
})

/** The root digest of each partition asked for, in order (null: the store holds nothing of it). */
export const aeRoots = message({
  kind: z.literal('ae.roots'),
  partitions: z.array(byte).max(PARTITIONS),
})

/** The non-empty leaves of a partition and their digests, in leaf order. */
export const aeLeaves = message({ kind: z.literal('ae.leaves'), partition: byte })

/** A leaf's keys and their digests, in key order (bucket, then key), after `after`, at most
 * `limit`. */
export const aeKeys = message({
  kind: z.literal('ae.keys'),
  partition: byte,
  leaf: byte,
  after: keyCursor.nullable(),
  limit: z.int().min(1).max(AE_KEYS_PAGE_MAX),
})

/** What this replica holds of one key. */
export const keyManifest = message({
  kind: z.literal('key.manifest'),
  bucket: bucketName,
  key: objectKey,
})

/** The key's stamped records, which replicas exchange to converge. */
export const recordsGet = message({
  kind: z.literal('records.get'),
  bucket: bucketName,
  key: objectKey,
})

/** Merges another replica's records of a key by the stamp rule, fetching the blobs it lacks by
 * content address from `from`, the replica that sent them. */
export const recordsMerge = message({
  kind: z.literal('records.merge'),
  bucket: bucketName,
  key: objectKey,
  records: keyRecords,
  from: z.strictObject({ id: z.string().min(1), grpcAddr: z.string() }),
})

/** Every question a peer's anti-entropy may ask this store. */
export const antiEntropyQuestion = z.discriminatedUnion('kind', [
  aeRoots,
  aeLeaves,
  aeKeys,
  keyManifest,
  recordsGet,
  recordsMerge,
])
