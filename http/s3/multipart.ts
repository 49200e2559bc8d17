/** @module S3 multipart upload operations: CreateMultipartUpload (POST ?uploads), UploadPart
 * (PUT ?partNumber&uploadId, streamed like PutObject), UploadPartCopy (the same with
 * x-amz-copy-source and an optional x-amz-copy-source-range), CompleteMultipartUpload (POST
 * ?uploadId), AbortMultipartUpload (DELETE ?uploadId), ListParts (GET ?uploadId) and
 * ListMultipartUploads (GET on the bucket with ?uploads). Each is one upload message to the
 * coordinator; the store decides what exists. */
import { lockedAttributes } from './object-lock.js'
import { objectActor } from '../../protocol/actor.js'
import { PART_BYTES_MAX, LIST_PARTS_MAX, LIST_UPLOADS_MAX } from '../../protocol/limits.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { PartInfo } from '../../protocol/messages.js'
import {
  completeUploadResultXml,
  copyPartResultXml,
  initiateUploadXml,
  listPartsXml,
  listUploadsXml,
  parseCompleteUpload,
  parsePartNumber,
} from './xml/s3-multipart-xml.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import type { Authenticated } from './authenticate.js'
import { declaredSize, readCheckedBody } from './body.js'
import { ownerOf, parseEncoding } from './buckets.js'
import {
  askCoordinator,
  objectLocation,
  send,
  sendError,
  sendXml,
  type S3Exchange,
} from './exchange.js'
import { checksumHeaders, parseHttpMeta, parseUserMeta, versionHeaders } from './object-headers.js'
import { expectations, headerChecksums, sendBody } from './objects.js'
import { parseCopySource } from '../../protocol/s3-rules/copy-source.js'
import { requestAttributes } from './object-attributes.js'
import { conditionsFrom, writeConditions } from './conditions.js'
import { parseUploadChecksum } from '../../protocol/multipart-checksum.js'

interface ObjectTarget {
  bucket: string
  key: string
}

/** A CompleteMultipartUpload body lists up to 10,000 parts, each with an ETag and perhaps a
 * checksum: about 150 bytes a part. */
const COMPLETE_BODY_BYTES_MAX = 4 * 1024 * 1024

