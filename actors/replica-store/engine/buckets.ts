/** @module Bucket requests: bucket.create, bucket.delete (forced or not), bucket.head, bucket.list,
 * bucket.stats. A bucket record carries its creation time, its owner (the user who created it;
 * none on buckets made before owners were recorded) and its counters (objects, bytes: the sum
 * of its object sizes and of the parts of its uploads in progress, as the store-wide `bytes`
 * counter counts them), kept by the same batches that change its objects, so stats need no object
 * scan; the store-wide bucket count lives in the counters record. A bucket with objects (or
 * versions) is not empty; uploads in progress do not count, as in S3: deleting the bucket aborts
 * them. A forced delete empties the bucket in bounded batches (objects through delete-many's code
 * path, then uploads as aborts), then deletes the record in a batch prepared in the same step as
 * the scan that found the bucket empty. The tombstones of stamped changes (cluster mode) go with
 * the objects, forced or not: they are not content. Name validation is the
 * HTTP layer's: here a name is any non-empty string without NUL (asserted by the key layout). */
import assert from 'node:assert/strict'
import type { Context, KvStore } from '../../../protocol/actor.js'
import { fail, ok, unreachable, type Result } from '../../../protocol/errors.js'
import { DELETE_OBJECTS_KEYS_MAX } from '../../../protocol/limits.js'
import type { BucketStats, ObjectMsg } from '../../../protocol/messages.js'
import type { BucketInfo, BucketListing } from '../../../protocol/objects.js'
import { CALL_TIMEOUT_MS } from '../../../protocol/timing.js'
import {
  bucketSettingKey,
  BUCKET_END,
  BUCKET_PREFIX,
  bucketKey,
  deletedVersionEnd,
  deletedVersionPrefix,
  keyStampEnd,
  keyStampPrefix,
  splitUploadKey,
  splitVersionKey,
  uploadEnd,
  uploadPrefix,
  versionEnd,
  versionPrefix,
} from '../keys.js'
import { firstKeys } from './list.js'
import { bucketTotals, Mutation } from '../mutation.js'
import { bucketInfo, decodeBucket, type BucketRecord, type VersioningStatus } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'
import { findUpload, removeUpload } from './uploads.js'

export type DeleteBucketMsg = Extract<ObjectMsg, { kind: 'bucket.delete' }>
type CreateBucketMsg = Extract<ObjectMsg, { kind: 'bucket.create' }>
type ListBucketsMsg = Extract<ObjectMsg, { kind: 'bucket.list' }>

/** Bucket records read per scan while listing buckets. */
const BUCKET_SCAN_ROWS = 1000
/** Buckets a listing returns at most; S3 allows up to 10,000 per account. */
const BUCKETS_LISTED_MAX = 100_000
/** Objects (or versions) a forced delete removes per batch: as many as one DeleteObjects request
 * may, so a batch is as large as one. */
export const FORCE_DELETE_BATCH_OBJECTS = DELETE_OBJECTS_KEYS_MAX
/** Multipart uploads a forced delete aborts per batch (each may hold up to 10,000 parts). */
const FORCE_DELETE_BATCH_UPLOADS = 8
/** Batches one forced delete runs at most. Each batch waits for a synced commit (about a
 * millisecond at the very least), so within the default deadline a request stops at its deadline
 * first; the bound only matters where the clock does not move. Every batch is durable, so a
 * retried delete goes on where this one stopped. */
export const FORCE_DELETE_BATCHES_MAX = CALL_TIMEOUT_MS

/** Creates a bucket owned by `msg.owner`. A name taken answers whose it is, as S3 does: the
 * caller's own, or another's (a bucket without an owner is nobody's). */
export async function createBucket(
  state: StoreState,
  msg: CreateBucketMsg,
  ctx: Context,
  pool?: string,
): Promise<Result<BucketInfo>> {
  const name = msg.bucket
  const mutation = new Mutation(ctx.kv, state.shard)
  const existing = mutation.bucket(name)
  if (existing !== undefined) {
    if (existing.owner !== undefined && existing.owner === msg.owner) {
      return fail('bucket_owned_by_you', `you own bucket ${name}`)
    }
    return fail('bucket_exists', `bucket ${name} belongs to another user`)
  }
  const createdMs = ctx.now()
  mutation.createBucket(name, createdMs, msg.owner, pool)
  await commitMutation(state, ctx, mutation)
  return ok({ name, createdMs })
}

/** Deletes a bucket without objects, aborting its uploads in progress; with `force`, removes its
 * objects first. Between batches other requests run (each commit is awaited) and may add objects,
 * so the loop scans again until a scan finds none, and the bucket record goes in a batch prepared
 * in that same synchronous step. */
