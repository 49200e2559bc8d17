/** @module object.copy, as S3's rules of copies say (protocol/s3-rules/copy-source.ts): a new
 * object record that references the source's blob, so no byte moves, with a new last-modified
 * time; the target's conditions (If-Match, If-None-Match, If-Unmodified-Since) are checked against
 * the target's current object, and everything from the source read to the batch happens with no
 * await in between. A copy of a multipart object is a new object of its bytes: they are read
 * from the source's blobs on a stream inside this actor and stored as a PUT's body, whose commit
 * checks the target's conditions. */
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { ObjectMsg, PutResult } from '../../../protocol/messages.js'
import type { HttpMeta } from '../../../protocol/objects.js'
import {
  copiedAttributes,
  withAttributes,
  type ObjectAttributes,
} from '../../../protocol/object-attributes.js'
import {
  checkCopySourceConditions,
  checkCopySourceSize,
  checkSelfCopy,
  checksumsOfBytes,
  copiedMetadata,
  etagIsMd5OfBytes,
  markerAsSource,
} from '../../../protocol/s3-rules/copy-source.js'
import { shownVersionId } from '../../../protocol/s3-rules/versioning.js'
import { streamBlobs } from './get.js'
import { Mutation } from '../mutation.js'
import { NO_ROOM, putObject, type PutMsg } from './put.js'
import { blobsOf, type ObjectRecord } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'
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
  const mutation = new Mutation(ctx.kv, state.shard)
  if (mutation.bucket(source.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${source.bucket} does not exist`)
  }
  const found = findSource(ctx, mutation, source)
  if (!found.ok) return found
  const { record: original, versioned } = found.value
  const sourceAllows = checkCopySourceConditions(original, msg.conditions)
  if (!sourceAllows.ok) return sourceAllows
  const sized = checkCopySourceSize(original.size)
  if (!sized.ok) return sized
  if (mutation.bucket(target.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${target.bucket} does not exist`)
  }
  const allowed = checkWriteConditions(mutation, target, msg.targetConditions)
  if (!allowed.ok) return allowed
  const { http, userMeta } = copiedMetadata(original, msg)
  const attributes = copiedAttributes(original.attributes, msg.attributes)
  const sourceVersionId = shownVersionId(versioned, original.versionId)
  if (!etagIsMd5OfBytes({ partsCount: original.parts?.length })) {
    const copied = { http, userMeta, attributes }
    const written = await copyBytes(state, msg, ctx, mutation, original, copied)
    if (!written.ok || sourceVersionId === undefined) return written
    return ok({ ...written.value, sourceVersionId })
  }
  // A new version: the source's attributes and their stamps are not the copy's.
  const { attributes: _source, attributeStamps: _stamps, ...bytes } = original
  const record: ObjectRecord = {
    ...bytes,
    lastModifiedMs: ctx.now(),
    http,
    userMeta,
    ...withAttributes(attributes),
  }
  for (const blob of blobsOf(original)) mutation.referenceCopied(blob.sha256)
  const versionId = writeCurrent(state, ctx, mutation, target, record)
  await commitMutation(state, ctx, mutation)
  const result: PutResult = {
    etag: record.etag,
    lastModifiedMs: record.lastModifiedMs,
    checksums: record.checksums,
  }
  if (versionId !== undefined) result.versionId = versionId
  if (sourceVersionId !== undefined) result.sourceVersionId = sourceVersionId
  return ok(result)
}

/** The copy as a PUT of the source's bytes, read from its blobs as `view` finds them. */
function copyBytes(
  state: StoreState,
  msg: CopyMsg,
  ctx: Context,
  view: Mutation,
  source: ObjectRecord,
  copied: { http: HttpMeta; userMeta: Record<string, string>; attributes: ObjectAttributes },
): Promise<Result<PutResult>> {
  const checksums = checksumsOfBytes(source)
  const put: PutMsg = {
    kind: 'object.put',
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
    bucket: msg.target.bucket,
    key: msg.target.key,
    http: copied.http,
    userMeta: copied.userMeta,
    ...withAttributes(copied.attributes),
    expect: { size: source.size, ...(Object.keys(checksums).length === 0 ? {} : { checksums }) },
    ...(msg.targetConditions === undefined ? {} : { conditions: msg.targetConditions }),
  }
  if (source.size === 0) return putObject(state, { ...put, body: new Uint8Array(0) }, ctx)
  const [sending, receiving] = ctx.openStream()
  const sent = streamBlobs(state, ctx, view, sending, msg.deadlineMs, blobsOf(source))
  if (!sent.ok) return Promise.resolve(sent)
  const bytes = ctx.source(receiving, msg.deadlineMs)
  bytes.request(0, source.size - 1)
  return putObject(state, { ...put, stream: receiving }, ctx, bytes)
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
