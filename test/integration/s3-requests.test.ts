/** Goal: requests and headers are taken as Amazon S3 takes them: bodies without a length, odd
 * Expect headers, metadata beyond ASCII, aws-chunked in Content-Encoding, keys that are not UTF-8,
 * presigned URLs out of date or range, version ids only where versioning is on (streamed and
 * multipart writes too, which take other paths through a cluster's coordinator), and pipelined
 * requests answered in order. Method: the real server as a child process, driven by
 * @aws-sdk/client-s3 where it can say the request, else by raw requests signed with the
 * independent @smithy/signature-v4, sent by node:http or written to a raw socket. */
import * as assert from 'uvu/assert'
import { createHmac } from 'node:crypto'
import { connect } from 'node:net'
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { ACCESS_KEY, SECRET_KEY } from '../support/server.js'
import { firstWithin } from '../../protocol/timing.js'
import {
  errorCode,
  send,
  signedRequest,
  signRequest,
  type RawRequest,
  type RawResponse,
} from '../support/signed-request.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'requests'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, [
  'a chunked PUT with x-amz-decoded-content-length',
  'a request with Expect: ',
  'UTF-8 metadata is signed',
  'pipelined requests are answered in order',
  'an early answer reaches a client',
  'SigV2 header auth: ',
])

function request(req: RawRequest): Promise<RawResponse> {
  return signedRequest(server.url, req)
}

function expectStatus(response: RawResponse, status: number, what = ''): void {
  assert.is(response.status, status, `${what} status; body: ${response.body.toString()}`)
}

function expectError(response: RawResponse, status: number, code: string, what = ''): void {
  expectStatus(response, status, what)
  assert.is(errorCode(response), code, `${what} code; body: ${response.body.toString()}`)
}

async function getBody(key: string): Promise<RawResponse> {
  return request({ method: 'GET', path: `/${BUCKET}/${encodeURIComponent(key)}` })
}

/** Writes `raw` to a fresh connection and reads until the server closes it or `count` responses
 * (each with a Content-Length) have arrived; bounded by 10 s. */
async function rawExchange(raw: Buffer | string, count: number): Promise<string> {
  const url = new URL(server.url)
  const socket = connect(Number(url.port), url.hostname)
  const answer = new Promise<string>((resolve) => {
    let text = ''
    socket.on('data', (data: Buffer) => {
      text += data.toString('latin1')
      if (completeResponses(text) >= count) resolve(text)
    })
    socket.on('close', () => resolve(text))
    socket.on('error', () => resolve(text))
  })
  socket.write(raw)
  const text = (await firstWithin([answer], 10_000)) ?? 'no answer'
  socket.destroy()
  return text
}

/** How many whole responses (status line, headers, Content-Length bytes) `text` holds. */
function completeResponses(text: string): number {
  let count = 0
  let at = 0
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at)
    if (end === -1) return count
    const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(at, end))?.[1] ?? '0'
    const next = end + 4 + Number(length)
    if (next > text.length) return count
    count++
    at = next
  }
}

/** A signed request as the text of an HTTP/1.1 request, body included. */
async function rawRequest(req: RawRequest): Promise<string> {
  const signed = await signRequest(server.url, req)
  const lines = [`${req.method} ${signed.pathAndQuery} HTTP/1.1`]
  for (const [name, value] of Object.entries(signed.headers)) lines.push(`${name}: ${value}`)
  return lines.join('\r\n') + '\r\n\r\n' + (req.body?.toString() ?? '')
}

function statusLines(text: string): string[] {
  return text.match(/HTTP\/1\.1 \d{3}/g) ?? []
}

// ---------------------------------------------------------------------------------------------
// Bodies without a Content-Length

test('a PUT with neither Content-Length nor aws-chunked is 411 MissingContentLength', async () => {
  const response = await request({
    method: 'PUT',
    path: `/${BUCKET}/no-length`,
    headers: { 'transfer-encoding': 'chunked' },
    body: 'hello',
  })
  expectError(response, 411, 'MissingContentLength')
  expectError(await getBody('no-length'), 404, 'NoSuchKey')
})

test('a chunked PUT with x-amz-decoded-content-length stores its bytes', async () => {
  const body = 'chunked transfer, length declared'
  const response = await request({
    method: 'PUT',
    path: `/${BUCKET}/decoded-length`,
    headers: {
      'transfer-encoding': 'chunked',
      'x-amz-decoded-content-length': String(body.length),
    },
    body,
  })
  expectStatus(response, 200, 'put')
  const got = await getBody('decoded-length')
  expectStatus(got, 200, 'get')
  assert.is(got.body.toString(), body)
  const short = await request({
    method: 'PUT',
    path: `/${BUCKET}/decoded-short`,
    headers: { 'transfer-encoding': 'chunked', 'x-amz-decoded-content-length': '100' },
    body,
  })
  expectError(short, 400, 'IncompleteBody', 'fewer bytes than declared')
})

