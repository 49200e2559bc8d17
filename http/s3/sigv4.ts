/** @module SigV4: verifies AWS Signature Version 4 on incoming S3 requests, both the Authorization
 * header form and presigned URLs (query parameters). Two steps, so that the caller can look up the
 * secret in between: parseAuth checks syntax, dates and clock skew without any secret; verifyAuth
 * rebuilds the canonical request and compares signatures in constant time. The canonical request
 * follows what the AWS SDKs sign for S3 (path encoded once, not normalized for dot segments): the
 * raw path and query are percent-decoded and re-encoded with RFC 3986 unreserved characters kept,
 * which is the identity on what SDKs send and repairs harmless differences such as lower-case hex.
 * Derived signing keys live in a SigningKeyCache the caller owns; the module keeps only bounded
 * memos of pure parses (dates, credentials, signed-header lists, the last query split). */
import assert from 'node:assert/strict'
import { createHmac, createSecretKey, hash, timingSafeEqual, type KeyObject } from 'node:crypto'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { CLOCK_SKEW_MS_MAX, PRESIGN_EXPIRES_SECONDS_MAX } from '../../protocol/limits.js'

/** A request as received on the wire, before any decoding. */
export interface SignedRequest {
  method: string
  /** The path exactly as received, percent-encoded, without the query. */
  rawPath: string
  /** The query string exactly as received, without '?'. */
  rawQuery: string
  /** Lower-cased names; repeated headers already joined with ','. */
  headers: Record<string, string>
}

/** Shared between requests that carry the same credential: never changed. */
export interface CredentialScope {
  /** YYYYMMDD */
  readonly date: string
  readonly region: string
  readonly service: string
}

/** How the body is protected: x-amz-content-sha256, or X-Amz-Content-Sha256 when presigned. */
export type PayloadMode =
  | { kind: 'unsigned' }
  | { kind: 'sha256'; hex: string }
  | { kind: 'streaming-signed' }
  | { kind: 'streaming-signed-trailer' }
  | { kind: 'streaming-unsigned-trailer' }

export interface ParsedAuth {
  accessKey: string
  scope: CredentialScope
  /** ISO 8601 basic format, YYYYMMDDTHHMMSSZ, as it goes into the string to sign. */
  amzDate: string
  signedHeaders: readonly string[]
  /** 64 lower-case hex digits. */
  signature: string
  presigned: boolean
  payload: PayloadMode
  /** Last line of the canonical request, exactly as the client signed it. */
  payloadHash: string
}

export interface VerifiedAuth {
  accessKey: string
  /** kSigning, the HMAC key derived from the secret and the scope; signs chunks and trailers. */
  signingKey: HmacKey
  /** date/region/service/aws4_request */
  scope: string
  amzDate: string
  /** The request's own signature: the first link of the aws-chunked signature chain. */
  seedSignature: string
  payload: PayloadMode
}

export const ALGORITHM = 'AWS4-HMAC-SHA256'
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD'
export const EMPTY_SHA256_HEX = hash('sha256', '', 'hex')
const SCOPE_TERMINATOR = 'aws4_request'
const STREAMING_PAYLOADS: Record<string, PayloadMode> = {
  'STREAMING-AWS4-HMAC-SHA256-PAYLOAD': { kind: 'streaming-signed' },
  'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER': { kind: 'streaming-signed-trailer' },
  'STREAMING-UNSIGNED-PAYLOAD-TRAILER': { kind: 'streaming-unsigned-trailer' },
}
/** More signed headers than any client sends; bounds the work a hostile header can cause. */
const SIGNED_HEADERS_MAX = 64
/** Presigned query parameters that are ours, not the operation's; each may appear once. */
const PRESIGN_PARAMETERS = [
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
] as const
type PresignParameter = (typeof PRESIGN_PARAMETERS)[number]
const PRESIGN_PARAMETER_SET: ReadonlySet<string> = new Set(PRESIGN_PARAMETERS)

/** An HMAC key: a KeyObject where the key is used again. With the key as a Buffer, Node imports
 * the secret afresh for each HMAC, which costs several times the HMAC of a string to sign; a
 * KeyObject made once does not. */
export type HmacKey = KeyObject | Uint8Array

/** Derived signing keys per (secret, scope). Deriving costs four HMACs per request; a day's
 * requests from one key share one entry. Bounded: the least recently used entry goes first. */
