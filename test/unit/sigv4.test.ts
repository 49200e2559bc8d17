/** @module SigV4 unit tests.
 * Goal: what an AWS SDK signs, http/s3/sigv4.ts verifies, and what was not signed that way fails
 * with the right code. Method: sign requests with an independent implementation
 * (@smithy/signature-v4 with @aws-crypto/sha256-js, configured as the S3 client configures it, and
 * the S3 client itself with a request handler that captures instead of sending), turn them into
 * the wire form a server receives, then parse and verify; tamper with copies for the failure
 * cases. The Amazon S3 documentation's worked examples are checked as fixed vectors. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Readable } from 'node:stream'
import { SignatureV4 } from '@smithy/signature-v4'
import { Sha256 } from '@aws-crypto/sha256-js'
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import type { Result } from '../../protocol/errors.js'
import {
  canonicalPath,
  canonicalQuery,
  deriveSigningKey,
  parseAmzDate,
  parseAuth,
  SigningKeyCache,
  verifyAuth,
  type SignedRequest,
  type VerifiedAuth,
} from '../../http/s3/sigv4.js'

const ACCESS_KEY = 'AKIDEXAMPLE'
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'
const NOW_MS = Date.UTC(2024, 0, 2, 3, 4, 5)
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
const HOST = 'localhost:9000'

const signer = new SignatureV4({
  credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  region: 'us-east-1',
  service: 's3',
  sha256: Sha256,
  uriEscapePath: false,
  applyChecksum: false,
})

interface SdkRequest {
  method: string
  protocol: string
  hostname: string
  port?: number
  path: string
  query: Record<string, string | string[] | null>
  headers: Record<string, string>
  body?: unknown
}

/** How the SDK escapes a query name or value (escapeUri) and an S3 key segment. */
function escapeUri(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase(),
  )
}

function keyPath(bucket: string, key: string): string {
  return `/${bucket}/${key.split('/').map(escapeUri).join('/')}`
}

/** The query string as @smithy/node-http-handler puts it on the wire. */
function wireQuery(query: SdkRequest['query']): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(query)) {
    if (value === null) parts.push(escapeUri(key))
    else if (Array.isArray(value))
      for (const v of value) parts.push(`${escapeUri(key)}=${escapeUri(v)}`)
    else parts.push(`${escapeUri(key)}=${escapeUri(value)}`)
  }
  return parts.join('&')
}

function toWire(request: SdkRequest): SignedRequest {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value
  return {
    method: request.method,
    rawPath: request.path,
    rawQuery: wireQuery(request.query),
    headers,
  }
}

function sdkRequest(
  method: string,
  path: string,
  query: SdkRequest['query'] = {},
  headers: Record<string, string> = {},
): SdkRequest {
  return {
    method,
    protocol: 'http:',
    hostname: 'localhost',
    port: 9000,
    path,
    query,
    headers: { host: HOST, 'x-amz-content-sha256': EMPTY_SHA256, ...headers },
  }
}

async function signed(request: SdkRequest, signingMs = NOW_MS): Promise<SignedRequest> {
  const result = (await signer.sign(request, { signingDate: new Date(signingMs) })) as SdkRequest
  return toWire(result)
}

/** The S3 presigner marks the payload UNSIGNED-PAYLOAD; like every x-amz-* header, it is hoisted
 * into the query as X-Amz-Content-Sha256. */
async function presigned(
  request: SdkRequest,
  expiresIn = 3600,
  signingMs = NOW_MS,
): Promise<SignedRequest> {
  const headers = { ...request.headers, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }
  const result = (await signer.presign(
    { ...request, headers },
    { signingDate: new Date(signingMs), expiresIn },
  )) as SdkRequest
  return toWire(result)
}

function check(req: SignedRequest, nowMs = NOW_MS, secret = SECRET_KEY): Result<VerifiedAuth> {
  const parsed = parseAuth(req, nowMs)
  if (!parsed.ok) return parsed
  return verifyAuth(parsed.value, req, secret, new SigningKeyCache())
}

function assertOk(result: Result<VerifiedAuth>): VerifiedAuth {
  if (!result.ok) throw new Error(`expected success, got ${result.code}: ${result.detail}`)
  return result.value
}

