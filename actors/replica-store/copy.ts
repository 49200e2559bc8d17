/** @module object.copy: a new object record that references the source's blob (a copy never
 * moves bytes). The source's metadata is kept unless the message replaces it; the copy gets a new
 * last-modified time. Conditions (x-amz-copy-source-if-*) are checked against the source, the
 * target's (If-Match, If-None-Match, If-Unmodified-Since) against the target's current object,
 * and everything from the source read to the batch happens with no await in between. */
import type { Context } from '../../protocol/actor.js'
import { evaluateConditions } from '../../protocol/conditions.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { ObjectMsg, PutResult } from '../../protocol/messages.js'
import { Mutation } from './mutation.js'
import { NO_ROOM } from './put.js'
import { blobsOf, withTags, type ObjectRecord } from './records.js'
import { commitMutation, type StoreState } from './store-state.js'
import { findVersion, writeCurrent } from './versions.js'
import { checkWriteConditions } from './write-conditions.js'

export type CopyMsg = Extract<ObjectMsg, { kind: 'object.copy' }>

export async function copyObject(
  state: StoreState,
  msg: CopyMsg,
  ctx: Context,
): Promise<Result<PutResult>> {
  const { source, target } = msg
  if (!(await ctx.blobs.admits(0))) return fail('insufficient_storage', NO_ROOM)
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(source.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${source.bucket} does not exist`)
  }
  const found = findSource(ctx, mutation, source)
  if (!found.ok) return found
  const { record: original, versioned } = found.value
  const refused = evaluateConditions(original, msg.conditions, 'copy')
  if (refused !== null) return fail(refused, 'copy source precondition failed')
  if (mutation.bucket(target.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${target.bucket} does not exist`)
  }
  const samePlace = source.bucket === target.bucket && source.key === target.key
  if (samePlace && msg.replace === undefined && source.versionId === undefined) {
    // S3's wording: a copy onto itself must change something.
    return fail('invalid_request', 'copying an object to itself requires replacing its metadata')
  }
  const allowed = checkWriteConditions(mutation, target, msg.targetConditions)
  if (!allowed.ok) return allowed
  const record: ObjectRecord = {
    ...original,
    lastModifiedMs: ctx.now(),
    http: msg.replace?.http ?? original.http,
    userMeta: msg.replace?.userMeta ?? original.userMeta,
  }
  if (msg.tags !== undefined) {
    delete record.tags
    Object.assign(record, withTags(msg.tags))
  }
  for (const blob of blobsOf(original)) mutation.addReference(blob.sha256)
  const versionId = writeCurrent(state, ctx, mutation, target, record)
  await commitMutation(state, ctx, mutation)
  const result: PutResult = {
    etag: record.etag,
    lastModifiedMs: record.lastModifiedMs,
    checksums: record.checksums,
  }
  if (versionId !== undefined) result.versionId = versionId
  if (versioned) result.sourceVersionId = original.versionId ?? 'null'
  return ok(result)
}

/** The source version of a copy (current, or by id); a delete marker is no source. */
export function findSource(
  ctx: Context,
  mutation: Mutation,
  source: { bucket: string; key: string; versionId?: string },
): Result<{ record: ObjectRecord; versioned: boolean }> {
  const found = findVersion(ctx, mutation, source, source.versionId)
  if (!found.ok) return found
  if (found.value.kind === 'object') return ok(found.value)
  if (found.value.byId) {
    return fail(
      'invalid_request',
      'The source of a copy request may not specifically refer to a delete marker by version id.',
    )
  }
  return fail('no_such_key', `no key ${source.key} in ${source.bucket}`)
}