export class SigningKeyCache {
  private readonly entries = new Map<string, KeyObject>()
  /** The entry used last, already the newest in `entries`: most requests ask for it again. */
  private newestKey = ''
  private newest: KeyObject | null = null

  constructor(readonly entriesMax = 256) {
    assert(Number.isInteger(entriesMax) && entriesMax > 0)
  }

  get size(): number {
    return this.entries.size
  }

  get(secretKey: string, scope: CredentialScope): KeyObject {
    // Date, region and service never contain '\n' (parseCredential), so the key is unambiguous.
    const cacheKey = `${scope.date}\n${scope.region}\n${scope.service}\n${secretKey}`
    if (cacheKey === this.newestKey && this.newest !== null) return this.newest
    const cached = this.entries.get(cacheKey)
    if (cached !== undefined) {
      this.newestKey = cacheKey
      this.newest = cached
      this.entries.delete(cacheKey) // Re-insert: Map order is our recency order.
      this.entries.set(cacheKey, cached)
      return cached
    }
    const derived = deriveSigningKey(secretKey, scope)
    if (this.entries.size >= this.entriesMax) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
    this.entries.set(cacheKey, derived)
    assert(this.entries.size <= this.entriesMax)
    this.newestKey = cacheKey
    this.newest = derived
    return derived
  }
}

export function deriveSigningKey(secretKey: string, scope: CredentialScope): KeyObject {
  let key: Buffer = hmacSha256(Buffer.from('AWS4' + secretKey, 'utf8'), scope.date)
  key = hmacSha256(key, scope.region)
  key = hmacSha256(key, scope.service)
  return createSecretKey(hmacSha256(key, SCOPE_TERMINATOR))
}

export function hmacSha256(key: HmacKey, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest()
}

/** A signature as hex, the digest encoded at once rather than through a Buffer. */
export function hmacSha256Hex(key: HmacKey, data: string): string {
  return createHmac('sha256', key).update(data, 'utf8').digest('hex')
}

/** SHA-256 of the bytes a latin1 string stands for, a character per byte. */
function latin1Sha256Hex(data: string): string {
  return hash('sha256', Buffer.from(data, 'latin1'), 'hex')
}

/** One-shot: no Hash object per call, which costs more than hashing a canonical request. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex')
}

export function scopeString(scope: CredentialScope): string {
  return `${scope.date}/${scope.region}/${scope.service}/${SCOPE_TERMINATOR}`
}

/** Constant-time comparison of two hex signatures; false (not a throw) on different lengths. */
export function signaturesEqual(expectedHex: string, actualHex: string): boolean {
  const expected = Buffer.from(expectedHex.toLowerCase(), 'latin1')
  const actual = Buffer.from(actualHex.toLowerCase(), 'latin1')
  if (expected.length !== actual.length) return false
  return timingSafeEqual(expected, actual)
}

/** Results of a pure parse, by input: the same few credentials, dates and header lists come
 * with request after request. Bounded by clearing when full, which a day's traffic of a few
 * hundred keys never does; a hostile stream of distinct inputs only costs the parses again. */
class ParseMemo<T> {
  private readonly results = new Map<string, T>()

  constructor(private readonly entriesMax = 256) {}

  get(input: string, parse: (input: string) => T): T {
    const known = this.results.get(input)
    if (known !== undefined) return known
    const result = parse(input)
    if (this.results.size >= this.entriesMax) this.results.clear()
    this.results.set(input, result)
    return result
  }
}

// ---------------------------------------------------------------------------------------------
// parseAuth

/** Reads the credentials of a request without its secret: which access key, which scope, whether
 * the request is fresh. Fails with access_denied when the request carries no credentials at all
 * (anonymous), so a caller that allows anonymous reads tests for exactly that code. */
export function parseAuth(
  req: SignedRequest,
  nowMs: number,
  absentPayloadHash?: string,
): Result<ParsedAuth> {
  const authorization = req.headers['authorization']
  const query = parseQuery(req.rawQuery)
  const presigned = query.some(
    ([key]) => key === 'X-Amz-Algorithm' || key === 'X-Amz-Credential' || key === 'X-Amz-Signature',
  )
  if (authorization !== undefined && presigned) {
    return fail('invalid_argument', 'Only one auth mechanism allowed')
  }
  if (authorization !== undefined) {
    return parseHeaderAuth(req, authorization, nowMs, absentPayloadHash)
  }
  if (presigned) return parsePresigned(query, nowMs)
  if (query.some(([key]) => key === 'AWSAccessKeyId' || key === 'Signature')) {
    // SigV2's own parser takes these; here they come with a SigV4 Authorization header too.
    return fail('authorization_malformed', 'Signature Version 2 query credentials are malformed')
  }
  return fail('access_denied', 'Request carries no credentials')
}

