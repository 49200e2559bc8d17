/** @module A bucket's tags: bucket.tagging.put/get (an object version's are one of its attributes,
 * attributes.ts). A bucket's tags are a record of their own under T\0<bucket> (keys.ts), like
 * its CORS rules, deleted in the bucket's delete batch. Each change is prepared synchronously
 * right before its commit, like every mutation. The ingress validated the tags
 * (protocol/tagging.ts); here they are asserted. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import type { ObjectMsg } from '../../../protocol/messages.js'
import { validateTags, type Tag } from '../../../protocol/tagging.js'
import { bucketTaggingKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { decodeText, encodeRecord } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'

type Msg<K extends ObjectMsg['kind']> = Extract<ObjectMsg, { kind: K }>

function noSuchBucket<T>(bucket: string): Result<T> {
  return fail('no_such_bucket', `bucket ${bucket} does not exist`)
}

/** An empty set deletes the bucket's tags (DeleteBucketTagging), which succeeds without any. */
export async function putBucketTagging(
  state: StoreState,
  msg: Msg<'bucket.tagging.put'>,
  ctx: Context,
): Promise<Result<null>> {
  assert(validateTags(msg.tags, 'bucket').ok, 'bucket.tagging.put with invalid tags')
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(msg.bucket) === undefined) return noSuchBucket(msg.bucket)
  const storedKey = bucketTaggingKey(msg.bucket)
  if (msg.tags.length > 0) mutation.put(storedKey, encodeRecord(msg.tags))
  else if (mutation.get(storedKey) !== undefined) mutation.del(storedKey)
  else return ok(null)
  mutation.catalogKeys.add(storedKey)
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

export function getBucketTagging(bucket: string, ctx: Context): Result<Tag[]> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(bucket) === undefined) return noSuchBucket(bucket)
  const stored = mutation.get(bucketTaggingKey(bucket))
  if (stored === undefined) return fail('no_such_tag_set', 'The TagSet does not exist')
  return ok(decodeTags(stored))
}

function isTag(value: unknown): value is Tag {
  const tag = value as Partial<Tag> | null
  return typeof tag?.key === 'string' && typeof tag.value === 'string'
}

function decodeTags(bytes: Uint8Array): Tag[] {
  let value: unknown
  try {
    value = JSON.parse(decodeText(bytes, 'bucket tagging'))
  } catch (error) {
    if (error instanceof ServiceError) throw error
    throw new ServiceError('corrupt', 'bucket tagging record is not JSON')
  }
  if (!Array.isArray(value) || !value.every(isTag) || !validateTags(value, 'bucket').ok) {
    throw new ServiceError('corrupt', 'bucket tagging record: bad tags')
  }
  return value
}