function assertCode(result: Result<unknown>, code: string): void {
  assert.is(result.ok, false, 'expected a failure')
  if (!result.ok) assert.is(result.code, code, result.detail)
}

test('GET with list-type=2 and a prefix full of reserved characters verifies', async () => {
  for (const prefix of ['a b', 'ünï/cödé', 'x+y', 'tilde~star*', "!'()", 'a=b&c', '%41', '']) {
    const req = await signed(sdkRequest('GET', '/bucket/', { 'list-type': '2', prefix }))
    const verified = assertOk(check(req))
    assert.is(verified.accessKey, ACCESS_KEY)
    assert.is(verified.scope, '20240102/us-east-1/s3/aws4_request')
    assert.equal(verified.payload, { kind: 'sha256', hex: EMPTY_SHA256 })
  }
})

test('query parameters without a value, repeated names and any order verify', async () => {
  const req = await signed(sdkRequest('GET', '/bucket/key', { uploads: '', b: ['2', '1'], a: 'z' }))
  assertOk(check(req))
  assertOk(check({ ...req, rawQuery: req.rawQuery.split('&').reverse().join('&') }))
  assertOk(check({ ...req, rawQuery: req.rawQuery.replace('uploads=', 'uploads') }))
})

test('query normalization: raw + is a plus, lower-case hex and escaped ~ are fine', async () => {
  const req = await signed(sdkRequest('GET', '/bucket/', { prefix: 'a+b~c d' }))
  assert.is(req.rawQuery, 'prefix=a%2Bb~c%20d')
  assertOk(check({ ...req, rawQuery: 'prefix=a+b%7ec%20d' }))
  assertCode(check({ ...req, rawQuery: 'prefix=a%20b~c%20d' }), 'signature_mismatch')
  assert.is(canonicalQuery('b=2&a=%7e&a=1&X-Amz-Signature=x', true), 'a=1&a=~&b=2')
  // A raw '=' inside a value is data: the canonical form escapes it, as the SDK signed it.
  const equals = await signed(sdkRequest('GET', '/bucket/', { prefix: 'a=b' }))
  assert.is(equals.rawQuery, 'prefix=a%3Db')
  assertOk(check({ ...equals, rawQuery: 'prefix=a=b' }))
  assert.is(canonicalQuery('x=1=2&y=3', false), 'x=1%3D2&y=3')
  assert.is(canonicalQuery('b=2&X-Amz-Signature=x', false), 'X-Amz-Signature=x&b=2')
})

test('PUT with keys that need encoding verifies, path encoded once', async () => {
  const body = 'hello'
  const hex = '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'
  for (const key of ['a b/c+d/ü/%2e%2e/x', '../x', 'x/./y//z', "sp ace!'()*", 'é/💾', 'k']) {
    const request = sdkRequest(
      'PUT',
      keyPath('bucket', key),
      {},
      {
        'x-amz-content-sha256': hex,
        'content-length': '5',
        'x-amz-meta-note': '  two   spaces  ',
      },
    )
    request.body = body
    const verified = assertOk(check(await signed(request)))
    assert.equal(verified.payload, { kind: 'sha256', hex })
  }
  assert.is(
    canonicalPath('/b/a%20b/c%2Bd/%C3%BC/%252e%252e/x'),
    '/b/a%20b/c%2Bd/%C3%BC/%252e%252e/x',
  )
  assert.is(canonicalPath('/b/%7e%2f+ü'), '/b/~%2F%2B%C3%BC')
  assert.is(canonicalPath(''), '/')
  // Already canonical: kept as sent. Escapes of unreserved characters, lower-case hex, a lone
  // '%' or a raw reserved character are not, and are decoded and encoded again.
  assert.is(canonicalPath('/b/A-z_0.9~/%2F%E2%82%AC'), '/b/A-z_0.9~/%2F%E2%82%AC')
  assert.is(canonicalPath('/b/%41%2D%5F%7E%30/%2e'), '/b/A-_~0/.')
  assert.is(canonicalPath('/b/%e2%82%ac/50%/%ZZ/!'), '/b/%E2%82%AC/50%25/%25ZZ/%21')
  assert.is(canonicalQuery('a=%5B%5d&b=x%3Dy&c=%7A', false), 'a=%5B%5D&b=x%3Dy&c=z')
})

