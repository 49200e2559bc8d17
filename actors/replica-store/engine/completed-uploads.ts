/** @module Completed multipart uploads, remembered for a while: an SDK retries
 * CompleteMultipartUpload when its response was lost, and S3 answers the retry with the same result
 * instead of 404 NoSuchUpload. Each complete leaves one small record (M\0 upload id: bucket, key,
 * a digest of the parts list, ETag, time, version id) and an entry in the uploads' expiry index
 * at its completion time, so the expiry sweep removes it SVC_MULTIPART_EXPIRY_HOURS later: the
 * records are bounded by the completes of one expiry period, about 200 bytes each. */
import { createHash } from 'node:crypto'
import { ok, type Result } from '../../../protocol/errors.js'
import type { PutResult } from '../../../protocol/messages.js'
import { completedUploadKey, expiryKey, isUploadId } from '../keys.js'
import type { Mutation } from '../mutation.js'
import { decodeCompletedUpload, encodeRecord, type CompletedUploadRecord } from '../records.js'

interface UploadAt {
  bucket: string
  key: string
  uploadId: string
}

/** What identifies a parts list: each part number with its ETag (unquoted), in order. */
export function completedPartsDigest(parts: readonly (readonly [number, string])[]): string {
  const hash = createHash('sha256')
  for (const [partNumber, etag] of parts) hash.update(`${partNumber}:${etag}\n`)
  return hash.digest('hex')
}

/** Adds the completion's record and its expiry entry to the complete's own mutation. */
export function recordCompletion(
  mutation: Mutation,
  at: UploadAt,
  partsDigest: string,
  result: PutResult,
): void {
  const record: CompletedUploadRecord = {
    bucket: at.bucket,
    key: at.key,
    partsDigest,
    etag: result.etag,
    lastModifiedMs: result.lastModifiedMs,
  }
  if (result.versionId !== undefined) record.versionId = result.versionId
  if (Object.keys(result.checksums).length > 0) record.checksums = result.checksums
  if (result.checksumType !== undefined) record.checksumType = result.checksumType
  mutation.put(completedUploadKey(at.uploadId), encodeRecord(record))
  const completedMs = Math.max(0, Math.floor(result.lastModifiedMs))
  mutation.put(
    expiryKey(completedMs, at.uploadId),
    encodeRecord({ bucket: at.bucket, key: at.key }),
  )
}

/** The result a retried complete answers: that of the complete of the same upload of the same
 * key (in this bucket, not one deleted and created again since) with the same parts; null when
 * there was none, and the caller answers NoSuchUpload. */
export function retriedCompletion(
  mutation: Mutation,
  at: UploadAt,
  partsDigest: string,
): Result<PutResult> | null {
  if (!isUploadId(at.uploadId)) return null
  const stored = mutation.get(completedUploadKey(at.uploadId))
  if (stored === undefined) return null
  const record = decodeCompletedUpload(stored)
  const bucket = mutation.bucket(at.bucket)
  const same =
    record.bucket === at.bucket &&
    record.key === at.key &&
    record.partsDigest === partsDigest &&
    bucket !== undefined &&
    bucket.createdMs <= record.lastModifiedMs
  if (!same) return null
  const result: PutResult = {
    etag: record.etag,
    lastModifiedMs: record.lastModifiedMs,
    checksums: record.checksums ?? {},
  }
  if (record.versionId !== undefined) result.versionId = record.versionId
  if (record.checksumType !== undefined) result.checksumType = record.checksumType
  return ok(result)
}

/** Forgets a completion (the expiry sweep found its index entry due). */
export function forgetCompletion(mutation: Mutation, uploadId: string): void {
  if (isUploadId(uploadId)) mutation.del(completedUploadKey(uploadId))
}