export async function deleteBucket(
  state: StoreState,
  msg: DeleteBucketMsg,
  ctx: Context,
): Promise<Result<null>> {
  const name = msg.bucket
  // Object lock's promises outlive a forced delete: such a bucket is emptied version by version.
  const locked = ctx.kv.get(bucketSettingKey(name, 'objectLock')) !== undefined
  const force = msg.force === true && !locked
  const batchObjects = force ? FORCE_DELETE_BATCH_OBJECTS : 1
  for (let batches = 0; ; batches++) {
    assert(batches <= FORCE_DELETE_BATCHES_MAX)
    const mutation = new Mutation(ctx.kv, state.shard)
    // No other shard writes into the bucket while it is found empty and goes.
    mutation.claimBucket(name)
    if (mutation.bucket(name) === undefined) {
      return fail('no_such_bucket', `bucket ${name} does not exist`)
    }
    const content = firstContent(ctx.kv, name, batchObjects)
    if (content === null) {
      mutation.deleteBucket(name)
      await commitMutation(state, ctx, mutation)
      return ok(null)
    }
    if (!force && content.kind !== 'uploads' && content.kind !== 'tombstones') {
      const why = locked ? ': it has object lock, and is emptied only by deleting each version' : ''
      return fail('bucket_not_empty', `bucket ${name} is not empty${why}`)
    }
    if (msg.deadlineMs <= ctx.now()) {
      return fail('timeout', `bucket ${name}: deadline passed after ${batches} batches`)
    }
    if (batches === FORCE_DELETE_BATCHES_MAX) {
      return fail('timeout', `bucket ${name}: not empty after ${batches} batches`)
    }
    removeContent(ctx, mutation, name, content)
    await commitMutation(state, ctx, mutation)
  }
}

/** Removes everything a bucket holds (objects, versions, uploads, tombstones) in bounded batches,
 * and keeps the bucket: a bootstrap's wipe of this replica (rejoin.ts). */
export async function emptyBucket(
  state: StoreState,
  ctx: Context,
  name: string,
  deadlineMs: number,
): Promise<Result<null>> {
  for (let batches = 0; batches < FORCE_DELETE_BATCHES_MAX; batches++) {
    const mutation = new Mutation(ctx.kv, state.shard)
    const content =
      mutation.bucket(name) === undefined
        ? null
        : firstContent(ctx.kv, name, FORCE_DELETE_BATCH_OBJECTS)
    if (content === null) return ok(null)
    if (deadlineMs <= ctx.now()) return fail('timeout', `bucket ${name}: deadline passed`)
    removeContent(ctx, mutation, name, content)
    await commitMutation(state, ctx, mutation)
  }
  return fail('timeout', `bucket ${name}: not empty after ${FORCE_DELETE_BATCHES_MAX} batches`)
}

/** What keeps a bucket from being empty, a batch of one kind at a time: current objects, then
 * other versions and delete markers, then multipart uploads, then the tombstones of stamped changes
 * (cluster mode: key stamps and versions deleted by id); null when there is nothing. */
type Content =
  | { kind: 'objects'; keys: string[] }
  | { kind: 'versions'; versions: { key: string; token: string }[] }
  | { kind: 'uploads'; uploads: { key: string; uploadId: string }[] }
  | { kind: 'tombstones'; keys: string[] }

function firstContent(kv: KvStore, bucket: string, batchObjects: number): Content | null {
  const keys = firstKeys(kv, bucket, batchObjects)
  if (keys.length > 0) return { kind: 'objects', keys }
  const base = versionPrefix(bucket)
  const versions = kv
    .scan({ gte: base, lt: versionEnd(bucket), limit: batchObjects })
    .map(([storedKey]) => splitVersionKey(storedKey.slice(base.length)))
  if (versions.length > 0) return { kind: 'versions', versions }
  const uploads = firstUploads(kv, bucket, FORCE_DELETE_BATCH_UPLOADS)
  if (uploads.length > 0) return { kind: 'uploads', uploads }
  for (const [from, to] of [
    [keyStampPrefix(bucket), keyStampEnd(bucket)],
    [deletedVersionPrefix(bucket), deletedVersionEnd(bucket)],
  ] as const) {
    const rows = kv.scan({ gte: from, lt: to, limit: FORCE_DELETE_BATCH_OBJECTS })
    if (rows.length > 0) return { kind: 'tombstones', keys: rows.map(([storedKey]) => storedKey) }
  }
  return null
}

