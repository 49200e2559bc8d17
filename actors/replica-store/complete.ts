/** @module upload.complete: publishes a multipart upload as one object, in one batch and without
 * copying a byte. The object's record lists its parts' blobs in order and takes over their
 * references; parts uploaded but left out of the list are freed; the upload's records go. The list
 * is checked as Amazon S3 does, in this order: part numbers strictly ascending (InvalidPartOrder),
 * each part uploaded with that ETag (InvalidPart), every part but the last at least PART_BYTES_MIN
 * (EntityTooSmall). The ETag is the MD5 of the parts' binary MD5s, then `-` and the part count.
 * Everything from the first read to the batch happens with no await, so a complete racing with an
 * abort or another complete of the same upload has exactly one outcome: the loser finds no upload
 * (NoSuchUpload), and no reference is lost or counted twice. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { PART_BYTES_MIN, PART_NUMBER_MAX } from '../../protocol/limits.js'
import type { ObjectMsg, PutResult } from '../../protocol/messages.js'
import { expiryKey, uploadKey } from './keys.js'
import { Mutation } from './mutation.js'
import { withTags, type BlobRef, type ObjectRecord, type PartRecord } from './records.js'
import { commitMutation, type StoreState } from './store-state.js'
import { findUpload, partNumbers } from './uploads.js'
import { writeCurrent } from './versions.js'

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
  const mutation = new Mutation(ctx.kv)
  const upload = findUpload(mutation, msg.bucket, msg.key, msg.uploadId)
  if (!upload.ok) return upload
  const checked = checkParts(mutation, msg)
  if (!checked.ok) return checked
  const listed = new Set(msg.parts.map((part) => part.partNumber))
  for (const partNumber of partNumbers(ctx, msg.uploadId)) {
    if (!listed.has(partNumber)) mutation.deletePart(msg.bucket, msg.uploadId, partNumber)
  }
  const blobs: BlobRef[] = []
  const md5s: Buffer[] = []
  let size = 0
  for (const { partNumber } of msg.parts) {
    const part = mutation.releasePart(msg.bucket, msg.uploadId, partNumber)
    blobs.push({ sha256: part.sha256, size: part.size })
    md5s.push(Buffer.from(bareEtag(part.etag), 'hex'))
    size += part.size
  }
  const digest = createHash('md5').update(Buffer.concat(md5s)).digest('hex')
  const record: ObjectRecord = {
    size,
    etag: `"${digest}-${msg.parts.length}"`,
    lastModifiedMs: ctx.now(),
    http: upload.value.http,
    userMeta: upload.value.userMeta,
    checksums: {},
    parts: blobs,
    ...withTags(upload.value.tags),
  }
  // The parts' references now belong to the object: writing it adds none of its own.
  const versionId = writeCurrent(state, ctx, mutation, msg, record)
  mutation.del(uploadKey(msg.bucket, msg.key, msg.uploadId))
  mutation.del(expiryKey(upload.value.initiatedMs, msg.uploadId))
  await commitMutation(state, ctx, mutation)
  const result: PutResult = {
    etag: record.etag,
    lastModifiedMs: record.lastModifiedMs,
    checksums: {},
  }
  if (versionId !== undefined) result.versionId = versionId
  return ok(result)
}

/** Checks the parts the request names against what was uploaded. */
function checkParts(mutation: Mutation, msg: CompleteMsg): Result<null> {
  // The list's order is checked first, as S3 does, before any part is looked at.
  let previous = 0
  for (const wanted of msg.parts) {
    if (wanted.partNumber <= previous) {
      return fail('invalid_part_order', `part ${wanted.partNumber} after part ${previous}`)
    }
    previous = wanted.partNumber
  }
  // Then every part must exist with its ETag, and only then do sizes count.
  const parts: PartRecord[] = []
  for (const wanted of msg.parts) {
    const part = mutation.part(msg.uploadId, wanted.partNumber)
    if (part === undefined || bareEtag(part.etag) !== bareEtag(wanted.etag)) {
      return fail('invalid_part', `part ${wanted.partNumber} was not uploaded with that ETag`)
    }
    parts.push(part)
  }
  for (const [index, part] of parts.slice(0, -1).entries()) {
    if (part.size < PART_BYTES_MIN) {
      const number = msg.parts[index]?.partNumber
      return fail('entity_too_small', `part ${number} has ${part.size} bytes`)
    }
  }
  return ok(null)
}