function parseHeaderAuth(
  req: SignedRequest,
  authorization: string,
  nowMs: number,
  absentPayloadHash: string | undefined,
): Result<ParsedAuth> {
  const fields = parseAuthorizationHeader(authorization)
  if (!fields.ok) return fields
  const { credential, signedHeaders, signature } = fields.value
  const credentials = parseCredential(credential)
  if (!credentials.ok) return credentials
  const headerList = parseSignedHeaders(signedHeaders)
  if (!headerList.ok) return headerList
  const date = requestDate(req.headers)
  if (!date.ok) return date
  const { accessKey, scope } = credentials.value
  if (scope.date !== date.value.amzDate.slice(0, 8)) {
    return fail('authorization_malformed', 'Credential scope date differs from X-Amz-Date')
  }
  if (Math.abs(nowMs - date.value.ms) > CLOCK_SKEW_MS_MAX) {
    return fail('request_time_skewed', 'The difference between request time and now is too large')
  }
  const payloadHash = req.headers['x-amz-content-sha256'] ?? absentPayloadHash
  if (payloadHash === undefined) {
    return fail('invalid_request', 'Missing required header x-amz-content-sha256')
  }
  const payload = payloadMode(payloadHash, true)
  if (!payload.ok) return payload
  return ok({
    accessKey,
    scope,
    amzDate: date.value.amzDate,
    signedHeaders: headerList.value,
    signature,
    presigned: false,
    payload: payload.value,
    payloadHash,
  })
}

interface AuthorizationFields {
  credential: string
  signedHeaders: string
  signature: string
}

/** `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`, fields in any order. */
function parseAuthorizationHeader(value: string): Result<AuthorizationFields> {
  const space = value.indexOf(' ')
  const algorithm = space < 0 ? value : value.slice(0, space)
  if (algorithm !== ALGORITHM) {
    const detail =
      algorithm === 'AWS'
        ? 'a Signature Version 2 Authorization header is `AWS <access key>:<signature>`'
        : `Unsupported authorization algorithm ${JSON.stringify(algorithm.slice(0, 40))}`
    return fail('authorization_malformed', detail)
  }
  const fields = new Map<string, string>()
  for (const part of value.slice(space + 1).split(',')) {
    const trimmed = part.trim()
    const equals = trimmed.indexOf('=')
    const name = trimmed.slice(0, equals)
    if (equals <= 0 || fields.has(name)) {
      return fail('authorization_malformed', 'Malformed Authorization header')
    }
    fields.set(name, trimmed.slice(equals + 1))
  }
  const credential = fields.get('Credential')
  const signedHeaders = fields.get('SignedHeaders')
  const signature = fields.get('Signature')
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    return fail(
      'authorization_malformed',
      'Authorization needs Credential, SignedHeaders, Signature',
    )
  }
  if (fields.size !== 3) return fail('authorization_malformed', 'Unknown Authorization field')
  const checked = parseSignature(signature)
  if (!checked.ok) return checked
  return ok({ credential, signedHeaders, signature: checked.value })
}

function parsePresigned(query: readonly QueryPair[], nowMs: number): Result<ParsedAuth> {
  const params = presignParameters(query)
  if (!params.ok) return params
  const get = (name: PresignParameter): string => params.value.get(name) ?? ''
  if (get('X-Amz-Algorithm') !== ALGORITHM) {
    return fail('authorization_malformed', 'X-Amz-Algorithm must be AWS4-HMAC-SHA256')
  }
  const credentials = parseCredential(get('X-Amz-Credential'))
  if (!credentials.ok) return credentials
  const headerList = parseSignedHeaders(get('X-Amz-SignedHeaders'))
  if (!headerList.ok) return headerList
  const signature = parseSignature(get('X-Amz-Signature'))
  if (!signature.ok) return signature
  const amzDate = get('X-Amz-Date')
  const dateMs = parseAmzDate(amzDate)
  if (dateMs === null) return fail('authorization_malformed', 'X-Amz-Date is not YYYYMMDDTHHMMSSZ')
  const expires = presignExpiry(get('X-Amz-Expires'))
  if (!expires.ok) return expires
  const expiresSeconds = expires.value
  const { accessKey, scope } = credentials.value
  if (scope.date !== amzDate.slice(0, 8)) {
    return fail('authorization_malformed', 'Credential scope date differs from X-Amz-Date')
  }
  if (dateMs - nowMs > CLOCK_SKEW_MS_MAX) {
    return fail('request_time_skewed', 'Presigned URL is dated in the future')
  }
  if (expiresSeconds === 0 || dateMs + expiresSeconds * 1000 < nowMs) {
    return fail('expired_request', 'Request has expired')
  }
  const payload = presignPayload(query)
  if (!payload.ok) return payload
  return ok({
    accessKey,
    scope,
    amzDate,
    signedHeaders: headerList.value,
    signature: signature.value,
    presigned: true,
    ...payload.value,
  })
}

