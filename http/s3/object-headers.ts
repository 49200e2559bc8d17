/** @module Object metadata on the wire: which request headers are stored with an object
 * (Content-*, Cache-Control, Expires, x-amz-meta-*), and the headers GET/HEAD return for it,
 * including the `response-*` query overrides. */
import { fail, ok, type Result } from '../../protocol/errors.js'
import { USER_METADATA_BYTES_MAX } from '../../protocol/limits.js'
import type { ChecksumType, HttpMeta, ObjectInfo } from '../../protocol/objects.js'
import { checksumHeaderName } from '../../protocol/checksums.js'
import { metaValueFromHeader, metaValueToHeader } from './meta-text.js'
import { attributeHeaders } from './object-attributes.js'

/** Amazon S3's type for objects uploaded without one. */
const DEFAULT_CONTENT_TYPE = 'binary/octet-stream'

export function parseHttpMeta(headers: Record<string, string>): HttpMeta {
  const meta: HttpMeta = { contentType: headers['content-type'] ?? DEFAULT_CONTENT_TYPE }
  // aws-chunked is the transfer framing of this request, not part of the stored object: S3 drops
  // that token and keeps the rest of the value as sent.
  const encoding = (headers['content-encoding'] ?? '')
    .split(',')
    .filter((token) => token.trim().toLowerCase() !== 'aws-chunked')
    .join(',')
    .trim()
  if (encoding !== '') meta.contentEncoding = encoding
  const optional = [
    ['content-disposition', 'contentDisposition'],
    ['content-language', 'contentLanguage'],
    ['cache-control', 'cacheControl'],
    ['expires', 'expires'],
  ] as const
  for (const [header, field] of optional) {
    const value = headers[header]
    if (value !== undefined) meta[field] = value
  }
  return meta
}

export function parseUserMeta(headers: Record<string, string>): Result<Record<string, string>> {
  const meta: Record<string, string> = {}
  let bytes = 0
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith('x-amz-meta-')) continue
    const short = name.slice('x-amz-meta-'.length)
    const text = metaValueFromHeader(value)
    bytes += Buffer.byteLength(short) + Buffer.byteLength(text)
    meta[short] = text
  }
  if (bytes > USER_METADATA_BYTES_MAX) {
    return fail(
      'metadata_too_large',
      `Your metadata headers exceed the maximum allowed metadata size`,
    )
  }
  return ok(meta)
}

const OVERRIDES = [
  ['response-content-type', 'content-type'],
  ['response-content-language', 'content-language'],
  ['response-expires', 'expires'],
  ['response-cache-control', 'cache-control'],
  ['response-content-disposition', 'content-disposition'],
  ['response-content-encoding', 'content-encoding'],
] as const

/** Headers of a GET/HEAD answer for this object. */
export function objectHeaders(info: ObjectInfo, query: URLSearchParams): Record<string, string> {
  const headers: Record<string, string> = {
    etag: info.etag,
    'last-modified': new Date(info.lastModifiedMs).toUTCString(),
    'content-type': info.http.contentType,
    'accept-ranges': 'bytes',
  }
  const http = info.http
  if (http.contentEncoding !== undefined) headers['content-encoding'] = http.contentEncoding
  if (http.contentDisposition !== undefined)
    headers['content-disposition'] = http.contentDisposition
  if (http.contentLanguage !== undefined) headers['content-language'] = http.contentLanguage
  if (http.cacheControl !== undefined) headers['cache-control'] = http.cacheControl
  if (http.expires !== undefined) headers['expires'] = http.expires
  for (const [name, value] of Object.entries(info.userMeta)) {
    headers['x-amz-meta-' + name] = metaValueToHeader(value)
  }
  if (info.versionId !== undefined) headers['x-amz-version-id'] = info.versionId
  Object.assign(headers, attributeHeaders(info.attributes))
  for (const [param, header] of OVERRIDES) {
    const value = query.get(param)
    if (value !== null) headers[header] = value
  }
  return headers
}

/** x-amz-checksum-* headers of a stored object (returned when the client asks with
 * x-amz-checksum-mode: ENABLED, and on PUT responses), with x-amz-checksum-type when there is one:
 * FULL_OBJECT for a checksum of the bytes, COMPOSITE for a checksum of part checksums. */
export function checksumHeaders(
  checksums: ObjectInfo['checksums'],
  type: ChecksumType = 'FULL_OBJECT',
): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [algorithm, value] of Object.entries(checksums)) {
    if (value !== undefined && value !== '') {
      headers[checksumHeaderName(algorithm as keyof ObjectInfo['checksums'])] = value
      headers['x-amz-checksum-type'] = type
    }
  }
  return headers
}

/** x-amz-version-id of a write's answer, when the bucket has versioning configured. */
export function versionHeaders(result: { versionId?: string }): Record<string, string> {
  return result.versionId === undefined ? {} : { 'x-amz-version-id': result.versionId }
}
