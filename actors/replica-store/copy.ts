/** @module object.copy: a new object record that references the source's blob (a copy never
 * moves bytes), as S3's rules of copies say (protocol/s3-rules/copy-source.ts); the copy gets a
 * new last-modified time. The target's conditions (If-Match, If-None-Match, If-Unmodified-Since)
 * are checked against the target's current object, and everything from the source read to the
 * batch happens with no await in between. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { ObjectMsg, PutResult } from '../../protocol/messages.js'
import {
  checkCopySourceConditions,
  checkSelfCopy,
  copiedAttributes,
  markerAsSource,
} from '../../protocol/s3-rules/copy-source.js'
import { shownVersionId } from '../../protocol/s3-rules/versioning.js'
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
  const changes = checkSelfCopy(source, target, msg.replace !== undefined)
  if (!changes.ok) return changes
  if (!(await ctx.blobs.admits(0))) return fail('insufficient_storage', NO_ROOM)
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(source.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${source.bucket} does not exist`)
  }
  const found = findSource(ctx, mutation, source)
  if (!found.ok) return found
  const { record: original, versioned } = found.value
  const sourceAllows = checkCopySourceConditions(original, msg.conditions)
  if (!sourceAllows.ok) return sourceAllows
  if (mutation.bucket(target.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${target.bucket} does not exist`)
  }
  const allowed = checkWriteConditions(mutation, target, msg.targetConditions)
  if (!allowed.ok) return allowed
  const { http, userMeta, tags } = copiedAttributes(original, msg)
  const record: ObjectRecord = { ...original, lastModifiedMs: ctx.now(), http, userMeta }
  if (tags !== 'source') {
    delete record.tags
    Object.assign(record, withTags(tags))
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
  const sourceVersionId = shownVersionId(versioned, original.versionId)
  if (sourceVersionId !== undefined) result.sourceVersionId = sourceVersionId
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
  return markerAsSource(source, found.value)
}