/** X-Amz-Expires in seconds; out of range is 403 AccessDenied with S3's own messages. */
function presignExpiry(value: string): Result<number> {
  if (!/^-?[0-9]{1,16}$/.test(value)) {
    return fail('access_denied', 'X-Amz-Expires should be a number')
  }
  const seconds = Number(value)
  if (seconds < 0) return fail('access_denied', 'X-Amz-Expires must be non-negative')
  if (seconds > PRESIGN_EXPIRES_SECONDS_MAX) {
    return fail(
      'access_denied',
      `X-Amz-Expires must be less than a week (in seconds) that is ${PRESIGN_EXPIRES_SECONDS_MAX}`,
    )
  }
  return ok(seconds)
}

function presignParameters(query: readonly QueryPair[]): Result<Map<PresignParameter, string>> {
  const params = new Map<PresignParameter, string>()
  for (const [key, rawValue] of query) {
    if (!PRESIGN_PARAMETER_SET.has(key)) continue
    const name = key as PresignParameter
    if (params.has(name)) return fail('authorization_malformed', `${name} given more than once`)
    params.set(name, decodeComponent(rawValue))
  }
  const missing = PRESIGN_PARAMETERS.filter((name) => !params.has(name))
  if (missing.length > 0) {
    return fail('authorization_malformed', `Presigned URL lacks ${missing.join(', ')}`)
  }
  return ok(params)
}

/** Presigned URLs sign UNSIGNED-PAYLOAD unless the query names a hash; a named hash is enforced. */
function presignPayload(
  query: readonly QueryPair[],
): Result<{ payload: PayloadMode; payloadHash: string }> {
  const pair = query.find(([key]) => key === 'X-Amz-Content-Sha256')
  if (pair === undefined)
    return ok({ payload: { kind: 'unsigned' }, payloadHash: UNSIGNED_PAYLOAD })
  const payloadHash = decodeComponent(pair[1])
  const payload = payloadMode(payloadHash, false)
  if (!payload.ok) return payload
  return ok({ payload: payload.value, payloadHash })
}

function payloadMode(value: string, streamingAllowed: boolean): Result<PayloadMode> {
  if (value === UNSIGNED_PAYLOAD) return ok({ kind: 'unsigned' })
  if (/^[0-9a-fA-F]{64}$/.test(value)) return ok({ kind: 'sha256', hex: value.toLowerCase() })
  const streaming = STREAMING_PAYLOADS[value]
  if (streaming !== undefined && streamingAllowed) return ok(streaming)
  return fail('invalid_argument', `x-amz-content-sha256 ${JSON.stringify(value.slice(0, 80))}`)
}

type ParsedCredential = Result<{ accessKey: string; scope: CredentialScope }>

/** A client signs a day's requests with one credential and one list of signed headers. */
const credentials = new ParseMemo<ParsedCredential>()
const signedHeaderLists = new ParseMemo<Result<readonly string[]>>()

/** `AKID/YYYYMMDD/region/service/aws4_request`; the result is shared, never to be changed. */
export function parseCredential(credential: string): ParsedCredential {
  return credentials.get(credential, parseCredentialOnce)
}