/** Removes one batch for good, with no delete markers and no versions made current. */
function removeContent(ctx: Context, mutation: Mutation, bucket: string, content: Content): void {
  switch (content.kind) {
    case 'objects':
      for (const key of content.keys) mutation.deleteObject(bucket, key)
      return
    case 'versions':
      for (const { key, token } of content.versions) mutation.deleteVersion(bucket, key, token)
      return
    case 'uploads':
      for (const at of content.uploads) {
        const upload = findUpload(mutation, bucket, at.key, at.uploadId)
        assert(upload.ok, 'an upload record just scanned is gone')
        removeUpload(mutation, ctx, { bucket, ...at }, upload.value)
      }
      return
    case 'tombstones':
      for (const storedKey of content.keys) mutation.del(storedKey)
      return
    default:
      unreachable(content)
  }
}

/** PutBucketVersioning: Enabled or Suspended; a bucket never goes back to unversioned. */
export async function putVersioning(
  state: StoreState,
  bucket: string,
  status: VersioningStatus,
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv, state.shard)
  // Every shard's writes into the bucket read its versioning: none is under way meanwhile.
  mutation.claimBucket(bucket)
  const record = mutation.bucket(bucket)
  if (record === undefined) return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  record.versioning = status
  mutation.catalogKeys.add(bucketKey(bucket))
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

export function getVersioning(
  bucket: string,
  ctx: Context,
): Result<{ status: VersioningStatus | null }> {
  const record = new Mutation(ctx.kv).bucket(bucket)
  if (record === undefined) return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  return ok({ status: record.versioning ?? null })
}

/** The first `limit` multipart uploads of a bucket, in listing order. */
function firstUploads(
  kv: KvStore,
  bucket: string,
  limit: number,
): { key: string; uploadId: string }[] {
  const base = uploadPrefix(bucket)
  const rows = kv.scan({ gte: base, lt: uploadEnd(bucket), limit })
  return rows.map(([storedKey]) => splitUploadKey(storedKey.slice(base.length)))
}

export function headBucket(name: string, ctx: Context): Result<BucketInfo> {
  const record = new Mutation(ctx.kv).bucket(name)
  if (record === undefined) return fail('no_such_bucket', `bucket ${name} does not exist`)
  return ok(bucketInfo(name, record))
}

/** A page of the buckets `msg.owner` may see (its own and those without an owner; every one for
 * a null owner), ascending by name (the key order). Reads at most BUCKETS_LISTED_MAX + 1 records,
 * and one batch past the page's end. */
export function listBuckets(msg: ListBucketsMsg, ctx: Context): Result<BucketListing> {
  assert(msg.limit > 0)
  const buckets: BucketInfo[] = []
  // Names are ASCII (the HTTP layer's rules), so JavaScript's order is the keys' order.
  const start =
    msg.after !== '' && msg.after >= msg.prefix
      ? { gt: bucketKey(msg.after) }
      : { gte: BUCKET_PREFIX + msg.prefix }
  for (const [name, record] of bucketRecords(ctx, start)) {
    if (!name.startsWith(msg.prefix)) break
    if (msg.owner !== null && record.owner !== undefined && record.owner !== msg.owner) continue
    if (buckets.length === msg.limit) return ok({ buckets, truncated: true })
    buckets.push(bucketInfo(name, record))
  }
  return ok({ buckets, truncated: false })
}

/** Every bucket's counters, ascending by name, from the bucket records alone. */
export function bucketStats(ctx: Context): Result<BucketStats[]> {
  const buckets = [...bucketRecords(ctx)]
  if (buckets.length > BUCKETS_LISTED_MAX) {
    return fail('internal', `more than ${BUCKETS_LISTED_MAX} buckets: stats refused`)
  }
  return ok(
    buckets.map(([name, record]) => {
      const totals = bucketTotals(ctx.kv, name, record)
      return {
        name,
        createdMs: record.createdMs,
        objectsCount: totals.objects,
        storageUsedBytes: totals.bytes,
      }
    }),
  )
}

/** Bucket records by name, ascending, from `start`, at most BUCKETS_LISTED_MAX + 1: one more
 * than the bound tells a caller that the list would be cut. Read a batch at a time as the caller
 * goes, so a page of ListBuckets stops reading where it ends. */
function* bucketRecords(
  ctx: Context,
  start: { gte: string } | { gt: string } = { gte: BUCKET_PREFIX },
): Generator<[string, BucketRecord]> {
  let range = start
  for (let read = 0; read <= BUCKETS_LISTED_MAX;) {
    const limit = Math.min(BUCKET_SCAN_ROWS, BUCKETS_LISTED_MAX + 1 - read)
    const rows = ctx.kv.scanText({ ...range, lt: BUCKET_END, limit })
    for (const [key, value] of rows) yield [key.slice(BUCKET_PREFIX.length), decodeBucket(value)]
    read += rows.length
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < limit) return
    range = { gt: last[0] }
  }
}
