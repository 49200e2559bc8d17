/** @module S3's rules of CopyObject and UploadPartCopy, decided here for the single node's store
 * and the cluster's coordinator alike (a copy takes the source's record on one node where it can,
 * and reads the source's bytes in a cluster; what the client sees may not differ):
 * - a copy of an object onto itself must change something (REPLACE metadata, or name a source
 *   version, which restores that version); S3's InvalidRequest otherwise, checked before the
 *   source is looked at;
 * - a delete marker is no source: named by version id it is InvalidRequest, as the current
 *   version NoSuchKey;
 * - x-amz-copy-source-if-* decide as RFC 7232 for a read, but every failure is 412;
 * - CopyObject copies at most SINGLE_PUT_BYTES_MAX (larger objects copy by UploadPartCopy);
 * - metadata is the source's (COPY) or the request's (REPLACE); the version's attributes (its
 *   tags ...) as protocol/object-attributes.ts says;
 * - a copy's ETag, and a copied part's, is the MD5 of its data: a copy of an object
 *   CompleteMultipartUpload made is one new object, and keeps only the checksums of its bytes;
 * - UploadPartCopy's range is within the source, and a COMPOSITE checksum, which is one of the
 *   parts' checksums and not of the bytes, is no checksum of a copy's bytes.
 * UploadPartCopy looks for its upload before its source: NoSuchUpload comes before any answer
 * about the source. */
import { fail, ok, type Result } from '../errors.js'
import { SINGLE_PUT_BYTES_MAX } from '../limits.js'
import type {
  ChecksumAlgorithm,
  Checksums,
  ChecksumType,
  Conditions,
  HttpMeta,
} from '../objects.js'
import { evaluateConditions } from './conditions.js'
import { checksumToCompute } from './multipart.js'

interface ObjectAt {
  bucket: string
  key: string
}

/** S3's wording for a copy onto itself that changes nothing. */
export const SELF_COPY_REFUSED =
  'This copy request is illegal because it is trying to copy an object to itself without ' +
  "changing the object's metadata, storage class, website redirect location or encryption " +
  'attributes.'

/** Refuses a copy of the current version onto its own key that keeps its metadata. */
export function checkSelfCopy(
  source: ObjectAt & { versionId?: string },
  target: ObjectAt,
  replacesMetadata: boolean,
): Result<null> {
  const samePlace = source.bucket === target.bucket && source.key === target.key
  if (samePlace && !replacesMetadata && source.versionId === undefined) {
    return fail('invalid_request', SELF_COPY_REFUSED)
  }
  return ok(null)
}

/** Whether an object's ETag is the MD5 of its bytes: unless CompleteMultipartUpload made it
 * (`partsCount` set). Only then may a copy, or a copied part, take the source's record (its
 * ETag); a copy of any other is a new object of its bytes. */
export function etagIsMd5OfBytes(source: { partsCount?: number | undefined }): boolean {
  return source.partsCount === undefined
}

/** What a copy answers when its source version is a delete marker. */
export function markerAsSource(source: ObjectAt, marker: { byId: boolean }): Result<never> {
  if (marker.byId) {
    return fail(
      'invalid_request',
      'The source of a copy request may not specifically refer to a delete marker by version id.',
    )
  }
  return fail('no_such_key', `no key ${source.key} in ${source.bucket}`)
}

/** The source's x-amz-copy-source-if-* conditions. */
export function checkCopySourceConditions(
  source: { etag: string; lastModifiedMs: number },
  conditions: Conditions,
): Result<null> {
  const refused = evaluateConditions(source, conditions, 'copy')
  return refused === null ? ok(null) : fail(refused, 'copy source precondition failed')
}

/** CopyObject's source size, in S3's words when it is over. */
export function checkCopySourceSize(size: number): Result<null> {
  if (size <= SINGLE_PUT_BYTES_MAX) return ok(null)
  return fail(
    'invalid_request',
    'The specified copy source is larger than the maximum allowable size for a copy source: ' +
      String(SINGLE_PUT_BYTES_MAX),
  )
}

/** The copy's metadata: the source's, or the request's (REPLACE). */
export function copiedMetadata(
  source: { http: HttpMeta; userMeta: Record<string, string> },
  request: { replace?: { http: HttpMeta; userMeta: Record<string, string> } },
): { http: HttpMeta; userMeta: Record<string, string> } {
  return {
    http: request.replace?.http ?? source.http,
    userMeta: request.replace?.userMeta ?? source.userMeta,
  }
}

/** UploadPartCopy's inclusive byte range: all of the source without one, else within it. */
export function partCopyRange(
  range: { start: number; end: number } | undefined,
  size: number,
): Result<{ start: number; end: number }> {
  const wanted = range ?? { start: 0, end: size - 1 }
  if (wanted.start > wanted.end || wanted.end >= size) {
    return fail('invalid_range', `range ${wanted.start}-${wanted.end} of ${size} bytes`)
  }
  return ok(wanted)
}

/** The source's checksums that describe its bytes, which a copy of all of them keeps and
 * verifies: none of a COMPOSITE one. */
export function checksumsOfBytes(source: {
  checksums: Checksums
  checksumType?: ChecksumType
}): Checksums {
  return source.checksumType === 'COMPOSITE' ? {} : source.checksums
}

/** What a copied part's bytes must be and carry: their size; the source's checksums when the part
 * is all of its bytes (verified as they pass); and the checksum of the upload's algorithm
 * (`algorithm`) computed when those do not hold it. */
export function copiedPartExpect(
  range: { start: number; end: number },
  source: { size: number; checksums: Checksums; checksumType?: ChecksumType },
  algorithm: ChecksumAlgorithm | undefined,
): { size: number; checksums?: Checksums; compute?: ChecksumAlgorithm } {
  const whole = range.start === 0 && range.end === source.size - 1
  const carried = whole ? checksumsOfBytes(source) : {}
  const compute = checksumToCompute(algorithm, carried)
  return {
    size: range.end - range.start + 1,
    ...(Object.keys(carried).length === 0 ? {} : { checksums: carried }),
    ...(compute === undefined ? {} : { compute }),
  }
}

/** x-amz-copy-source: `bucket/key`, URL-encoded, with an optional `?versionId=`. */
export function parseCopySource(
  header: string,
): Result<{ bucket: string; key: string; versionId?: string }> {
  const [path = '', query] = header.split('?', 2)
  const versionId = query === undefined ? null : new URLSearchParams(query).get('versionId')
  let decoded: string
  try {
    decoded = decodeURIComponent(path.startsWith('/') ? path.slice(1) : path)
  } catch {
    return fail('invalid_argument', 'Copy Source must mention the source bucket and key')
  }
  const slash = decoded.indexOf('/')
  if (slash <= 0 || slash === decoded.length - 1) {
    return fail('invalid_argument', 'Copy Source must mention the source bucket and key')
  }
  const source = { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1) }
  return ok(versionId === null ? source : { ...source, versionId })
}