test('a path signed raw with lower-case hex still verifies; a different key does not', async () => {
  const req = await signed(sdkRequest('GET', '/bucket/a%2fb'))
  assertOk(check(req))
  assertCode(check({ ...req, rawPath: '/bucket/a/b' }), 'signature_mismatch')
  assertCode(check({ ...req, rawPath: '/bucket/a%2fc' }), 'signature_mismatch')
})

test('presigned GET and PUT verify, payload unsigned', async () => {
  const get = await presigned(sdkRequest('GET', keyPath('bucket', 'photos/a b.jpg')), 600)
  const parsed = parseAuth(get, NOW_MS + 599_000)
  assert.ok(parsed.ok)
  if (parsed.ok) {
    assert.is(parsed.value.presigned, true)
    assert.equal(parsed.value.payload, { kind: 'unsigned' })
  }
  assertOk(check(get, NOW_MS + 599_000))
  const put = await presigned(
    sdkRequest(
      'PUT',
      keyPath('bucket', 'up+load'),
      { 'x-id': 'PutObject' },
      {
        'content-type': 'text/plain',
      },
    ),
  )
  assertOk(check(put))
  assertCode(check({ ...put, method: 'GET' }), 'signature_mismatch')
})

test('interleaved requests verify: what parsing remembers is keyed by its input', async () => {
  const a = await presigned(sdkRequest('GET', keyPath('bucket', 'a')))
  const b = await presigned(sdkRequest('GET', keyPath('bucket', 'b')), 60)
  const parsedA = parseAuth(a, NOW_MS)
  const parsedB = parseAuth(b, NOW_MS)
  assert.ok(parsedA.ok && parsedB.ok)
  if (!parsedA.ok || !parsedB.ok) return
  const cache = new SigningKeyCache()
  // A's query was split before B's: verifying A now must not see B's pairs.
  assertOk(verifyAuth(parsedA.value, a, SECRET_KEY, cache))
  assertOk(verifyAuth(parsedB.value, b, SECRET_KEY, cache))
  assertCode(
    verifyAuth(parsedA.value, { ...a, rawQuery: b.rawQuery }, SECRET_KEY, cache),
    'signature_mismatch',
  )
  // The same credential and header list parse to the same facts, request after request.
  assert.equal(parsedA.value.scope, parsedB.value.scope)
  assert.equal(parsedA.value.signedHeaders, ['host'])
  const malformed = { ...a, rawQuery: a.rawQuery.replace('aws4_request', 'aws5_request') }
  for (let round = 0; round < 2; round++)
    assertCode(parseAuth(malformed, NOW_MS), 'authorization_malformed')
  for (let n = 0; n < 600; n++) {
    const other = { ...a, rawQuery: a.rawQuery.replace('AKIDEXAMPLE', `AKID${n}`) }
    assert.ok(parseAuth(other, NOW_MS).ok) // Past any bound on what is remembered.
  }
  assertOk(check(a))
})

test('wrong secret, tampered header, path, query or method: signature_mismatch', async () => {
  const req = await signed(
    sdkRequest('PUT', '/bucket/key', { tagging: '' }, { 'x-amz-meta-owner': 'alice' }),
  )
  assertOk(check(req))
  assertCode(check(req, NOW_MS, SECRET_KEY + 'x'), 'signature_mismatch')
  const headers = { ...req.headers, 'x-amz-meta-owner': 'mallory' }
  assertCode(check({ ...req, headers }), 'signature_mismatch')
  assertCode(check({ ...req, rawPath: '/bucket/kez' }), 'signature_mismatch')
  assertCode(check({ ...req, rawQuery: 'acl=' }), 'signature_mismatch')
  assertCode(check({ ...req, method: 'POST' }), 'signature_mismatch')
  const flipped = req.headers['authorization']?.replace(
    /Signature=(.)/,
    (_, c: string) => `Signature=${c === '0' ? '1' : '0'}`,
  )
  assertCode(
    check({ ...req, headers: { ...req.headers, authorization: flipped ?? '' } }),
    'signature_mismatch',
  )
})

