/** @module upload.complete: publishes a multipart upload as one object, in one batch and without
 * copying a byte. The object's record lists its parts' blobs in order and takes over their
 * references; parts uploaded but left out of the list are freed; the upload's records go. The list
 * is checked as Amazon S3 does, in this order: part numbers ascending (InvalidPartOrder; a number
 * may repeat, and its last entry counts, as S3 takes a part re-uploaded while its first upload was
 * in flight), each part uploaded with that ETag (InvalidPart), every part but the last at least
 * PART_BYTES_MIN (EntityTooSmall), then the checksums of an upload created with an algorithm
 * (multipart-checksum.ts: listed part checksums must match, the object's is made from the stored
 * parts' and checked against any the request names, then a COMPOSITE one needs each part's
 * listed).
 * The ETag is the MD5 of the parts' binary MD5s, then `-` and the part count. The write's
 * conditions (protocol/conditions.ts) are checked against the key's current object in the same
 * step. Everything from
 * the first read to the batch happens with no await, so a complete racing with an abort, another
 * complete of the same upload or a write of the key has exactly one outcome, and no reference is
 * lost or counted twice. A completed upload leaves a small record (completed-uploads.ts) so that
 * a retried complete answers the same result. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { PART_BYTES_MIN, PART_NUMBER_MAX } from '../../protocol/limits.js'
import type { CompletedPart, ObjectMsg, PutResult } from '../../protocol/messages.js'
import { objectChecksum } from '../../protocol/multipart-checksum.js'
import type { ChecksumAlgorithm, Checksums, ChecksumType } from '../../protocol/objects.js'
import { completedPartsDigest, recordCompletion, retriedCompletion } from './completed-uploads.js'
import { expiryKey, uploadKey } from './keys.js'
import { Mutation } from './mutation.js'
import { NO_ROOM, stampedResult } from './put.js'
import {
  withTags,
  type ObjectRecord,
  type PartRecord,
  type PartRef,
  type UploadRecord,
} from './records.js'
import { commitMutation, type StoreState } from './store-state.js'
import { placeStamped, stampedChange, writeStamped } from './stamps.js'
import { findUpload, forgetOpenUpload, partNumbers } from './uploads.js'
import { writeCurrent } from './versions.js'
import { checkWriteConditions } from './write-conditions.js'

type CompleteMsg = Extract<ObjectMsg, { kind: 'upload.complete' }>

/** ETags compare without their quotes: clients send them either way. */
function bareEtag(etag: string): string {
  return etag.trim().replace(/^"(.*)"$/, '$1')
}