function parseCredentialOnce(credential: string): ParsedCredential {
  const parts = credential.split('/')
  if (parts.length !== 5) {
    return fail(
      'authorization_malformed',
      'Credential must be AKID/date/region/service/aws4_request',
    )
  }
  const [accessKey = '', date = '', region = '', service = '', terminator = ''] = parts
  if (!/^[!-~]{1,128}$/.test(accessKey)) {
    return fail('authorization_malformed', 'Malformed access key ID in Credential')
  }
  if (!/^[0-9]{8}$/.test(date) || parseAmzDate(`${date}T000000Z`) === null) {
    return fail('authorization_malformed', 'Malformed date in Credential scope')
  }
  // Region and service become cache keys and log fields: a narrow alphabet keeps them printable.
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(region) || !/^[A-Za-z0-9._-]{1,64}$/.test(service)) {
    return fail('authorization_malformed', 'Malformed region or service in Credential scope')
  }
  if (terminator !== SCOPE_TERMINATOR) {
    return fail('authorization_malformed', 'Credential scope must end with aws4_request')
  }
  return ok({ accessKey, scope: { date, region, service } })
}

/** The result is shared, never to be changed. */
function parseSignedHeaders(value: string): Result<readonly string[]> {
  return signedHeaderLists.get(value, parseSignedHeadersOnce)
}

function parseSignedHeadersOnce(value: string): Result<readonly string[]> {
  const names = value.split(';')
  if (names.length > SIGNED_HEADERS_MAX) return fail('authorization_malformed', 'Too many headers')
  for (const name of names) {
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) {
      return fail('authorization_malformed', 'SignedHeaders must be lower-case names joined by ;')
    }
  }
  if (new Set(names).size !== names.length) {
    return fail('authorization_malformed', 'SignedHeaders names a header twice')
  }
  if (!names.includes('host')) return fail('authorization_malformed', 'host must be signed')
  return ok(names)
}

function parseSignature(value: string): Result<string> {
  if (!/^[0-9a-fA-F]{64}$/.test(value)) {
    return fail('authorization_malformed', 'Signature must be 64 hex digits')
  }
  return ok(value.toLowerCase())
}

/** The request time of header auth: x-amz-date, else the Date header (RFC 1123 or ISO basic). */
function requestDate(headers: Record<string, string>): Result<{ amzDate: string; ms: number }> {
  const amzDate = headers['x-amz-date']
  if (amzDate !== undefined) {
    const ms = parseAmzDate(amzDate)
    if (ms === null) return fail('authorization_malformed', 'x-amz-date is not YYYYMMDDTHHMMSSZ')
    return ok({ amzDate, ms })
  }
  const date = headers['date']
  if (date === undefined) return fail('authorization_malformed', 'Missing x-amz-date or Date')
  const basic = parseAmzDate(date)
  const ms = basic ?? Date.parse(date)
  if (!Number.isFinite(ms)) return fail('authorization_malformed', 'Unparseable Date header')
  return ok({ amzDate: formatAmzDate(ms), ms })
}

/** Dates parsed lately: requests of the same second carry the same X-Amz-Date, and credential
 * scopes the same day. */
const amzDates = new ParseMemo<number | null>()

/** Milliseconds since the epoch of `YYYYMMDDTHHMMSSZ`; null when malformed or not a real date. */
export function parseAmzDate(value: string): number | null {
  return amzDates.get(value, parseAmzDateOnce)
}

function parseAmzDateOnce(value: string): number | null {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value)
  if (match === null) return null
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = match
    .slice(1)
    .map(Number)
  const ms = Date.UTC(year, month - 1, day, hour, minute, second)
  // Date.UTC rolls 20240231 over into March and 24:00 into the next day: every field must survive.
  const date = new Date(ms)
  const exact =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second
  return exact ? ms : null
}

export function formatAmzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z')
}

// ---------------------------------------------------------------------------------------------
// verifyAuth

/** Recomputes the signature with the caller's secret for parsed.accessKey. The cache is the
 * caller's; without one, the signing key is derived afresh. */
