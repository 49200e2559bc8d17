/** Goal: Signature Version 2 is checked exactly as S3 computes it, for the header and the query
 * form. Method: Amazon's published examples (the johnsmith bucket), and signatures computed here by
 * hand (HMAC-SHA1 over a string to sign written out in full, subresources included). */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHmac } from 'node:crypto'
import { isSigV2, parseV2, stringToSignV2, verifyV2 } from '../../http/s3/sigv2.js'
import type { SignedRequest } from '../../http/s3/sigv4.js'

const ACCESS_KEY = 'AKIAIOSFODNN7EXAMPLE'
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
const DATE = 'Tue, 27 Mar 2007 19:36:42 +0000'
const DATE_MS = Date.parse(DATE)

function request(
  rawPath: string,
  rawQuery: string,
  headers: Record<string, string>,
): SignedRequest {
  return { method: 'GET', rawPath, rawQuery, headers }
}

function check(req: SignedRequest, nowMs: number, prefix = ''): ReturnType<typeof verifyV2> {
  const query = new URLSearchParams(req.rawQuery)
  assert.ok(isSigV2(req, query))
  const parsed = parseV2(req, query, nowMs)
  if (!parsed.ok) return parsed
  return verifyV2(parsed.value, req, query, SECRET, prefix)
}

test("Amazon's header example: GET /photos/puppy.jpg of johnsmith, virtual-hosted", () => {
  const req = request('/photos/puppy.jpg', '', {
    host: 'johnsmith.s3.amazonaws.com',
    date: DATE,
    authorization: `AWS ${ACCESS_KEY}:bWq2s1WEIj+Ydj0vQ697zp+IXMU=`,
  })
  assert.is(
    stringToSignV2(req, new URLSearchParams(), DATE, '/johnsmith'),
    `GET\n\n\n${DATE}\n/johnsmith/photos/puppy.jpg`,
  )
  assert.equal(check(req, DATE_MS, '/johnsmith'), { ok: true, value: null })
  assert.is(check(req, DATE_MS, '').ok, false, 'without the bucket the resource differs')
  const skewed = check(req, DATE_MS + 16 * 60_000, '/johnsmith')
  assert.is(skewed.ok ? '' : skewed.code, 'request_time_skewed')
})

test("Amazon's query example: a presigned GET with Expires", () => {
  const req = request(
    '/photos/puppy.jpg',
    `AWSAccessKeyId=${ACCESS_KEY}&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620`,
    { host: 'johnsmith.s3.amazonaws.com' },
  )
  assert.equal(check(req, 1175139620_000 - 1000, '/johnsmith'), { ok: true, value: null })
  const expired = check(req, 1175139620_000 + 1000, '/johnsmith')
  assert.is(expired.ok ? '' : expired.code, 'expired_request')
})

test('subresources, Content-MD5, Content-Type and x-amz-* headers are signed as S3 does', () => {
  const headers = {
    host: '127.0.0.1',
    'x-amz-date': DATE,
    'content-type': 'text/plain',
    'content-md5': 'XrY7u+Ae7tCTyyK7j1rNww==',
    'x-amz-meta-b': '  two   words ',
    'x-amz-meta-a': 'one',
  }
  // Written out by hand: Date empty (x-amz-date is given), amz headers sorted and folded, the
  // subresources sorted with their decoded values; list-type and max-keys are not subresources.
  const toSign = [
    'PUT',
    'XrY7u+Ae7tCTyyK7j1rNww==',
    'text/plain',
    '',
    'x-amz-date:' + DATE,
    'x-amz-meta-a:one',
    'x-amz-meta-b:two words',
    '/bucket/key?partNumber=2&uploadId=a b',
  ].join('\n')
  const signature = createHmac('sha1', SECRET).update(toSign).digest('base64')
  const req: SignedRequest = {
    method: 'PUT',
    rawPath: '/bucket/key',
    rawQuery: 'uploadId=a%20b&max-keys=3&partNumber=2',
    headers: { ...headers, authorization: `AWS ${ACCESS_KEY}:${signature}` },
  }
  assert.is(stringToSignV2(req, new URLSearchParams(req.rawQuery), '', ''), toSign)
  assert.equal(check(req, DATE_MS), { ok: true, value: null })
  const tampered = { ...req, headers: { ...req.headers, 'x-amz-meta-a': 'other' } }
  const mismatch = check(tampered, DATE_MS)
  assert.is(mismatch.ok ? '' : mismatch.code, 'signature_mismatch')
})

test('malformed credentials are AuthorizationHeaderMalformed-class errors', () => {
  const bad = request('/b/k', '', { date: DATE, authorization: 'AWS nocolon' })
  const parsed = parseV2(bad, new URLSearchParams(), DATE_MS)
  assert.is(parsed.ok ? '' : parsed.code, 'authorization_malformed')
  const noDate = request('/b/k', '', { authorization: `AWS ${ACCESS_KEY}:${'A'.repeat(27)}=` })
  const undated = parseV2(noDate, new URLSearchParams(), DATE_MS)
  assert.is(undated.ok ? '' : undated.code, 'access_denied')
})

test.run()