export async function completeUpload(
  state: StoreState,
  msg: CompleteMsg,
  ctx: Context,
): Promise<Result<PutResult>> {
  assert(msg.parts.length > 0 && msg.parts.length <= PART_NUMBER_MAX, 'parts list out of bounds')
  if (!(await ctx.blobs.admits(0))) return fail('insufficient_storage', NO_ROOM)
  const mutation = new Mutation(ctx.kv)
  const wanted = distinctParts(msg.parts)
  if (!wanted.ok) return wanted
  const partsDigest = completedPartsDigest(
    wanted.value.map((part) => [part.partNumber, bareEtag(part.etag)]),
  )
  const upload = findUpload(mutation, msg.bucket, msg.key, msg.uploadId)
  if (!upload.ok) {
    if (upload.code !== 'no_such_upload') return upload
    return retriedCompletion(mutation, msg, partsDigest) ?? upload
  }
  const checked = checkParts(mutation, msg.uploadId, wanted.value)
  if (!checked.ok) return checked
  const checksum = uploadChecksum(upload.value, msg, wanted.value, checked.value)
  if (!checksum.ok) return checksum
  const allowed = checkWriteConditions(mutation, msg, msg.conditions)
  if (!allowed.ok) return allowed
  const listed = new Set(wanted.value.map((part) => part.partNumber))
  for (const partNumber of partNumbers(ctx, msg.uploadId)) {
    if (!listed.has(partNumber)) mutation.deletePart(msg.bucket, msg.uploadId, partNumber)
  }
  // A stamped complete that its stamp places nowhere (stamps.ts) frees the parts instead.
  const change = msg.stamp === undefined ? null : stampedChange(msg.stamp)
  const placement = change === null ? null : placeStamped(mutation, msg, change)
  const blobs: PartRef[] = []
  const md5s: Buffer[] = []
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
    md5s.push(Buffer.from(bareEtag(part.etag), 'hex'))
    size += part.size
  }
  const digest = createHash('md5').update(Buffer.concat(md5s)).digest('hex')
  const record: ObjectRecord = {
    size,
    etag: `"${digest}-${wanted.value.length}"`,
    lastModifiedMs: ctx.now(),
    http: upload.value.http,
    userMeta: upload.value.userMeta,
    checksums: checksum.value?.checksums ?? {},
    parts: blobs,
    ...withTags(upload.value.tags),
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

/** The list with each part number once, its last entry (S3 accepts a number listed again, with
 * the ETag of a later upload of that part). Its order is checked first, as S3 does, before any
 * part is looked at. */
function distinctParts(parts: readonly CompletedPart[]): Result<CompletedPart[]> {
  const distinct: CompletedPart[] = []
  for (const part of parts) {
    const previous = distinct[distinct.length - 1]
    if (previous !== undefined && part.partNumber < previous.partNumber) {
      return fail('invalid_part_order', `part ${part.partNumber} after part ${previous.partNumber}`)
    }
    if (previous?.partNumber === part.partNumber) distinct.pop()
    distinct.push(part)
  }
  return ok(distinct)
}

/** Checks the parts the request names against what was uploaded; answers their records. */
function checkParts(
  mutation: Mutation,
  uploadId: string,
  wanted: readonly CompletedPart[],
): Result<PartRecord[]> {
  // Every part must exist with its ETag, and only then do sizes count.
  const parts: PartRecord[] = []
  for (const { partNumber, etag, checksums } of wanted) {
    const part = mutation.part(uploadId, partNumber)
    if (part === undefined || bareEtag(part.etag) !== bareEtag(etag)) {
      return fail('invalid_part', `part ${partNumber} was not uploaded with that ETag`)
    }
    for (const [algorithm, value] of Object.entries(checksums ?? {})) {
      if (part.checksums[algorithm as ChecksumAlgorithm] !== value) {
        return fail('invalid_part', `part ${partNumber} has another ${algorithm} checksum`)
      }
    }
    parts.push(part)
  }
  for (const [index, part] of parts.slice(0, -1).entries()) {
    if (part.size < PART_BYTES_MIN) {
      const number = wanted[index]?.partNumber
      return fail('entity_too_small', `part ${number} has ${part.size} bytes`)
    }
  }
  return ok(parts)
}

/** The object's checksum, from its parts', when the upload named an algorithm (else null); the
 * request must list each part's checksum for a COMPOSITE one, and may name the whole object's. */
function uploadChecksum(
  upload: UploadRecord,
  msg: CompleteMsg,
  wanted: readonly CompletedPart[],
  parts: readonly PartRecord[],
): Result<{ checksums: Checksums; type: ChecksumType } | null> {
  const named = upload.checksum
  if (named === undefined) return ok(null)
  const { algorithm, type } = named
  const sums: { checksum: string; size: number }[] = []
  for (const [index, part] of parts.entries()) {
    const checksum = part.checksums[algorithm]
    if (checksum === undefined) {
      return fail('invalid_part', `part ${wanted[index]?.partNumber} has no ${algorithm} checksum`)
    }
    sums.push({ checksum, size: part.size })
  }
  // The whole object's checksum is made from the stored parts', so a wrong one the client named
  // is BadDigest first, whatever its list says (as Ceph answers).
  const value = objectChecksum(named, sums)
  const expected = msg.expect?.[algorithm]
  if (expected !== undefined && expected !== value) {
    return fail('checksum_mismatch', `x-amz-checksum-${algorithm} does not match the parts'`)
  }
  const unlisted = wanted.find((part) => part.checksums?.[algorithm] === undefined)
  if (type === 'COMPOSITE' && unlisted !== undefined) {
    return fail(
      'invalid_request',
      `The upload was created using a ${algorithm} checksum. The complete request must ` +
        `include the checksum for each part. It was missing for part ${unlisted.partNumber} in ` +
        'the request.',
    )
  }
  return ok({ checksums: { [algorithm]: value }, type })
}