// ---------------------------------------------------------------------------------------------
// Expect

for (const expect of ['', 'something-else']) {
  test(`a request with Expect: ${JSON.stringify(expect)} is served`, async () => {
    const put = await rawRequest({
      method: 'PUT',
      path: `/${BUCKET}/expect`,
      headers: { 'content-length': '2', expect },
      body: 'ok',
    })
    const text = await rawExchange(put, 1)
    assert.match(text, /^HTTP\/1\.1 200/, text)
    const got = await getBody('expect')
    assert.is(got.body.toString(), 'ok')
  })
}

// ---------------------------------------------------------------------------------------------
// Metadata beyond ASCII

test('UTF-8 metadata is signed over its bytes and reads back as sent', async () => {
  const value = 'café ☕'
  const put = await rawRequest({
    method: 'PUT',
    path: `/${BUCKET}/meta-utf8`,
    headers: { 'content-length': '1', 'x-amz-meta-drink': value },
    body: 'x',
  })
  // The signer hashed the value's UTF-8; the wire carries the same bytes.
  assert.match(await rawExchange(Buffer.from(put, 'utf8'), 1), /^HTTP\/1\.1 200/)
  for (const method of ['HEAD', 'GET']) {
    const got = await rawExchange(await rawRequest({ method, path: `/${BUCKET}/meta-utf8` }), 1)
    // rawExchange reads a byte per character: the UTF-8 bytes of the value, not RFC 2047 words.
    const header = /\r\nx-amz-meta-drink: ([^\r]*)\r\n/i.exec(got)?.[1]
    assert.is(header, Buffer.from(value, 'utf8').toString('latin1'), method)
  }
})

test('the SDK round-trips metadata beyond ASCII, RFC 2047 words as sent', async () => {
  const encoded = `=?UTF-8?B?${Buffer.from('thé ☕').toString('base64')}?=`
  await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: 'meta-sdk',
      Body: 'x',
      Metadata: { latin: 'café', encoded, plain: 'ascii only' },
    }),
  )
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'meta-sdk' }))
  assert.is(head.Metadata?.['encoded'], encoded)
  assert.is(head.Metadata?.['plain'], 'ascii only')
  // The SDK sent the value's UTF-8 (it signed those bytes, and the PUT passed); they come back as
  // sent, and node:http reads a header a character per byte.
  const latin = head.Metadata?.['latin'] ?? ''
  assert.is(Buffer.from(latin, 'latin1').toString('utf8'), 'café', latin)
})

// ---------------------------------------------------------------------------------------------
// Content-Encoding

test('Content-Encoding keeps what is not aws-chunked exactly', async () => {
  for (const [sent, stored] of [
    ['aws-chunked,gzip', 'gzip'],
    ['gzip, br', 'gzip, br'],
    ['aws-chunked', undefined],
  ] as const) {
    const response = await request({
      method: 'PUT',
      path: `/${BUCKET}/encoding`,
      headers: { 'content-length': '1', 'content-encoding': sent },
      body: 'x',
    })
    expectStatus(response, 200, sent)
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'encoding' }))
    assert.is(head.ContentEncoding, stored, sent)
  }
})

test('an SDK gzip upload with a trailer checksum stores Content-Encoding gzip', async () => {
  const { Readable } = await import('node:stream')
  await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: 'gzip-trailer',
      Body: Readable.from([Buffer.from('not really gzip')]),
      ContentLength: 15,
      ContentEncoding: 'gzip',
      ChecksumAlgorithm: 'CRC32',
    }),
  )
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'gzip-trailer' }))
  assert.is(head.ContentEncoding, 'gzip')
})

// ---------------------------------------------------------------------------------------------
// Keys

test('a key that is not UTF-8 is 400 InvalidURI', async () => {
  for (const path of [`/${BUCKET}/%FF`, `/${BUCKET}/a%C3`, `/${BUCKET}/%ED%A0%80`]) {
    expectError(await request({ method: 'GET', path }), 400, 'InvalidURI', path)
  }
  // Raw bytes beyond ASCII in the request line: node:http refuses them itself, also with 400.
  const raw = await rawRequest({ method: 'GET', path: `/${BUCKET}/x\u00ff` })
  assert.match(await rawExchange(Buffer.from(raw, 'latin1'), 1), /^HTTP\/1\.1 400/)
})

// ---------------------------------------------------------------------------------------------
// Presigned URLs

async function fetchStatus(url: string): Promise<RawResponse> {
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000) })
  return { status: response.status, headers: {}, body: Buffer.from(await response.arrayBuffer()) }
}