export function verifyAuth(
  parsed: ParsedAuth,
  req: SignedRequest,
  secretKey: string,
  cache?: SigningKeyCache,
): Result<VerifiedAuth> {
  const headers = canonicalHeaders(parsed.signedHeaders, req.headers)
  if (!headers.ok) return headers
  const unsigned = Object.keys(req.headers).filter(
    (name) => name.startsWith('x-amz-') && !parsed.signedHeaders.includes(name),
  )
  if (unsigned.length > 0) {
    return fail('access_denied', `Headers present but not signed: ${unsigned.join(', ')}`)
  }
  const signingKey =
    cache?.get(secretKey, parsed.scope) ?? deriveSigningKey(secretKey, parsed.scope)
  const scope = scopeString(parsed.scope)
  const query = canonicalQuery(req.rawQuery, parsed.presigned)
  const signedHeaders = parsed.signedHeaders.join(';')
  const rest = `${query}\n${headers.value}\n\n${signedHeaders}\n${parsed.payloadHash}`
  const sign = (path: string, hashOf: (canonical: string) => string): string => {
    const canonical = `${req.method}\n${path}\n${rest}`
    const toSign = `${ALGORITHM}\n${parsed.amzDate}\n${scope}\n${hashOf(canonical)}`
    return hmacSha256Hex(signingKey, toSign)
  }
  const path = canonicalPath(req.rawPath)
  const paths = [path]
  // Some clients sign the path exactly as they sent it, e.g. with lower-case hex; the two spellings
  // name the same key, so accepting either weakens nothing.
  if (path !== req.rawPath && req.rawPath.startsWith('/')) paths.push(req.rawPath)
  // Header values are latin1 text, a character per byte received: S3 signs those bytes (UTF-8
  // metadata), not the UTF-8 of the latin1 text.
  const hashOf = /[\u0080-\u00ff]/.test(headers.value) ? latin1Sha256Hex : sha256Hex
  const matches = paths.some((candidate) =>
    signaturesEqual(sign(candidate, hashOf), parsed.signature),
  )
  if (!matches) {
    return fail('signature_mismatch', 'The request signature does not match the calculated one')
  }
  return ok({
    accessKey: parsed.accessKey,
    signingKey,
    scope,
    amzDate: parsed.amzDate,
    seedSignature: parsed.signature,
    payload: parsed.payload,
  })
}

/** `name:value` lines, values trimmed and inner runs of spaces collapsed as the SDKs do. */
function canonicalHeaders(
  signedHeaders: readonly string[],
  headers: Record<string, string>,
): Result<string> {
  const lines: string[] = []
  for (const name of signedHeaders) {
    const value = Object.hasOwn(headers, name) ? headers[name] : undefined
    if (value === undefined) {
      return fail('signature_mismatch', `Signed header ${name} is missing from the request`)
    }
    lines.push(`${name}:${value.replace(/[ \t]+/g, ' ').replace(/^ | $/g, '')}`)
  }
  return ok(lines.join('\n'))
}

/** The canonical URI for S3: each segment decoded and re-encoded once, slashes kept as they are. */
export function canonicalPath(rawPath: string): string {
  if (rawPath === '') return '/'
  if (isCanonicalComponent(rawPath.replaceAll('/', ''))) return rawPath
  return rawPath.split('/').map(canonicalComponent).join('/')
}

/** Unreserved characters and upper-case escapes: what the canonical encoding writes. */
const CANONICAL_COMPONENT = '(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})*'
const CANONICAL_FORM = new RegExp(`^${CANONICAL_COMPONENT}$`)
/** An escape of an unreserved character, which the canonical encoding writes as itself. */
const ESCAPED_UNRESERVED = /%(?:3[0-9]|4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|2D|2E|5F|7E)/

/** True when decoding `raw` and encoding it again gives `raw`: most paths and queries are sent
 * that way, and this check costs a fraction of the round trip. */
function isCanonicalComponent(raw: string): boolean {
  return CANONICAL_FORM.test(raw) && !ESCAPED_UNRESERVED.test(raw)
}

/** Canonical components joined as `name=value&name=value`, at most one '=' in each pair: a
 * second '=' belongs to the value, whose canonical form escapes it. */
const CANONICAL_PAIR = `${CANONICAL_COMPONENT}(?:=${CANONICAL_COMPONENT})?`
const CANONICAL_QUERY_FORM = new RegExp(`^${CANONICAL_PAIR}(?:&${CANONICAL_PAIR})*$`)

/** True when every name and value of the query is canonical (isCanonicalComponent of each). */
function isCanonicalQuery(rawQuery: string): boolean {
  return CANONICAL_QUERY_FORM.test(rawQuery) && !ESCAPED_UNRESERVED.test(rawQuery)
}

/** One path segment, query name or query value, decoded and encoded once. */
function canonicalComponent(raw: string): string {
  return isCanonicalComponent(raw) ? raw : uriEncode(percentDecode(raw))
}