test('signed headers must be present, host signed, extra x-amz-* headers signed', async () => {
  const req = await signed(sdkRequest('GET', '/bucket/key', {}, { 'x-amz-meta-a': '1' }))
  const { 'x-amz-meta-a': _, ...withoutSigned } = req.headers
  assertCode(check({ ...req, headers: withoutSigned }), 'signature_mismatch')
  const extra = { ...req.headers, 'x-amz-copy-source': '/other/key' }
  assertCode(check({ ...req, headers: extra }), 'access_denied')
  const noHost = req.headers['authorization']?.replace('SignedHeaders=host;', 'SignedHeaders=')
  assertCode(
    check({ ...req, headers: { ...req.headers, authorization: noHost ?? '' } }),
    'authorization_malformed',
  )
  const put = await presigned(sdkRequest('PUT', '/bucket/key'))
  assertCode(
    check({ ...put, headers: { ...put.headers, 'x-amz-acl': 'public-read' } }),
    'access_denied',
  )
})

test('clock skew: 14 minutes is fine, 16 minutes either way is request_time_skewed', async () => {
  const req = await signed(sdkRequest('GET', '/bucket/key'))
  assertOk(check(req, NOW_MS + 14 * 60_000))
  assertOk(check(req, NOW_MS - 14 * 60_000))
  assertCode(check(req, NOW_MS + 16 * 60_000), 'request_time_skewed')
  assertCode(check(req, NOW_MS - 16 * 60_000), 'request_time_skewed')
})

test('presigned URLs expire, and may not be dated in the future', async () => {
  const req = await presigned(sdkRequest('GET', '/bucket/key'), 60)
  assertOk(check(req, NOW_MS + 60_000))
  assertCode(check(req, NOW_MS + 61_000), 'expired_request')
  assertOk(check(req, NOW_MS - 14 * 60_000))
  assertCode(check(req, NOW_MS - 16 * 60_000), 'request_time_skewed')
  const week = await presigned(sdkRequest('GET', '/bucket/key'), 604800)
  assertOk(check(week, NOW_MS + 604_000_000))
  const tooLong = {
    ...req,
    rawQuery: req.rawQuery.replace('X-Amz-Expires=60', 'X-Amz-Expires=604801'),
  }
  assertCode(check(tooLong), 'access_denied')
  const zero = { ...req, rawQuery: req.rawQuery.replace('X-Amz-Expires=60', 'X-Amz-Expires=0') }
  assertCode(check(zero), 'expired_request')
  const negative = {
    ...req,
    rawQuery: req.rawQuery.replace('X-Amz-Expires=60', 'X-Amz-Expires=-7'),
  }
  assertCode(check(negative), 'access_denied')
})

test('no credentials, SigV2, malformed header or scope, both mechanisms at once', async () => {
  const bare: SignedRequest = {
    method: 'GET',
    rawPath: '/b/k',
    rawQuery: '',
    headers: { host: HOST },
  }
  assertCode(parseAuth(bare, NOW_MS), 'access_denied')
  const v2 = { ...bare, headers: { host: HOST, authorization: 'AWS AKID:c2lnbmF0dXJl' } }
  const v2Result = parseAuth(v2, NOW_MS)
  assertCode(v2Result, 'authorization_malformed')
  if (!v2Result.ok) assert.match(v2Result.detail, /Version 2/)
  assertCode(
    parseAuth({ ...bare, rawQuery: 'AWSAccessKeyId=a&Signature=b&Expires=1' }, NOW_MS),
    'authorization_malformed',
  )
  const req = await signed(sdkRequest('GET', '/bucket/key'))
  const auth = req.headers['authorization'] ?? ''
  const withAuth = (value: string): SignedRequest => ({
    ...req,
    headers: { ...req.headers, authorization: value },
  })
  assertCode(
    parseAuth(withAuth(auth.replace('aws4_request', 'aws5_request')), NOW_MS),
    'authorization_malformed',
  )
  assertCode(
    parseAuth(withAuth(auth.replace('/20240102/', '/20240103/')), NOW_MS),
    'authorization_malformed',
  )
  assertCode(
    parseAuth(withAuth(auth.replace('Signature=', 'Signature=ab')), NOW_MS),
    'authorization_malformed',
  )
  assertCode(
    parseAuth(withAuth(auth.replace(', SignedHeaders', ', Foo=1, SignedHeaders')), NOW_MS),
    'authorization_malformed',
  )
  assertCode(
    parseAuth(withAuth(auth.replace('AWS4-HMAC-SHA256', 'AWS4-ECDSA-P256-SHA256')), NOW_MS),
    'authorization_malformed',
  )
  const both = { ...req, rawQuery: 'X-Amz-Algorithm=AWS4-HMAC-SHA256' }
  assertCode(parseAuth(both, NOW_MS), 'invalid_argument')
})

