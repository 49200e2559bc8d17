/** @module object.delete and object.delete-many. Deletes are idempotent, as in S3: a missing key
 * is a success, and delete-many reports every key it was given as deleted. All keys of one
 * delete-many go in one batch; blobs that lose their last reference become garbage in it. */
import assert from 'node:assert/strict'
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { DELETE_OBJECTS_KEYS_MAX } from '../../protocol/limits.js'
import type { DeleteManyResult } from '../../protocol/messages.js'
import { Mutation } from './mutation.js'
import { commitMutation, type StoreState } from './store-state.js'

export async function deleteObject(
  state: StoreState,
  bucket: string,
  key: string,
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  }
  if (mutation.deleteObject(bucket, key)) await commitMutation(state, ctx, mutation)
  return ok(null)
}

export async function deleteObjects(
  state: StoreState,
  bucket: string,
  keys: readonly string[],
  ctx: Context,
): Promise<Result<DeleteManyResult>> {
  assert(keys.length <= DELETE_OBJECTS_KEYS_MAX, 'delete-many over its key limit')
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  }
  let changed = false
  for (const key of keys) {
    if (mutation.deleteObject(bucket, key)) changed = true
  }
  if (changed) await commitMutation(state, ctx, mutation)
  return ok({ deleted: [...keys], errors: [] })
}
