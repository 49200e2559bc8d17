/** @module upload.part and upload.part-copy: a part is stored exactly as an object's body is
 * (put.ts: streamed, hashed, verified, content-addressed, deduplicated), and recorded as a part
 * record of its upload instead of an object record. Uploading a part number again replaces the
 * earlier part. UploadPartCopy of a whole object (not a multipart one) only adds a reference to
 * its blob; a range, or a multipart source, is read from the source's blobs and stored as a new
 * part through the same path as an upload, on a stream inside this actor. */
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { ObjectMsg, PartInfo } from '../../../protocol/messages.js'
import {
  checkCopySourceConditions,
  copiedPartExpect,
  etagIsMd5OfBytes,
  partCopyRange,
} from '../../../protocol/s3-rules/copy-source.js'
import { checkPartChecksum } from '../../../protocol/s3-rules/multipart.js'
import { streamBlobs } from './get.js'
import { stampWallMs } from '../keys.js'
import { Mutation } from '../mutation.js'
import { NO_ROOM, storeBody, type BodyMsg, type Recorder } from './put.js'
import { blobsOf, partInfo, type PartRecord } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'
import { findUpload } from './uploads.js'
import { findSource } from './copy.js'

type PartMsg = Extract<ObjectMsg, { kind: 'upload.part' }>
type PartCopyMsg = Extract<ObjectMsg, { kind: 'upload.part-copy' }>

interface PartTarget {
  bucket: string
  key: string
  uploadId: string
  partNumber: number
}

export function uploadPart(
  state: StoreState,
  msg: PartMsg,
  ctx: Context,
): Promise<Result<PartInfo>> {
  const admit = (mutation: Mutation): Result<null> => {
    const upload = findUpload(mutation, msg.bucket, msg.key, msg.uploadId)
    if (!upload.ok) return upload
    // A copied part (cluster mode) brings no checksum of its own: it asks for one computed.
    return checkPartChecksum(upload.value.checksum?.algorithm, msg.expect)
  }
  return storeBody(state, msg, ctx, admit, partRecorder(msg, ctx, msg.stamp))
}

/** Records a verified body as part `partNumber` of the upload, if the upload still exists. A
 * stamped part keeps its stamp and the stamp's time; where a part with a stamp at least as new is
 * there already, that one stays (and answers), and this one's bytes are dropped. */
function partRecorder(at: PartTarget, ctx: Context, sentStamp?: string): Recorder<PartInfo> {
  return (mutation, verified, created) => {
    const stamp = verified.endStamp ?? sentStamp
    const upload = findUpload(mutation, at.bucket, at.key, at.uploadId)
    if (!upload.ok) return upload
    const held = stamp === undefined ? undefined : mutation.part(at.uploadId, at.partNumber)
    if (stamp !== undefined && held?.stamp !== undefined && held.stamp >= stamp) {
      return ok({ value: partInfo(at.partNumber, held), createdBlob: false })
    }
    const createdBlob = mutation.addReference(verified.sha256, created)
    const record: PartRecord = {
      size: verified.size,
      etag: verified.etag,
      lastModifiedMs: stamp === undefined ? ctx.now() : stampWallMs(stamp),
      checksums: verified.checksums,
      sha256: verified.sha256,
      ...(stamp === undefined ? {} : { stamp }),
    }
    mutation.putPart(at.bucket, at.uploadId, at.partNumber, record)
    return ok({ value: partInfo(at.partNumber, record), createdBlob })
  }
}

export async function uploadPartCopy(
  state: StoreState,
  msg: PartCopyMsg,
  ctx: Context,
): Promise<Result<PartInfo>> {
  if (!(await ctx.blobs.admits(0))) return fail('insufficient_storage', NO_ROOM)
  const mutation = new Mutation(ctx.kv, state.shard)
  const upload = findUpload(mutation, msg.bucket, msg.key, msg.uploadId)
  if (!upload.ok) return upload
  if (mutation.bucket(msg.source.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${msg.source.bucket} does not exist`)
  }
  const found = findSource(ctx, mutation, msg.source)
  if (!found.ok) return found
  const source = found.value.record
  const allowed = checkCopySourceConditions(source, msg.conditions)
  if (!allowed.ok) return allowed
  const wanted = partCopyRange(msg.range, source.size)
  if (!wanted.ok) return wanted
  const range = wanted.value
  const blobs = blobsOf(source)
  const whole = range.start === 0 && range.end === source.size - 1
  const only = blobs[0]
  // An upload with a checksum algorithm needs the part's: a copy without it is read and hashed.
  const expect = copiedPartExpect(range, source, upload.value.checksum?.algorithm)
  const reusable = whole && etagIsMd5OfBytes({ partsCount: source.parts?.length })
  if (reusable && only !== undefined && expect.compute === undefined) {
    // The part is the source's blob: one more reference, no byte moves.
    mutation.referenceCopied(only.sha256)
    const record: PartRecord = {
      size: source.size,
      etag: source.etag,
      lastModifiedMs: ctx.now(),
      checksums: expect.checksums ?? {},
      sha256: only.sha256,
    }
    mutation.putPart(msg.bucket, msg.uploadId, msg.partNumber, record)
    await commitMutation(state, ctx, mutation)
    return ok(partInfo(msg.partNumber, record))
  }
  const [sending, receiving] = ctx.openStream()
  const sent = streamBlobs(state, ctx, mutation, sending, msg.deadlineMs, blobs)
  if (!sent.ok) return sent
  const bytes = ctx.source(receiving, msg.deadlineMs)
  bytes.request(range.start, range.end)
  const body: BodyMsg = {
    kind: 'upload.part',
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
    bucket: msg.bucket,
    key: msg.key,
    uploadId: msg.uploadId,
    partNumber: msg.partNumber,
    expect,
    stream: receiving,
  }
  const admit = (): Result<null> => ok(null)
  return storeBody(state, body, ctx, admit, partRecorder(msg, ctx), bytes)
}
