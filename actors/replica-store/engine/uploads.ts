/** @module Multipart uploads in progress: upload.create, upload.abort, upload.list (S3's
 * ListMultipartUploads), upload.list-parts, and the expiry of uploads left incomplete. An upload is
 * a record under U\0 (what the final object will carry), an entry in the expiry index X\0, and its
 * part records under P\0, each holding a reference to its blob; a part's bytes count in the
 * bucket's storage until the upload completes, is aborted or expires. Aborting removes all of it
 * in one batch, so no part and no blob outlives its upload. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { LIST_PARTS_MAX, LIST_UPLOADS_MAX, PART_NUMBER_MAX } from '../../../protocol/limits.js'
import type {
  ObjectMsg,
  PartInfo,
  PartListing,
  UploadCreated,
  UploadListing,
  UploadState,
} from '../../../protocol/messages.js'
import {
  abortedUploadKey,
  completedUploadKey,
  EXPIRY_PREFIX,
  expiryBound,
  expiryKey,
  isUploadId,
  partEnd,
  partKey,
  partNumberOf,
  partPrefix,
  openUploadKey,
  splitUploadKey,
  stampWallMs,
  successor,
  uploadEnd,
  uploadKey,
  uploadPrefix,
} from '../keys.js'
import { forgetCompletion } from './completed-uploads.js'
import { compareUtf8 } from '../../../protocol/key-order.js'
import { withAttributes } from '../../../protocol/object-attributes.js'
import { keyShard } from '../../../protocol/key-shard.js'
import { Mutation } from '../mutation.js'
import { checkPointList } from '../replication/point-checks.js'
import {
  decodePart,
  decodeText,
  decodeUpload,
  encodeRecord,
  partInfo,
  type UploadRecord,
} from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'

type Msg<K extends ObjectMsg['kind']> = Extract<ObjectMsg, { kind: K }>

interface UploadAt {
  bucket: string
  key: string
  uploadId: string
}

/** Random bytes after the time in an upload id (20 hex characters). */
const UPLOAD_ID_RANDOM_BYTES = 10
/** Uploads one expiry sweep aborts at most; the next sweep goes on. */
export const EXPIRY_BATCH_UPLOADS = 8
/** Rows an upload listing reads per scan while folding common prefixes. */
const UPLOAD_SCAN_ROWS = 64