test('a presigned URL that expired or whose X-Amz-Expires is out of range is 403', async () => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'presigned', Body: 'p' }))
  const command = new GetObjectCommand({ Bucket: BUCKET, Key: 'presigned' })
  const url = await getSignedUrl(s3, command, { expiresIn: 60 })
  expectStatus(await fetchStatus(url), 200, 'fresh')
  const old = await getSignedUrl(s3, command, {
    expiresIn: 1,
    signingDate: new Date(Date.now() - 120_000),
  })
  const expired = await fetchStatus(old)
  expectError(expired, 403, 'AccessDenied', 'expired')
  assert.match(expired.body.toString(), /<Message>Request has expired<\/Message>/)
  for (const expires of ['604801', '-1', '0']) {
    const tampered = url.replace(/X-Amz-Expires=\d+/, `X-Amz-Expires=${expires}`)
    const response = await fetchStatus(tampered)
    expectError(response, 403, 'AccessDenied', `X-Amz-Expires=${expires}`)
  }
  const week = url.replace(/X-Amz-Expires=\d+/, 'X-Amz-Expires=604801')
  assert.match(
    (await fetchStatus(week)).body.toString(),
    /<Message>X-Amz-Expires must be less than a week \(in seconds\) that is 604800<\/Message>/,
  )
})

// ---------------------------------------------------------------------------------------------
// Version ids

test('responses in an unversioned bucket carry no x-amz-version-id', async () => {
  const at = { Bucket: BUCKET, Key: 'unversioned' }
  const put = await s3.send(new PutObjectCommand({ ...at, Body: 'v' }))
  assert.is(put.VersionId, undefined, 'put')
  assert.is((await s3.send(new HeadObjectCommand(at))).VersionId, undefined, 'head')
  const got = await s3.send(new GetObjectCommand(at))
  await got.Body?.transformToString()
  assert.is(got.VersionId, undefined, 'get')
  const copy = await s3.send(
    new CopyObjectCommand({ ...at, Key: 'unversioned-copy', CopySource: `${BUCKET}/unversioned` }),
  )
  assert.is(copy.VersionId, undefined, 'copy')
  assert.is(copy.CopySourceVersionId, undefined, 'copy source')
  const upload = await s3.send(new CreateMultipartUploadCommand({ ...at, Key: 'unversioned-mp' }))
  const part = await s3.send(
    new UploadPartCommand({
      ...at,
      Key: 'unversioned-mp',
      UploadId: upload.UploadId,
      PartNumber: 1,
      Body: 'p',
    }),
  )
  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      ...at,
      Key: 'unversioned-mp',
      UploadId: upload.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
    }),
  )
  assert.is(done.VersionId, undefined, 'complete')
  const deleted = await s3.send(new DeleteObjectCommand(at))
  assert.is(deleted.VersionId, undefined, 'delete')
  const raw = await request({ method: 'DELETE', path: `/${BUCKET}/unversioned-copy` })
  assert.is(raw.headers['x-amz-version-id'], undefined, 'raw delete')
})

test('streamed writes in an unversioned bucket carry no x-amz-version-id either', async () => {
  // Above the inline limit a body travels on a stream, on another path through the store.
  const large = Buffer.alloc(256 * 1024, 7)
  const at = { Bucket: BUCKET, Key: 'unversioned-large' }
  const put = await s3.send(new PutObjectCommand({ ...at, Body: large }))
  assert.is(put.VersionId, undefined, 'put')
  const copy = await s3.send(
    new CopyObjectCommand({
      ...at,
      Key: 'unversioned-large-copy',
      CopySource: `${BUCKET}/${at.Key}`,
    }),
  )
  assert.is(copy.VersionId, undefined, 'copy')
  const upload = await s3.send(new CreateMultipartUploadCommand(at))
  const parts = []
  for (const [number, body] of [
    [1, Buffer.alloc(5 * 1024 * 1024, 1)],
    [2, large],
  ] as const) {
    const part = await s3.send(
      new UploadPartCommand({ ...at, UploadId: upload.UploadId, PartNumber: number, Body: body }),
    )
    parts.push({ PartNumber: number, ETag: part.ETag })
  }
  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      ...at,
      UploadId: upload.UploadId,
      MultipartUpload: { Parts: parts },
    }),
  )
  assert.is(done.VersionId, undefined, 'complete')
})

// ---------------------------------------------------------------------------------------------
// Early answers

/** Bytes of the body a client sends after its early answer came, while it reads nothing. */
const LATE_BODY_CHUNKS = 40
const LATE_CHUNK = Buffer.alloc(64 * 1024, 7)

