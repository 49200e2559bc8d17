/** @module object.delete and object.delete-many. Deletes are idempotent, as in S3: a missing key
 * is a success, and delete-many reports every object it was given as deleted, or an error for a
 * malformed version id. In a bucket with versioning a delete without a version id adds a delete
 * marker, and one with a version id removes that version (versions.ts). All objects of one
 * delete-many go in one batch; blobs that lose their last reference become garbage in it. A
 * stamped delete (cluster mode) follows stamps.ts: one of a delete-many's keys each, one stamp.
 * A version that object lock protects is not removed by id (versions.ts; in a cluster the
 * coordinator refuses such a delete before it stamps it). */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { DELETE_OBJECTS_KEYS_MAX } from '../../../protocol/limits.js'
import type { DeleteManyResult, DeleteResult } from '../../../protocol/messages.js'
import { Mutation } from '../mutation.js'
import { commitMutation, type StoreState } from '../store-state.js'
import { deleteByIdStamped, deleteStamped, stampedChange } from '../replication/stamps.js'
import { deleteById, deleteCurrent, type StampedChange } from './versions.js'

export interface DeleteTarget {
  key: string
  versionId?: string
}

/** A stamped delete's stamp, and the versioning its coordinator decided (stamps.ts). */
export interface DeleteStamp {
  stamp: string
  versioning?: StampedChange['versioning']
}

/** What a delete message chose for every replica: its stamp, if any, and its versioning. */
export function deleteStampOf(msg: {
  stamp?: string
  versioning?: StampedChange['versioning']
}): DeleteStamp | undefined {
  if (msg.stamp === undefined) return undefined
  return msg.versioning === undefined
    ? { stamp: msg.stamp }
    : { stamp: msg.stamp, versioning: msg.versioning }
}

/** Prepares one delete in `mutation`; a stamped one as stamps.ts says. */
function prepareDelete(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
  bucket: string,
  target: DeleteTarget,
  stamped: DeleteStamp | undefined,
  bypassGovernance: boolean,
): Result<DeleteResult> {
  const at = { bucket, key: target.key }
  if (target.versionId === undefined) {
    if (stamped !== undefined) {
      const change = stampedChange(stamped.stamp, stamped.versioning)
      return ok(deleteStamped(state, ctx, mutation, at, change))
    }
    return ok(deleteCurrent(state, ctx, mutation, at))
  }
  if (stamped !== undefined) {
    return deleteByIdStamped(ctx, mutation, at, target.versionId, stamped.stamp)
  }
  return deleteById(ctx, mutation, at, target.versionId, { bypassGovernance })
}

export async function deleteObject(
  state: StoreState,
  bucket: string,
  target: DeleteTarget,
  ctx: Context,
  stamped?: DeleteStamp,
  bypassGovernance = false,
): Promise<Result<DeleteResult>> {
  const mutation = new Mutation(ctx.kv, state.shard)
  if (mutation.bucket(bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  }
  const outcome = prepareDelete(state, ctx, mutation, bucket, target, stamped, bypassGovernance)
  if (!outcome.ok) return outcome
  if (mutation.hasWrites()) await commitMutation(state, ctx, mutation)
  return outcome
}

export async function deleteObjects(
  state: StoreState,
  bucket: string,
  targets: readonly DeleteTarget[],
  ctx: Context,
  stamped?: DeleteStamp,
  bypassGovernance = false,
): Promise<Result<DeleteManyResult>> {
  assert(targets.length <= DELETE_OBJECTS_KEYS_MAX, 'delete-many over its key limit')
  const mutation = new Mutation(ctx.kv, state.shard)
  if (mutation.bucket(bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  }
  const result: DeleteManyResult = { deleted: [], errors: [] }
  for (const target of targets) {
    const outcome = prepareDelete(state, ctx, mutation, bucket, target, stamped, bypassGovernance)
    const requested = target.versionId === undefined ? {} : { requestedVersionId: target.versionId }
    if (outcome.ok) result.deleted.push({ key: target.key, ...requested, ...outcome.value })
    else result.errors.push({ key: target.key, code: outcome.code, detail: outcome.detail })
  }
  if (mutation.hasWrites()) await commitMutation(state, ctx, mutation)
  return ok(result)
}
