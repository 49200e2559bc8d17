/** @module Bucket requests: bucket.create, bucket.delete, bucket.head, bucket.list. A bucket record
 * carries its creation time and its counters (objects, bytes); the store-wide bucket count lives in
 * the counters record. Name validation is the HTTP layer's: here a name is any non-empty string
 * without NUL (asserted by the key layout). */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { BucketInfo } from '../../protocol/objects.js'
import { BUCKET_END, BUCKET_PREFIX } from './keys.js'
import { bucketHasObjects } from './list.js'
import { Mutation } from './mutation.js'
import { bucketInfo, decodeBucket } from './records.js'
import { commitMutation, type StoreState } from './store-state.js'

/** Bucket records read per scan while listing buckets. */
const BUCKET_SCAN_ROWS = 1000
/** Buckets a listing returns at most; S3 allows up to 10,000 per account. */
const BUCKETS_LISTED_MAX = 100_000

export async function createBucket(
  state: StoreState,
  name: string,
  ctx: Context,
): Promise<Result<BucketInfo>> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(name) !== undefined) {
    return fail('bucket_exists', `bucket ${name} already exists`)
  }
  const createdMs = ctx.now()
  mutation.createBucket(name, createdMs)
  await commitMutation(state, ctx, mutation)
  return ok({ name, createdMs })
}

export async function deleteBucket(
  state: StoreState,
  name: string,
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(name) === undefined) {
    return fail('no_such_bucket', `bucket ${name} does not exist`)
  }
  if (bucketHasObjects(ctx.kv, name)) {
    return fail('bucket_not_empty', `bucket ${name} is not empty`)
  }
  mutation.deleteBucket(name)
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

export function headBucket(name: string, ctx: Context): Result<BucketInfo> {
  const record = new Mutation(ctx.kv).bucket(name)
  if (record === undefined) return fail('no_such_bucket', `bucket ${name} does not exist`)
  return ok(bucketInfo(name, record))
}

/** Every bucket, ascending by name (the key order). */
export function listBuckets(ctx: Context): Result<BucketInfo[]> {
  const buckets: BucketInfo[] = []
  let after: string | null = null
  while (buckets.length < BUCKETS_LISTED_MAX) {
    const range: { gte: string } | { gt: string } =
      after === null ? { gte: BUCKET_PREFIX } : { gt: after }
    const rows = ctx.kv.scan({ ...range, lt: BUCKET_END, limit: BUCKET_SCAN_ROWS })
    for (const [key, value] of rows) {
      buckets.push(bucketInfo(key.slice(BUCKET_PREFIX.length), decodeBucket(value)))
    }
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < BUCKET_SCAN_ROWS) break
    after = last[0]
  }
  return ok(buckets)
}
