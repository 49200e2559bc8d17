/** @module upload.complete: publishes a multipart upload as one object, in one batch and without
 * copying a byte. The object's record lists its parts' blobs in order and takes over their
 * references; parts uploaded but left out of the list are freed; the upload's records go. The
 * list, the checksum and the ETag follow S3's rules (protocol/s3-rules/multipart.ts). The write's
 * conditions (protocol/s3-rules/conditions.ts) are checked against the key's current object in
 * the same step. Everything from
 * the first read to the batch happens with no await, so a complete racing with an abort, another
 * complete of the same upload or a write of the key has exactly one outcome, and no reference is
 * lost or counted twice. A completed upload leaves a small record (completed-uploads.ts) so that
 * a retried complete answers the same result. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { PART_NUMBER_MAX } from '../../../protocol/limits.js'
import type { ObjectMsg, PutResult } from '../../../protocol/messages.js'
import { bareEtag } from '../../../protocol/s3-rules/conditions.js'
import {
  checkListedParts,
  completedChecksum,
  distinctParts,
  multipartEtag,
} from '../../../protocol/s3-rules/multipart.js'
import { withAttributes } from '../../../protocol/object-attributes.js'
import { completedPartsDigest, recordCompletion, retriedCompletion } from './completed-uploads.js'
import { expiryKey, uploadKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { NO_ROOM, stampedResult } from './put.js'
import { type ObjectRecord, type PartRecord, type PartRef } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'
import { placeStamped, stampedChange, writeStamped } from '../replication/stamps.js'
import { findUpload, forgetOpenUpload, partNumbers } from './uploads.js'
import { writeCurrent } from './versions.js'
import { checkWriteConditions } from './write-conditions.js'

type CompleteMsg = Extract<ObjectMsg, { kind: 'upload.complete' }>

export async function completeUpload(
  state: StoreState,
  msg: CompleteMsg,
  ctx: Context,
): Promise<Result<PutResult>> {
  assert(msg.parts.length > 0 && msg.parts.length <= PART_NUMBER_MAX, 'parts list out of bounds')
  if (!(await ctx.blobs.admits(0))) return fail('insufficient_storage', NO_ROOM)
  const mutation = new Mutation(ctx.kv, state.shard)
  const wanted = distinctParts(msg.parts)
  if (!wanted.ok) return wanted
  const partsDigest = completedPartsDigest(
    wanted.value.map((part) => [part.partNumber, bareEtag(part.etag.trim())]),
  )
  const upload = findUpload(mutation, msg.bucket, msg.key, msg.uploadId)
  if (!upload.ok) {
    if (upload.code !== 'no_such_upload') return upload
    return retriedCompletion(mutation, msg, partsDigest) ?? upload
  }
  const stored = wanted.value.map(({ partNumber }) => mutation.part(msg.uploadId, partNumber))
  const checked = checkListedParts(wanted.value, stored)
  if (!checked.ok) return checked
  const checksum = completedChecksum(upload.value.checksum, wanted.value, checked.value, msg.expect)
  if (!checksum.ok) return checksum
  const allowed = checkWriteConditions(mutation, msg, msg.conditions, msg.judgedOn)
  if (!allowed.ok) return allowed
  const listed = new Set(wanted.value.map((part) => part.partNumber))
  for (const partNumber of partNumbers(ctx, msg.uploadId)) {
    if (!listed.has(partNumber)) mutation.deletePart(msg.bucket, msg.uploadId, partNumber)
  }
  // A stamped complete that its stamp places nowhere (stamps.ts) frees the parts instead.
  const change = msg.stamp === undefined ? null : stampedChange(msg.stamp, msg.versioning)
  const placement = change === null ? null : placeStamped(mutation, msg, change)
  const blobs: PartRef[] = []
  const etags: string[] = []
  let size = 0
  const algorithm = upload.value.checksum?.algorithm
  for (const { partNumber } of wanted.value) {
    const part =
      placement?.where === 'nowhere'
        ? freePart(mutation, msg, partNumber)
        : mutation.releasePart(msg.bucket, msg.uploadId, partNumber)
    const value = algorithm === undefined ? undefined : part.checksums[algorithm]
    const checksums = value === undefined ? {} : { checksums: { [algorithm as string]: value } }
    blobs.push({ sha256: part.sha256, size: part.size, ...checksums })
    etags.push(part.etag)
    size += part.size
  }
  const record: ObjectRecord = {
    size,
    etag: multipartEtag(etags),
    lastModifiedMs: ctx.now(),
    http: upload.value.http,
    userMeta: upload.value.userMeta,
    checksums: checksum.value?.checksums ?? {},
    parts: blobs,
    ...withAttributes(upload.value.attributes),
  }
  if (checksum.value !== null) record.checksumType = checksum.value.type
  mutation.del(uploadKey(msg.bucket, msg.key, msg.uploadId))
  mutation.del(expiryKey(upload.value.initiatedMs, msg.uploadId))
  forgetOpenUpload(mutation, msg.uploadId)
  let result: PutResult
  if (change !== null && placement !== null) {
    writeStamped(state, ctx, mutation, msg, record, change, placement)
    result = stampedResult(record, change, placement)
  } else {
    // The parts' references now belong to the object: writing it adds none of its own.
    const versionId = writeCurrent(state, ctx, mutation, msg, record)
    result = {
      etag: record.etag,
      lastModifiedMs: record.lastModifiedMs,
      checksums: record.checksums,
    }
    if (record.checksumType !== undefined) result.checksumType = record.checksumType
    if (versionId !== undefined) result.versionId = versionId
  }
  const { stale: _stale, ...kept } = result
  recordCompletion(mutation, msg, partsDigest, kept)
  await commitMutation(state, ctx, mutation)
  return ok(result)
}

/** Removes a listed part with its reference (a stamped complete that writes nothing), and
 * answers its record, from which the answer's ETag is made as if it had been written. */
function freePart(
  mutation: Mutation,
  at: { bucket: string; uploadId: string },
  partNumber: number,
): PartRecord {
  const part = mutation.part(at.uploadId, partNumber)
  assert(part !== undefined, 'a listed part was checked')
  mutation.deletePart(at.bucket, at.uploadId, partNumber)
  return part
}