export async function createMultipartUpload(ex: S3Exchange, at: ObjectTarget): Promise<void> {
  const userMeta = parseUserMeta(ex.headers)
  if (!userMeta.ok) return sendError(ex, userMeta.code, userMeta.detail)
  const checksum = parseUploadChecksum(
    ex.headers['x-amz-checksum-algorithm'],
    ex.headers['x-amz-checksum-type'],
  )
  if (!checksum.ok) return sendError(ex, checksum.code, checksum.detail)
  const attributes = lockedAttributes(ex, requestAttributes(ex.headers))
  if (!attributes.ok) return sendError(ex, attributes.code, attributes.detail)
  const reply = await askCoordinator(ex, {
    kind: 'upload.create',
    ...at,
    http: parseHttpMeta(ex.headers),
    userMeta: userMeta.value,
    ...(checksum.value === null ? {} : { checksum: checksum.value }),
    ...attributes.value,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  if (checksum.value !== null) {
    ex.outgoing.setHeader('x-amz-checksum-algorithm', checksum.value.algorithm.toUpperCase())
    ex.outgoing.setHeader('x-amz-checksum-type', checksum.value.type)
  }
  sendXml(ex, 200, initiateUploadXml({ ...at, uploadId: reply.value.uploadId }))
}

export async function uploadPart(
  ex: S3Exchange,
  auth: Authenticated,
  at: ObjectTarget,
  uploadId: string,
): Promise<void> {
  const partNumber = parsePartNumber(ex.query.get('partNumber') ?? '')
  if (!partNumber.ok) return sendError(ex, partNumber.code, partNumber.detail)
  const copySource = ex.headers['x-amz-copy-source']
  if (copySource !== undefined) {
    return uploadPartCopy(ex, at, uploadId, partNumber.value, copySource)
  }
  const size = declaredSize(ex, auth)
  if (!size.ok) return sendError(ex, size.code, size.detail)
  if (size.value > PART_BYTES_MAX) {
    return sendError(ex, 'entity_too_large', 'Your proposed upload exceeds the maximum part size')
  }
  const expect = expectations(ex, auth, size.value)
  if (!expect.ok) return sendError(ex, expect.code, expect.detail)
  const reply = await sendBody<PartInfo>(ex, auth, size.value, expect.value, {
    kind: 'upload.part',
    ...at,
    uploadId,
    partNumber: partNumber.value,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, 200, { etag: reply.value.etag, ...checksumHeaders(reply.value.checksums) })
}

/** x-amz-copy-source-range: `bytes=first-last`, both given, first <= last. */
function parseCopyRange(value: string | undefined): Result<{ start: number; end: number } | null> {
  if (value === undefined) return ok(null)
  const match = /^bytes=(\d{1,16})-(\d{1,16})$/.exec(value.trim())
  const start = Number(match?.[1])
  const end = Number(match?.[2])
  if (match === null || start > end) {
    return fail(
      'invalid_argument',
      'The x-amz-copy-source-range value must be of the form bytes=first-last where first and ' +
        'last are the zero-based offsets of the first and last bytes to copy',
    )
  }
  return ok({ start, end })
}

async function uploadPartCopy(
  ex: S3Exchange,
  at: ObjectTarget,
  uploadId: string,
  partNumber: number,
  header: string,
): Promise<void> {
  const source = parseCopySource(header)
  if (!source.ok) return sendError(ex, source.code, source.detail)
  const range = parseCopyRange(ex.headers['x-amz-copy-source-range'])
  if (!range.ok) return sendError(ex, range.code, range.detail)
  const reply = await ex.mesh.call(objectActor(ex.mesh.config), {
    kind: 'upload.part-copy',
    ...at,
    uploadId,
    partNumber,
    source: source.value,
    ...(range.value === null ? {} : { range: range.value }),
    conditions: conditionsFrom(ex.headers, 'x-amz-copy-source-'),
    requestId: ex.requestId,
    // A ranged copy moves up to 5 GiB inside the store: as long as a streamed part of that size.
    deadlineMs: ex.mesh.now() + 4 * CALL_TIMEOUT_MS,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  sendXml(ex, 200, copyPartResultXml(reply.value))
}

export async function completeMultipartUpload(
  ex: S3Exchange,
  auth: Authenticated,
  at: ObjectTarget,
  uploadId: string,
): Promise<void> {
  // Complete's x-amz-checksum-* headers name the whole object's checksum, not the XML body's.
  const body = await readCheckedBody(ex, auth, COMPLETE_BODY_BYTES_MAX, 'malformed_xml', false)
  if (!body.ok) return sendError(ex, body.code, body.detail)
  const parts = parseCompleteUpload(body.value)
  if (!parts.ok) return sendError(ex, parts.code, parts.detail)
  const conditions = writeConditions(ex.headers)
  const expect = headerChecksums(ex.headers)
  const reply = await askCoordinator(ex, {
    kind: 'upload.complete',
    ...at,
    uploadId,
    parts: parts.value,
    ...(conditions === null ? {} : { conditions }),
    ...(Object.keys(expect).length === 0 ? {} : { expect }),
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  const location = objectLocation(ex, at)
  for (const [name, value] of Object.entries(versionHeaders(reply.value))) {
    ex.outgoing.setHeader(name, value)
  }
  const { etag, checksums, checksumType } = reply.value
  const result = { location, ...at, etag, checksums }
  sendXml(ex, 200, completeUploadResultXml(checksumType ? { ...result, checksumType } : result))
}

export async function abortMultipartUpload(
  ex: S3Exchange,
  at: ObjectTarget,
  uploadId: string,
): Promise<void> {
  const reply = await askCoordinator(ex, {
    kind: 'upload.abort',
    ...at,
    uploadId,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  send(ex, 204, {})
}

/** A non-negative integer query parameter, capped at `cap` (S3 caps max-parts and max-uploads). */
export function parseCount(value: string | null, name: string, cap: number): Result<number> {
  if (value === null) return ok(cap)
  if (!/^\d{1,10}$/.test(value)) {
    return fail('invalid_argument', `Provided ${name} not an integer or within integer range`)
  }
  return ok(Math.min(Number(value), cap))
}

export async function listParts(ex: S3Exchange, at: ObjectTarget, uploadId: string): Promise<void> {
  const maxParts = parseCount(ex.query.get('max-parts'), 'max-parts', LIST_PARTS_MAX)
  if (!maxParts.ok) return sendError(ex, maxParts.code, maxParts.detail)
  const marker = parseCount(ex.query.get('part-number-marker') ?? '0', 'part-number-marker', 10_000)
  if (!marker.ok) return sendError(ex, marker.code, marker.detail)
  const reply = await askCoordinator(ex, {
    kind: 'upload.list-parts',
    ...at,
    uploadId,
    afterPartNumber: marker.value,
    maxParts: maxParts.value,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  const xml = listPartsXml({
    ...at,
    uploadId,
    listing: reply.value,
    partNumberMarker: marker.value,
    maxParts: maxParts.value,
    by: ownerOf(ex),
  })
  sendXml(ex, 200, xml)
}

export async function listMultipartUploads(ex: S3Exchange, bucket: string): Promise<void> {
  const query = ex.query
  const maxUploads = parseCount(query.get('max-uploads'), 'max-uploads', LIST_UPLOADS_MAX)
  if (!maxUploads.ok) return sendError(ex, maxUploads.code, maxUploads.detail)
  const encodingType = parseEncoding(query.get('encoding-type'))
  if (!encodingType.ok) return sendError(ex, encodingType.code, encodingType.detail)
  const keyMarker = query.get('key-marker') ?? ''
  const options = {
    prefix: query.get('prefix') ?? '',
    delimiter: query.get('delimiter') ?? '',
    keyMarker,
    // S3 ignores the upload-id marker without a key marker.
    uploadIdMarker: keyMarker === '' ? '' : (query.get('upload-id-marker') ?? ''),
    maxUploads: maxUploads.value,
  }
  const reply = await askCoordinator(ex, {
    kind: 'upload.list',
    bucket,
    ...options,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail, { BucketName: bucket })
  const xml = listUploadsXml({
    bucket,
    listing: reply.value,
    ...options,
    encodingType: encodingType.value,
    by: ownerOf(ex),
  })
  sendXml(ex, 200, xml)
}