test('an early answer reaches a client that reads it only after sending more', async () => {
  // The node refuses an anonymous PUT before its body, and closes the connection. A close while
  // the client still sends resets the connection, and a reset drops what the client has not read
  // yet: the node lingers, reading and dropping the body, so the answer stays to be read.
  const url = new URL(server.url)
  const socket = connect(Number(url.port), url.hostname)
  socket.pause()
  let text = ''
  let failure = ''
  socket.on('data', (data: Buffer) => (text += data.toString('latin1')))
  socket.on('error', (error: Error & { code?: string }) => (failure = error.code ?? error.message))
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  const length = LATE_BODY_CHUNKS * LATE_CHUNK.length
  socket.write(
    `PUT /${BUCKET}/early HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: ${length}\r\n\r\n`,
  )
  for (let chunk = 0; chunk < LATE_BODY_CHUNKS; chunk++) {
    socket.write(LATE_CHUNK)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  socket.resume()
  const settled = await firstWithin([ended.then(() => true)], 10_000)
  socket.destroy()
  assert.ok(settled, 'the node closed the connection')
  assert.match(text, /^HTTP\/1\.1 403 /, `the answer was read (${failure || 'no error'})`)
  assert.match(text, /<Code>AccessDenied<\/Code>/)
})

// Pipelining

test('pipelined requests are answered in order, each done before the next', async () => {
  for (let round = 0; round < 5; round++) {
    const key = `pipelined-${round}`
    const body = `body of round ${round}`
    const put = await rawRequest({
      method: 'PUT',
      path: `/${BUCKET}/${key}`,
      headers: { 'content-length': String(body.length) },
      body,
    })
    const get = await rawRequest({ method: 'GET', path: `/${BUCKET}/${key}` })
    const del = await rawRequest({ method: 'DELETE', path: `/${BUCKET}/${key}` })
    const again = await rawRequest({ method: 'GET', path: `/${BUCKET}/${key}` })
    const text = await rawExchange(put + get + del + again, 4)
    assert.equal(
      statusLines(text),
      ['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 204', 'HTTP/1.1 404'],
      text,
    )
    assert.ok(text.includes(body), text)
  }
})

// ---------------------------------------------------------------------------------------------
// Signature Version 2

function sigV2(toSign: string): string {
  return createHmac('sha1', SECRET_KEY).update(toSign).digest('base64')
}

test('SigV2 header auth: PUT with metadata and a subresource GET, signed by hand', async () => {
  const host = new URL(server.url).host
  const date = new Date().toUTCString()
  const put = ['PUT', '', 'text/plain', date, 'x-amz-meta-tool:v2', `/${BUCKET}/v2`].join('\n')
  const headers = {
    host,
    date,
    'content-type': 'text/plain',
    'x-amz-meta-tool': 'v2',
    authorization: `AWS ${ACCESS_KEY}:${sigV2(put)}`,
  }
  expectStatus(await send(server.url, 'PUT', `/${BUCKET}/v2`, headers, 'signed v2'), 200, 'put')
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'v2' }))
  assert.is(await got.Body?.transformToString(), 'signed v2')
  assert.is(got.Metadata?.['tool'], 'v2')
  // ?versioning is a subresource: it is part of the signed resource.
  const get = ['GET', '', '', date, `/${BUCKET}?versioning`].join('\n')
  const versioning = await send(server.url, 'GET', `/${BUCKET}?versioning`, {
    host,
    date,
    authorization: `AWS ${ACCESS_KEY}:${sigV2(get)}`,
  })
  expectStatus(versioning, 200, 'versioning')
  const unsigned = ['GET', '', '', date, `/${BUCKET}`].join('\n')
  const wrong = await send(server.url, 'GET', `/${BUCKET}?versioning`, {
    host,
    date,
    authorization: `AWS ${ACCESS_KEY}:${sigV2(unsigned)}`,
  })
  expectError(wrong, 403, 'SignatureDoesNotMatch', 'subresource left out')
})

test('SigV2 presigned URLs: a GET within Expires, then expired and tampered ones', async () => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'v2-presigned', Body: 'shared' }))
  const url = (expires: number, path = `/${BUCKET}/v2-presigned`): string => {
    const signature = sigV2(['GET', '', '', String(expires), path].join('\n'))
    const query = new URLSearchParams({
      AWSAccessKeyId: ACCESS_KEY,
      Expires: String(expires),
      Signature: signature,
    })
    return `${server.url}${path}?${query.toString()}`
  }
  const now = Math.floor(Date.now() / 1000)
  const fresh = await fetchStatus(url(now + 300))
  expectStatus(fresh, 200, 'fresh')
  assert.is(fresh.body.toString(), 'shared')
  expectError(await fetchStatus(url(now - 10)), 403, 'AccessDenied', 'expired')
  const other = url(now + 300).replace('v2-presigned', 'v2')
  expectError(await fetchStatus(other), 403, 'SignatureDoesNotMatch', 'another key')
})

test.run()
