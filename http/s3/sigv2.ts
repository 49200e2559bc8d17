/** @module AWS Signature Version 2 for S3, which older SDKs and several tools still use (above all
 * for presigned URLs): the `Authorization: AWS <key>:<signature>` header and the query form
 * `?AWSAccessKeyId=&Expires=&Signature=`. The signature is base64 HMAC-SHA1 with the secret over
 * S3's string to sign: method, Content-MD5, Content-Type, Date (or Expires), the x-amz-* headers
 * and the resource with its subresources. Same two steps as SigV4 (sigv4.ts): parseV2 reads the
 * credentials and checks dates without a secret, verifyV2 recomputes the signature. The body is
 * not signed (Content-MD5, when sent, is checked by the store). */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { CLOCK_SKEW_MS_MAX } from '../../protocol/limits.js'
import type { SignedRequest } from './sigv4.js'

export interface ParsedV2 {
  accessKey: string
  /** Base64, as sent. */
  signature: string
  presigned: boolean
  /** The Date line of the string to sign: the Date header, '' with x-amz-date, or Expires. */
  dateLine: string
}

/** Query parameters that are part of the resource S3 signs (botocore's list for HmacV1). */
const SUBRESOURCES: ReadonlySet<string> = new Set([
  'accelerate',
  'acl',
  'analytics',
  'cors',
  'delete',
  'inventory',
  'legal-hold',
  'lifecycle',
  'location',
  'logging',
  'metrics',
  'notification',
  'object-lock',
  'partNumber',
  'policy',
  'replication',
  'requestPayment',
  'response-cache-control',
  'response-content-disposition',
  'response-content-encoding',
  'response-content-language',
  'response-content-type',
  'response-expires',
  'restore',
  'retention',
  'select',
  'select-type',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
  'versionId',
  'versioning',
  'versions',
  'website',
])

const ACCESS_KEY = /^[!-~]{1,128}$/
const SIGNATURE = /^[A-Za-z0-9+/]{27}=$/

/** True when the request carries SigV2 credentials (header or query). */
export function isSigV2(req: SignedRequest, query: URLSearchParams): boolean {
  const authorization = req.headers['authorization']
  if (authorization !== undefined) return authorization.startsWith('AWS ')
  return query.has('AWSAccessKeyId') || query.has('Signature')
}

export function parseV2(
  req: SignedRequest,
  query: URLSearchParams,
  nowMs: number,
): Result<ParsedV2> {
  const authorization = req.headers['authorization']
  if (authorization !== undefined) {
    const credentials = authorization.slice('AWS '.length)
    const colon = credentials.lastIndexOf(':')
    const accessKey = credentials.slice(0, colon)
    const signature = credentials.slice(colon + 1)
    if (colon <= 0 || !ACCESS_KEY.test(accessKey) || !SIGNATURE.test(signature)) {
      return fail('authorization_malformed', 'Authorization must be AWS <AccessKeyId>:<Signature>')
    }
    const amzDate = req.headers['x-amz-date']
    const date = amzDate ?? req.headers['date']
    const dateMs = date === undefined ? NaN : Date.parse(date)
    if (!Number.isFinite(dateMs)) {
      return fail('access_denied', 'AWS authentication requires a valid Date or x-amz-date header')
    }
    if (Math.abs(nowMs - dateMs) > CLOCK_SKEW_MS_MAX) {
      return fail('request_time_skewed', 'The difference between request time and now is too large')
    }
    const dateLine = amzDate === undefined ? (date ?? '') : ''
    return ok({ accessKey, signature, presigned: false, dateLine })
  }
  const accessKey = query.get('AWSAccessKeyId') ?? ''
  const signature = query.get('Signature') ?? ''
  const expires = query.get('Expires') ?? ''
  if (!ACCESS_KEY.test(accessKey) || !SIGNATURE.test(signature)) {
    return fail('authorization_malformed', 'Malformed AWSAccessKeyId or Signature')
  }
  if (!/^[0-9]{1,12}$/.test(expires)) {
    return fail('access_denied', 'Query-string authentication requires the Expires parameter')
  }
  if (Number(expires) * 1000 < nowMs) return fail('expired_request', 'Request has expired')
  return ok({ accessKey, signature, presigned: true, dateLine: expires })
}

/** Recomputes the signature with the secret of parsed.accessKey. `resourcePrefix` is `/bucket`
 * for a virtual-hosted request (the bucket is not in its path), else ''. */
export function verifyV2(
  parsed: ParsedV2,
  req: SignedRequest,
  query: URLSearchParams,
  secretKey: string,
  resourcePrefix: string,
): Result<null> {
  const toSign = stringToSignV2(req, query, parsed.dateLine, resourcePrefix)
  const expected = createHmac('sha1', secretKey).update(toSign, 'latin1').digest()
  const actual = Buffer.from(parsed.signature, 'base64')
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
    return fail('signature_mismatch', 'The request signature does not match the calculated one')
  }
  return ok(null)
}

/** S3's StringToSign for Signature Version 2. Header values are latin1 text, a character per byte
 * received, and are signed as those bytes. */
export function stringToSignV2(
  req: SignedRequest,
  query: URLSearchParams,
  dateLine: string,
  resourcePrefix: string,
): string {
  const amzHeaders = Object.keys(req.headers)
    .filter((name) => name.startsWith('x-amz-'))
    .sort()
    .map((name) => `${name}:${(req.headers[name] ?? '').replace(/\s+/g, ' ').trim()}\n`)
    .join('')
  const subresources = [...query.entries()]
    .filter(([name]) => SUBRESOURCES.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => (value === '' ? name : `${name}=${value}`))
  const resource =
    resourcePrefix + req.rawPath + (subresources.length > 0 ? `?${subresources.join('&')}` : '')
  return [
    req.method,
    req.headers['content-md5'] ?? '',
    req.headers['content-type'] ?? '',
    dateLine,
    amzHeaders + resource,
  ].join('\n')
}