/** Sorted by encoded name, then encoded value; presigned requests leave out X-Amz-Signature. */
export function canonicalQuery(rawQuery: string, presigned: boolean): string {
  // Most queries are canonical as sent (SDKs encode them so): then no component needs recoding.
  const recode = isCanonicalQuery(rawQuery) ? (raw: string) => raw : canonicalComponent
  const pairs: Array<[string, string]> = []
  for (const [rawKey, rawValue] of parseQuery(rawQuery)) {
    const key = recode(rawKey)
    if (presigned && key === 'X-Amz-Signature') continue
    pairs.push([key, recode(rawValue)])
  }
  // Plain code-unit order: the encoded strings are ASCII, so this is the byte order AWS uses.
  pairs.sort(([keyA, valueA], [keyB, valueB]) =>
    keyA < keyB ? -1 : keyA > keyB ? 1 : valueA < valueB ? -1 : valueA > valueB ? 1 : 0,
  )
  return pairs.map(([key, value]) => `${key}=${value}`).join('&')
}

type QueryPair = readonly [rawKey: string, rawValue: string]

/** The last query split: parseAuth and then verifyAuth split the same request's query. */
let lastQuery: { raw: string; pairs: readonly QueryPair[] } = { raw: '', pairs: [] }

/** Splits on '&' and the first '='; a name without '=' (`?uploads`) has the empty value. */
function parseQuery(rawQuery: string): readonly QueryPair[] {
  if (rawQuery === lastQuery.raw) return lastQuery.pairs
  const pairs = splitQuery(rawQuery)
  lastQuery = { raw: rawQuery, pairs }
  return pairs
}

function splitQuery(rawQuery: string): QueryPair[] {
  const pairs: QueryPair[] = []
  if (rawQuery === '') return pairs
  for (const part of rawQuery.split('&')) {
    if (part === '') continue
    const equals = part.indexOf('=')
    pairs.push(equals < 0 ? [part, ''] : [part.slice(0, equals), part.slice(equals + 1)])
  }
  return pairs
}

function decodeComponent(raw: string): string {
  // Nothing escaped and nothing beyond ASCII: the text is its own decoding.
  if (!/[%\u0080-\uffff]/.test(raw)) return raw
  if (/[\u0080-\uffff]/.test(raw)) return percentDecode(raw).toString('utf8')
  // ASCII with escapes (the credential's %2F): the native decoder's text is what decoding the
  // bytes would give, without the detour through a Buffer; malformed escapes or UTF-8 go byte-wise.
  try {
    return decodeURIComponent(raw)
  } catch {
    return percentDecodeBytewise(raw).toString('utf8')
  }
}

/** Bytes of a percent-encoded string. '+' stays '+': RFC 3986, not HTML forms. A '%' not followed
 * by two hex digits is taken literally. Characters beyond ASCII (never on the wire: Node refuses
 * them, but a caller may pass decoded text) count as their UTF-8 bytes. */
function percentDecode(raw: string): Buffer {
  if (!/[%\u0080-\uffff]/.test(raw)) return Buffer.from(raw, 'latin1')
  // The native decoder handles every well-formed input (the common case: presigned queries are
  // full of %2F) and gives the same bytes; malformed escapes or UTF-8 take the byte-wise path.
  try {
    return Buffer.from(decodeURIComponent(raw), 'utf8')
  } catch {
    return percentDecodeBytewise(raw)
  }
}

function percentDecodeBytewise(raw: string): Buffer {
  const bytes: number[] = []
  for (let i = 0; i < raw.length; i++) {
    const code = raw.charCodeAt(i)
    if (code === 0x25 && /^[0-9a-fA-F]{2}$/.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16))
      i += 2
    } else if (code < 0x80) {
      bytes.push(code)
    } else {
      const character = String.fromCodePoint(raw.codePointAt(i) ?? code)
      bytes.push(...Buffer.from(character, 'utf8'))
      i += character.length - 1
    }
  }
  return Buffer.from(bytes)
}

const HEX_UPPER = '0123456789ABCDEF'

/** RFC 3986 encoding as the AWS SDKs do it: only A-Z a-z 0-9 - _ . ~ stay literal. */
export function uriEncode(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) {
    const unreserved =
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      (byte >= 0x30 && byte <= 0x39) ||
      byte === 0x2d ||
      byte === 0x5f ||
      byte === 0x2e ||
      byte === 0x7e
    out += unreserved
      ? String.fromCharCode(byte)
      : '%' + (HEX_UPPER[byte >> 4] ?? '') + (HEX_UPPER[byte & 15] ?? '')
  }
  return out
}
