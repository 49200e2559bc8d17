/** @module Presigned URLs (SigV4 in the query), as the SDKs' presigners make them: a GET of one
 * object (or one of its versions) that anyone holding the URL may send until it expires. The
 * console's share links are made here, signed with the signed-in user's own S3 key, so the link
 * carries that user's rights and dies with the key. Built from the verifier's own pieces
 * (sigv4.ts), so what this signs is what the verifier checks. */
import {
  ALGORITHM,
  canonicalQuery,
  deriveSigningKey,
  formatAmzDate,
  hmacSha256Hex,
  scopeString,
  sha256Hex,
  UNSIGNED_PAYLOAD,
  uriEncode,
} from './sigv4.js'

export interface PresignInput {
  /** `http://host:port` or `https://host`: what the client will send as Host. */
  origin: string
  bucket: string
  key: string
  versionId?: string
  accessKey: string
  secretKey: string
  region: string
  nowMs: number
  expiresSeconds: number
}

/** `/bucket/key` with every segment encoded as the canonical request writes it. */
function encodedPath(bucket: string, key: string): string {
  const encode = (text: string): string => uriEncode(Buffer.from(text, 'utf8'))
  return `/${encode(bucket)}/${key.split('/').map(encode).join('/')}`
}

export function presignGet(input: PresignInput): string {
  const amzDate = formatAmzDate(input.nowMs)
  const scope = { date: amzDate.slice(0, 8), region: input.region, service: 's3' }
  const host = new URL(input.origin).host
  const params = new URLSearchParams({
    'X-Amz-Algorithm': ALGORITHM,
    'X-Amz-Credential': `${input.accessKey}/${scopeString(scope)}`,
    'X-Amz-Date': amzDate,
    'X-Amz-Expires': String(input.expiresSeconds),
    'X-Amz-SignedHeaders': 'host',
  })
  if (input.versionId !== undefined) params.set('versionId', input.versionId)
  // URLSearchParams writes spaces as '+': the canonical form (and S3) wants %20.
  const rawQuery = params.toString().replaceAll('+', '%20')
  const path = encodedPath(input.bucket, input.key)
  const canonical = [
    'GET',
    path,
    canonicalQuery(rawQuery, true),
    `host:${host}`,
    '',
    'host',
    UNSIGNED_PAYLOAD,
  ].join('\n')
  const toSign = `${ALGORITHM}\n${amzDate}\n${scopeString(scope)}\n${sha256Hex(canonical)}`
  const signature = hmacSha256Hex(deriveSigningKey(input.secretKey, scope), toSign)
  return `${input.origin}${path}?${rawQuery}&X-Amz-Signature=${signature}`
}