export async function createUpload(
  state: StoreState,
  msg: Msg<'upload.create'>,
  ctx: Context,
): Promise<Result<UploadCreated>> {
  const mutation = new Mutation(ctx.kv, state.shard)
  if (mutation.bucket(msg.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
  }
  // Cluster mode: the coordinator chose the id and the time, equal on every replica; the same
  // create sent again, or one arriving after its upload ended here, changes nothing.
  const initiatedMs = msg.stamp === undefined ? ctx.now() : stampWallMs(msg.stamp)
  const uploadId = msg.uploadId ?? newUploadId(ctx, initiatedMs)
  assert(isUploadId(uploadId), 'the dispatcher validates a given upload id')
  if (msg.uploadId !== undefined && uploadState(mutation, msg.bucket, uploadId) !== 'unknown') {
    return ok({ uploadId })
  }
  const record: UploadRecord = {
    initiatedMs,
    http: msg.http,
    userMeta: msg.userMeta,
    ...withAttributes(msg.attributes),
  }
  if (msg.checksum !== undefined) record.checksum = msg.checksum
  mutation.put(uploadKey(msg.bucket, msg.key, uploadId), encodeRecord(record))
  mutation.put(expiryKey(initiatedMs, uploadId), encodeRecord({ bucket: msg.bucket, key: msg.key }))
  if (msg.stamp !== undefined) {
    mutation.put(openUploadKey(uploadId), encodeRecord({ bucket: msg.bucket, key: msg.key }))
  }
  await commitMutation(state, ctx, mutation)
  return ok({ uploadId })
}

/** 12 hex characters of the initiation time, then random ones (keys.ts isUploadId). */
function newUploadId(ctx: Context, initiatedMs: number): string {
  const time = Math.max(0, Math.floor(initiatedMs)).toString(16).padStart(12, '0').slice(-12)
  return time + Buffer.from(ctx.randomBytes(UPLOAD_ID_RANDOM_BYTES)).toString('hex')
}

/** An upload as this store knows it by id: in progress (created stamped), ended (its completion
 * or abort record kept) or unknown. */
function uploadState(mutation: Mutation, bucket: string, uploadId: string): UploadState {
  if (!isUploadId(uploadId)) return 'unknown'
  const inBucket = (stored: Uint8Array | undefined): boolean =>
    stored !== undefined && expiryTarget(decodeText(stored, 'upload location')).bucket === bucket
  if (inBucket(mutation.get(openUploadKey(uploadId)))) return 'open'
  const ended = [completedUploadKey(uploadId), abortedUploadKey(uploadId)]
  if (ended.some((key) => inBucket(mutation.get(key)))) return 'ended'
  return 'unknown'
}

/** upload.states: each upload's state here. */
export function uploadStates(msg: Msg<'upload.states'>, ctx: Context): Result<UploadState[]> {
  const listed = checkPointList(msg.uploadIds, 'uploads')
  if (!listed.ok) return listed
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(msg.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
  }
  return ok(msg.uploadIds.map((uploadId) => uploadState(mutation, msg.bucket, uploadId)))
}

/** The upload's record, or the failure S3 answers when there is none. */
export function findUpload(
  mutation: Mutation,
  bucket: string,
  key: string,
  uploadId: string,
): Result<UploadRecord> {
  if (mutation.bucket(bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  }
  const stored = isUploadId(uploadId) ? mutation.get(uploadKey(bucket, key, uploadId)) : undefined
  if (stored === undefined) return fail('no_such_upload', `no upload ${uploadId} of ${key}`)
  return ok(decodeUpload(stored))
}

/** Part numbers of an upload, ascending (at most PART_NUMBER_MAX exist). */
export function partNumbers(ctx: Context, uploadId: string): number[] {
  const rows = ctx.kv.scan({
    gte: partPrefix(uploadId),
    lt: partEnd(uploadId),
    limit: PART_NUMBER_MAX + 1,
  })
  assert(rows.length <= PART_NUMBER_MAX, 'more parts than part numbers')
  return rows.map(([key]) => partNumberOf(key))
}

/** Removes an upload's records and every part's reference in `mutation` (abort and expiry). */
export function removeUpload(
  mutation: Mutation,
  ctx: Context,
  at: { bucket: string; key: string; uploadId: string },
  upload: UploadRecord,
): void {
  for (const partNumber of partNumbers(ctx, at.uploadId)) {
    mutation.deletePart(at.bucket, at.uploadId, partNumber)
  }
  mutation.del(uploadKey(at.bucket, at.key, at.uploadId))
  mutation.del(expiryKey(upload.initiatedMs, at.uploadId))
  forgetOpenUpload(mutation, at.uploadId)
}

/** Removes the id index of an upload created stamped, when it ends. */
export function forgetOpenUpload(mutation: Mutation, uploadId: string): void {
  if (mutation.get(openUploadKey(uploadId)) !== undefined) mutation.del(openUploadKey(uploadId))
}

/** Keeps an abort's record for as long as completed uploads' (cluster mode: its replicas can then
 * tell an upload that ended from one they never heard of), with its expiry entry. */
function recordAbort(mutation: Mutation, at: UploadAt, abortedMs: number): void {
  const location = encodeRecord({ bucket: at.bucket, key: at.key })
  mutation.put(abortedUploadKey(at.uploadId), location)
  mutation.put(expiryKey(Math.max(0, Math.floor(abortedMs)), at.uploadId), location)
}

export async function abortUpload(
  state: StoreState,
  msg: Msg<'upload.abort'>,
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv, state.shard)
  const upload = findUpload(mutation, msg.bucket, msg.key, msg.uploadId)
  if (msg.stamp === undefined) {
    if (!upload.ok) return upload
    removeUpload(mutation, ctx, msg, upload.value)
    await commitMutation(state, ctx, mutation)
    return ok(null)
  }
  // Stamped: the abort is recorded even where the upload never arrived, so that a late create
  // or part of it finds it ended; the answer is as without a stamp.
  if (upload.ok) removeUpload(mutation, ctx, msg, upload.value)
  const known = upload.ok || upload.code === 'no_such_upload'
  if (
    known &&
    isUploadId(msg.uploadId) &&
    uploadState(mutation, msg.bucket, msg.uploadId) !== 'ended'
  ) {
    recordAbort(mutation, msg, stampWallMs(msg.stamp))
  }
  if (mutation.hasWrites()) await commitMutation(state, ctx, mutation)
  return upload.ok ? ok(null) : upload
}

export function listParts(msg: Msg<'upload.list-parts'>, ctx: Context): Result<PartListing> {
  assert(Number.isInteger(msg.afterPartNumber) && msg.afterPartNumber >= 0)
  assert(Number.isInteger(msg.maxParts) && msg.maxParts >= 0)
  const upload = findUpload(new Mutation(ctx.kv), msg.bucket, msg.key, msg.uploadId)
  if (!upload.ok) return upload
  const maxParts = Math.min(msg.maxParts, LIST_PARTS_MAX)
  const after = Math.min(msg.afterPartNumber, PART_NUMBER_MAX)
  const rows = ctx.kv.scanText({
    gt: after === 0 ? partPrefix(msg.uploadId) : partKey(msg.uploadId, after),
    lt: partEnd(msg.uploadId),
    limit: maxParts + 1,
  })
  const parts: PartInfo[] = rows
    .slice(0, maxParts)
    .map(([key, value]) => partInfo(partNumberOf(key), decodePart(value)))
  const last = parts[parts.length - 1]
  const listing: PartListing = {
    parts,
    truncated: rows.length > maxParts,
    nextPartNumberMarker: last?.partNumber ?? after,
    initiatedMs: upload.value.initiatedMs,
    http: upload.value.http,
  }
  if (upload.value.checksum !== undefined) listing.checksum = upload.value.checksum
  return ok(listing)
}

/** One page of ListMultipartUploads: uploads in (key, upload id) order after the markers, keys
 * under `prefix`, folded into common prefixes at `delimiter`. */
export function listUploads(msg: Msg<'upload.list'>, ctx: Context): Result<UploadListing> {
  assert(Number.isInteger(msg.maxUploads) && msg.maxUploads >= 0)
  if (new Mutation(ctx.kv).bucket(msg.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
  }
  const listing: UploadListing = {
    uploads: [],
    commonPrefixes: [],
    truncated: false,
    nextKeyMarker: null,
    nextUploadIdMarker: null,
  }
  const maxUploads = Math.min(msg.maxUploads, LIST_UPLOADS_MAX)
  if (maxUploads === 0) return ok(listing)
  const base = uploadPrefix(msg.bucket)
  const prefixEnd = msg.prefix === '' ? null : successor(msg.prefix)
  const end = prefixEnd === null ? uploadEnd(msg.bucket) : base + prefixEnd
  let cursor: { gte: string } | { gt: string } | null = startOf(msg, base)
  let last: { key: string; uploadId: string } | null = null
  for (let scans = 0; cursor !== null; scans++) {
    assert(scans <= 4 * maxUploads + 32, 'upload listing did not converge')
    const rows = ctx.kv.scanText({ ...cursor, lt: end, limit: UPLOAD_SCAN_ROWS })
    if (rows.length === 0) break
    const lastRow = rows[rows.length - 1] as [string, string]
    cursor = rows.length < UPLOAD_SCAN_ROWS ? null : { gt: lastRow[0] }
    for (const [storedKey, value] of rows) {
      const at = splitUploadKey(storedKey.slice(base.length))
      const entries = listing.uploads.length + listing.commonPrefixes.length
      const fold = msg.delimiter === '' ? -1 : at.key.indexOf(msg.delimiter, msg.prefix.length)
      if (entries === maxUploads) {
        listing.truncated = true
        cursor = null
        break
      }
      if (fold >= 0) {
        const common = at.key.slice(0, fold + msg.delimiter.length)
        // A common prefix a previous page ended with (its key marker) is not listed again.
        if (compareUtf8(common, msg.keyMarker) > 0) {
          listing.commonPrefixes.push(common)
          last = { key: common, uploadId: '' }
        }
        const past = successor(common)
        cursor = past === null ? null : { gte: base + past }
        break
      }
      const upload = decodeUpload(value)
      listing.uploads.push({ ...at, initiatedMs: upload.initiatedMs })
      last = at
    }
  }
  if (listing.truncated && last !== null) {
    listing.nextKeyMarker = last.key
    listing.nextUploadIdMarker = last.uploadId === '' ? null : last.uploadId
  }
  return ok(listing)
}

/** Where a listing starts: after the upload-id marker within the key marker, else after every
 * upload of the key marker (S3's rule), else at the prefix. */
function startOf(msg: Msg<'upload.list'>, base: string): { gte: string } | { gt: string } {
  if (msg.keyMarker === '' || compareUtf8(msg.keyMarker, msg.prefix) < 0) {
    return { gte: base + msg.prefix }
  }
  if (msg.uploadIdMarker !== '' && isUploadId(msg.uploadIdMarker)) {
    return { gt: `${base}${msg.keyMarker}\0${msg.uploadIdMarker}` }
  }
  // Every upload of the marker key itself sorts below `<marker>\x01`.
  return { gte: `${base}${msg.keyMarker}\x01` }
}

/** Aborts up to EXPIRY_BATCH_UPLOADS uploads initiated before `beforeMs`, oldest first, and
 * forgets completed uploads' records that old; returns how many entries it handled. */
export async function expireUploads(
  state: StoreState,
  ctx: Context,
  beforeMs: number,
): Promise<number> {
  const rows = ownExpiries(state, ctx, beforeMs)
  if (rows.length === 0) return 0
  const mutation = new Mutation(ctx.kv, state.shard)
  for (const { storedKey, uploadId, bucket, key } of rows) {
    if (bucket === undefined || key === undefined) {
      ctx.log.error({ uploadId }, 'expiry record is malformed: dropped')
      mutation.del(storedKey)
      continue
    }
    const upload = findUpload(mutation, bucket, key, uploadId)
    if (upload.ok) {
      removeUpload(mutation, ctx, { bucket, key, uploadId }, upload.value)
      if (state.catalog !== null) recordAbort(mutation, { bucket, key, uploadId }, ctx.now())
    } else {
      // Completed or aborted (the entry is its record's) or already gone.
      mutation.del(storedKey)
      forgetCompletion(mutation, uploadId)
      if (mutation.get(abortedUploadKey(uploadId)) !== undefined) {
        mutation.del(abortedUploadKey(uploadId))
      }
    }
  }
  await commitMutation(state, ctx, mutation)
  return rows.length
}

/** Pages of the expiry index read for one batch at most: a store shard skips other shards' keys,
 * which their owners expire. */
const EXPIRY_PAGES_MAX = 64

/** Up to EXPIRY_BATCH_UPLOADS entries of the expiry index before `beforeMs` whose keys this
 * store shard owns (a malformed entry: shard 0's), oldest first. */
function ownExpiries(
  state: StoreState,
  ctx: Context,
  beforeMs: number,
): { storedKey: string; uploadId: string; bucket?: string; key?: string }[] {
  const own: { storedKey: string; uploadId: string; bucket?: string; key?: string }[] = []
  const { shard, shards } = state.shard
  let from: { gte: string } | { gt: string } = { gte: EXPIRY_PREFIX }
  for (let page = 0; page < EXPIRY_PAGES_MAX; page++) {
    const rows = ctx.kv.scan({ ...from, lt: expiryBound(beforeMs), limit: EXPIRY_BATCH_UPLOADS })
    for (const [storedKey, value] of rows) {
      const target = expiryTarget(decodeText(value, 'expiry'))
      const owner =
        target.bucket === undefined || target.key === undefined
          ? 0
          : keyShard(target.bucket, target.key, shards)
      if (owner !== shard) continue
      own.push({ storedKey, uploadId: storedKey.slice(-32), ...target })
      if (own.length === EXPIRY_BATCH_UPLOADS) return own
    }
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < EXPIRY_BATCH_UPLOADS) return own
    from = { gt: last[0] }
  }
  return own
}

function expiryTarget(text: string): { bucket?: string; key?: string } {
  try {
    const parsed = JSON.parse(text) as { bucket?: unknown; key?: unknown }
    if (typeof parsed.bucket === 'string' && typeof parsed.key === 'string') {
      return { bucket: parsed.bucket, key: parsed.key }
    }
  } catch {
    // Malformed: the caller drops the record.
  }
  return {}
}