test('dates: x-amz-date must parse, Date header is the fallback', async () => {
  const req = await signed(sdkRequest('GET', '/bucket/key'))
  const { 'x-amz-date': amzDate, ...rest } = req.headers
  assertCode(parseAuth({ ...req, headers: rest }, NOW_MS), 'authorization_malformed')
  const bad = { ...req, headers: { ...req.headers, 'x-amz-date': '20240231T000000Z' } }
  assertCode(parseAuth(bad, NOW_MS), 'authorization_malformed')
  const dateHeader = { ...rest, date: new Date(NOW_MS).toUTCString() }
  const parsed = parseAuth({ ...req, headers: dateHeader }, NOW_MS)
  assert.ok(parsed.ok)
  if (parsed.ok) assert.is(parsed.value.amzDate, amzDate)
})

test('x-amz-content-sha256: required for header auth, mapped to a payload mode', async () => {
  const modes: Array<[string, string]> = [
    ['UNSIGNED-PAYLOAD', 'unsigned'],
    ['STREAMING-AWS4-HMAC-SHA256-PAYLOAD', 'streaming-signed'],
    ['STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER', 'streaming-signed-trailer'],
    ['STREAMING-UNSIGNED-PAYLOAD-TRAILER', 'streaming-unsigned-trailer'],
  ]
  for (const [value, kind] of modes) {
    const req = await signed(
      sdkRequest('PUT', '/bucket/key', {}, { 'x-amz-content-sha256': value }),
    )
    assert.is(assertOk(check(req)).payload.kind, kind)
  }
  const req = await signed(sdkRequest('GET', '/bucket/key'))
  const { 'x-amz-content-sha256': _, ...rest } = req.headers
  assertCode(parseAuth({ ...req, headers: rest }, NOW_MS), 'invalid_request')
  const odd = { ...req.headers, 'x-amz-content-sha256': 'STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD' }
  assertCode(parseAuth({ ...req, headers: odd }, NOW_MS), 'invalid_argument')
  const short = { ...req.headers, 'x-amz-content-sha256': 'abc' }
  assertCode(parseAuth({ ...req, headers: short }, NOW_MS), 'invalid_argument')
})

test('SigningKeyCache agrees with a fresh derivation and stays bounded', () => {
  const cache = new SigningKeyCache(4)
  const scope = { date: '20240102', region: 'us-east-1', service: 's3' }
  const key = cache.get(SECRET_KEY, scope)
  assert.equal(key.export(), deriveSigningKey(SECRET_KEY, scope).export())
  assert.is(cache.get(SECRET_KEY, scope), key, 'a hit returns the cached buffer')
  const other = { ...scope, region: 'eu-west-1' }
  for (let round = 0; round < 3; round++) {
    assert.is(cache.get(SECRET_KEY, scope), key, 'alternating scopes each get their own key')
    const derived = deriveSigningKey(SECRET_KEY, other).export()
    assert.equal(cache.get(SECRET_KEY, other).export(), derived)
  }
  for (let day = 10; day < 20; day++) cache.get(SECRET_KEY, { ...scope, date: `202401${day}` })
  assert.is(cache.size, 4)
  assert.not.equal(cache.get('other', scope).export(), key.export())
})

test('Amazon S3 documentation examples verify (header and query auth)', () => {
  const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
  const now = Date.UTC(2013, 4, 24)
  const credential = 'AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request'
  const getObject: SignedRequest = {
    method: 'GET',
    rawPath: '/test.txt',
    rawQuery: '',
    headers: {
      host: 'examplebucket.s3.amazonaws.com',
      range: 'bytes=0-9',
      'x-amz-content-sha256': EMPTY_SHA256,
      'x-amz-date': '20130524T000000Z',
      authorization:
        `AWS4-HMAC-SHA256 Credential=${credential},` +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    },
  }
  assertOk(check(getObject, now, secret))
  const putObject: SignedRequest = {
    method: 'PUT',
    rawPath: '/test%24file.text',
    rawQuery: '',
    headers: {
      host: 'examplebucket.s3.amazonaws.com',
      date: 'Fri, 24 May 2013 00:00:00 GMT',
      'x-amz-date': '20130524T000000Z',
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
      'x-amz-content-sha256': '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
      authorization:
        `AWS4-HMAC-SHA256 Credential=${credential},` +
        'SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,' +
        'Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd',
    },
  }
  assertOk(check(putObject, now, secret))
  const listObjects: SignedRequest = {
    ...getObject,
    rawPath: '/',
    rawQuery: 'max-keys=2&prefix=J',
    headers: {
      ...getObject.headers,
      authorization:
        `AWS4-HMAC-SHA256 Credential=${credential},` +
        'SignedHeaders=host;x-amz-content-sha256;x-amz-date,' +
        'Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
    },
  }
  const { range: _, ...listHeaders } = listObjects.headers
  assertOk(check({ ...listObjects, headers: listHeaders }, now, secret))
  const presignedGet: SignedRequest = {
    method: 'GET',
    rawPath: '/test.txt',
    rawQuery:
      'X-Amz-Algorithm=AWS4-HMAC-SHA256' +
      '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
      '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
      '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
    headers: { host: 'examplebucket.s3.amazonaws.com' },
  }
  assertOk(check(presignedGet, now, secret))
  assertCode(check(presignedGet, now + 86_401_000, secret), 'expired_request')
})

/** An S3 client whose requests are captured instead of sent; each gets an empty 200 answer. */
function capturingClient(): { client: S3Client; last: () => SdkRequest } {
  let captured: SdkRequest | null = null
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://localhost:9000',
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    requestHandler: {
      handle: (request: SdkRequest) => {
        captured = request
        const body = Readable.from([Buffer.from('<ListBucketResult></ListBucketResult>')])
        return Promise.resolve({ response: { statusCode: 200, headers: {}, body } })
      },
    },
  })
  return {
    client,
    last: () => {
      if (captured === null) throw new Error('no request captured')
      return captured
    },
  }
}

test('requests from @aws-sdk/client-s3 and its presigner verify', async () => {
  const { client, last } = capturingClient()
  await client.send(new PutObjectCommand({ Bucket: 'b', Key: 'a b/c+d/ü/%2e%2e/x', Body: 'hi' }))
  const put = toWire(last())
  assert.is(put.rawPath, '/b/a%20b/c%2Bd/%C3%BC/%252e%252e/x')
  assertOk(check(put, Date.now()))
  await client.send(new ListObjectsV2Command({ Bucket: 'b', Prefix: 'a b+c~*ü', MaxKeys: 5 }))
  assertOk(check(toWire(last()), Date.now()))
  await client.send(new GetObjectCommand({ Bucket: 'b', Key: "it's (1)*", Range: 'bytes=0-1' }))
  assertOk(check(toWire(last()), Date.now()))
  const url = new URL(
    await getSignedUrl(client, new GetObjectCommand({ Bucket: 'b', Key: 'x y+z' }), {
      expiresIn: 60,
    }),
  )
  const get: SignedRequest = {
    method: 'GET',
    rawPath: url.pathname,
    rawQuery: url.search.slice(1),
    headers: { host: url.host },
  }
  assertOk(check(get, Date.now()))
  client.destroy()
})

test('amz dates: real ones parse, impossible or malformed ones do not, asked twice or not', () => {
  for (let round = 0; round < 2; round++) {
    assert.is(parseAmzDate('20240102T030405Z'), NOW_MS)
    assert.is(parseAmzDate('20240229T235959Z'), Date.UTC(2024, 1, 29, 23, 59, 59))
    for (const impossible of [
      '20230229T000000Z',
      '20240231T000000Z',
      '20241301T000000Z',
      '20240101T240000Z',
      '20240101T006000Z',
      '20240101T000060Z',
      '00500101T000000Z',
      '2024-01-02T03:04:05Z',
      '20240102T030405',
      '',
    ]) {
      assert.is(parseAmzDate(impossible), null, impossible)
    }
  }
})

test.run()
