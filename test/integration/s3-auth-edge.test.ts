/** Goal: the S3 surface refuses what Amazon S3 refuses, with S3's status and error Code, and
 * accepts every SigV4 variant real clients send: header auth, presigned URLs, aws-chunked with
 * per-chunk signatures, unsigned payloads with checksum trailers. A refused write leaves nothing
 * behind. Method: the real server as a child process, driven by raw requests signed with the
 * independent @smithy/signature-v4 (so each test controls every header and byte), by presigned URLs
 * from @aws-sdk/s3-request-presigner used with plain fetch, by a raw socket for a client that
 * disconnects mid-body, and by @aws-sdk/client-s3 for its default streaming upload. Every answer,
 * success or error, must carry x-amz-request-id. */
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { crc32 } from 'node:zlib'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { ACCESS_KEY, startServer } from '../support/server.js'
import { firstWithin } from '../../protocol/timing.js'
import { sleep } from '../support/wait.js'
import {
  errorCode,
  send,
  signedRequest,
  signer,
  signRequest,
  type RawRequest,
  type RawResponse,
} from '../support/signed-request.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'edge'
const KIB = 1024
const SETTLE_MS = 5_000

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, [
  'a request without credentials is AccessDenied',
  'a wrong secret is SignatureDoesNotMatch',
  'presigned PUT then presigned GET round-trip',
  'aws-chunked with chunk signatures: 200 KiB',
  "the SDK's default streaming PutObject",
  'client sends ',
  'PUT with transfer-encoding chunked, no Content-Length',
  'unsigned payload, crc32 trailer',
])

// ---------------------------------------------------------------------------------------------
// Helpers

function request(req: RawRequest, baseUrl = server.url): Promise<RawResponse> {
  return signedRequest(baseUrl, req)
}

function requestId(response: RawResponse): void {
  const id = response.headers['x-amz-request-id']
  assert.type(id, 'string', 'x-amz-request-id is missing')
  assert.ok((id as string).length > 0, 'x-amz-request-id is empty')
}

function expectError(response: RawResponse, status: number, code: string, what = ''): void {
  const body = response.body.toString()
  assert.is(response.status, status, `${what} status; body: ${body}`)
  assert.is(errorCode(response), code, `${what} code; body: ${body}`)
  requestId(response)
}

function expectOk(response: RawResponse, status: number, what = ''): void {
  assert.is(response.status, status, `${what} status; body: ${response.body.toString()}`)
  requestId(response)
}

async function getObject(key: string): Promise<RawResponse> {
  return request({ method: 'GET', path: `/${BUCKET}/${encodeURIComponent(key)}` })
}

async function expectAbsent(key: string): Promise<void> {
  expectError(await getObject(key), 404, 'NoSuchKey', `GET ${key}`)
}

async function expectBytes(key: string, bytes: Buffer): Promise<void> {
  const got = await getObject(key)
  expectOk(got, 200, `GET ${key}`)
  assert.is(got.body.length, bytes.length, `${key} length`)
  assert.ok(got.body.equals(bytes), `${key} bytes differ`)
}

function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex')
}

function crc32Base64(data: Buffer): string {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(crc32(data) >>> 0)
  return out.toString('base64')
}

async function putBody(
  key: string,
  body: Buffer,
  headers: Record<string, string> = {},
  payloadHash?: string,
): Promise<RawResponse> {
  return request({
    method: 'PUT',
    path: `/${BUCKET}/${key}`,
    headers: { 'content-length': String(body.length), ...headers },
    body,
    ...(payloadHash === undefined ? {} : { payloadHash }),
  })
}

// ---------------------------------------------------------------------------------------------
// Who is asking

test('a request without credentials is AccessDenied', async () => {
  const host = new URL(server.url).host
  expectError(await send(server.url, 'GET', `/${BUCKET}`, { host }), 403, 'AccessDenied', 'list')
  const put = await send(server.url, 'PUT', `/${BUCKET}/anon`, { host, 'content-length': '1' }, 'x')
  expectError(put, 403, 'AccessDenied', 'put')
  await expectAbsent('anon')
})

test('an unknown access key is InvalidAccessKeyId', async () => {
  const response = await request({
    method: 'GET',
    path: `/${BUCKET}`,
    accessKey: 'AKIDNOSUCHKEY0000000',
  })
  expectError(response, 403, 'InvalidAccessKeyId')
})

test('a wrong secret is SignatureDoesNotMatch', async () => {
  const response = await request({ method: 'GET', path: `/${BUCKET}`, secretKey: 'not-the-secret' })
  expectError(response, 403, 'SignatureDoesNotMatch')
})

test('a header changed after signing is SignatureDoesNotMatch and writes nothing', async () => {
  const body = Buffer.from('tampered')
  const signed = await signRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/tampered`,
    headers: { 'content-length': String(body.length), 'x-amz-meta-owner': 'alice' },
  })
  assert.is(signed.headers['x-amz-meta-owner'], 'alice')
  const headers = { ...signed.headers, 'x-amz-meta-owner': 'mallory' }
  expectError(
    await send(server.url, 'PUT', signed.pathAndQuery, headers, body),
    403,
    'SignatureDoesNotMatch',
  )
  await expectAbsent('tampered')
  // The same signed request, unchanged, is accepted: only the change was refused.
  expectOk(await send(server.url, 'PUT', signed.pathAndQuery, signed.headers, body), 200)
  await expectBytes('tampered', body)
})

test('a request signed 20 minutes ago is RequestTimeTooSkewed', async () => {
  const signingDate = new Date(Date.now() - 20 * 60_000)
  expectError(
    await request({ method: 'GET', path: `/${BUCKET}`, signingDate }),
    403,
    'RequestTimeTooSkewed',
  )
  const future = new Date(Date.now() + 20 * 60_000)
  expectError(
    await request({ method: 'GET', path: `/${BUCKET}`, signingDate: future }),
    403,
    'RequestTimeTooSkewed',
  )
})

// ---------------------------------------------------------------------------------------------
// Presigned URLs

async function fetchRaw(url: string, init: RequestInit = {}): Promise<RawResponse> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) })
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => (headers[name] = value))
  return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) }
}

test('presigned PUT then presigned GET round-trip with plain fetch', async () => {
  const body = randomBytes(3000)
  const putUrl = await getSignedUrl(
    s3,
    new PutObjectCommand({ Bucket: BUCKET, Key: 'presigned.bin' }),
    {
      expiresIn: 300,
    },
  )
  assert.ok(putUrl.includes('X-Amz-Signature='), putUrl)
  expectOk(await fetchRaw(putUrl, { method: 'PUT', body }), 200, 'presigned PUT')
  const getUrl = await getSignedUrl(
    s3,
    new GetObjectCommand({ Bucket: BUCKET, Key: 'presigned.bin' }),
    {
      expiresIn: 300,
    },
  )
  const got = await fetchRaw(getUrl)
  expectOk(got, 200, 'presigned GET')
  assert.ok(got.body.equals(body))
  // A presigned URL names one operation: the GET URL does not authorise a PUT.
  const misuse = await fetchRaw(getUrl, { method: 'PUT', body: 'other' })
  expectError(misuse, 403, 'SignatureDoesNotMatch', 'GET URL used for PUT')
  await expectBytes('presigned.bin', body)
})

test('an expired presigned URL is AccessDenied', async () => {
  const command = new GetObjectCommand({ Bucket: BUCKET, Key: 'presigned.bin' })
  const signingDate = new Date(Date.now() - 5 * 60_000)
  const expired = await getSignedUrl(s3, command, { expiresIn: 60, signingDate })
  expectError(await fetchRaw(expired), 403, 'AccessDenied', 'signed 5 min ago for 60 s')
  // And one that expires while we wait: valid first, refused after its second has passed.
  // Dated at the next whole second (X-Amz-Date has no fractions), so it is valid for >= 1 s.
  const nextSecond = new Date(Math.ceil(Date.now() / 1000) * 1000)
  const short = await getSignedUrl(s3, command, { expiresIn: 1, signingDate: nextSecond })
  expectOk(await fetchRaw(short), 200, 'fresh 1 s URL')
  const deadline = Date.now() + SETTLE_MS
  let last = await fetchRaw(short)
  while (last.status === 200 && Date.now() < deadline) {
    await sleep(250)
    last = await fetchRaw(short)
  }
  expectError(last, 403, 'AccessDenied', '1 s URL after expiry')
})

/** A presigned GET built by hand (the SDKs refuse X-Amz-Expires over a week): canonical request
 * per the SigV4 spec, HMAC from @smithy/signature-v4's signString. */
async function presignByHand(path: string, expiresSeconds: number): Promise<string> {
  const url = new URL(server.url)
  const signingDate = new Date()
  const amzDate = signingDate
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z')
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`
  const params: Array<[string, string]> = [
    ['X-Amz-Algorithm', 'AWS4-HMAC-SHA256'],
    ['X-Amz-Credential', `${ACCESS_KEY}/${scope}`],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', String(expiresSeconds)],
    ['X-Amz-SignedHeaders', 'host'],
  ]
  const query = params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')
  const canonical = ['GET', path, query, `host:${url.host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join(
    '\n',
  )
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonical)].join('\n')
  const signature = await signer().sign(toSign, { signingDate })
  return `${server.url}${path}?${query}&X-Amz-Signature=${signature}`
}

test('X-Amz-Expires over 604800 seconds is refused', async () => {
  // The hand-made URL is right: the same construction within a week is accepted.
  expectOk(await fetchRaw(await presignByHand(`/${BUCKET}/presigned.bin`, 604800)), 200, 'a week')
  const tooLong = await fetchRaw(await presignByHand(`/${BUCKET}/presigned.bin`, 604801))
  // 403 AccessDenied, as the S3 conformance suite expects (README: Requests and headers).
  expectError(tooLong, 403, 'AccessDenied', 'a week and a second')
})

// ---------------------------------------------------------------------------------------------
// Payload integrity: x-amz-content-sha256, Content-MD5, x-amz-checksum-*

for (const size of [5 * KIB, 200 * KIB]) {
  const path = size > 64 * KIB ? 'streamed' : 'inline'
  test(`x-amz-content-sha256 of other bytes is XAmzContentSHA256Mismatch (${path})`, async () => {
    const body = randomBytes(size)
    const key = `sha-mismatch-${size}`
    const wrong = sha256Hex(randomBytes(size))
    expectError(await putBody(key, body, {}, wrong), 400, 'XAmzContentSHA256Mismatch')
    await expectAbsent(key)
    expectOk(await putBody(key, body, {}, sha256Hex(body)), 200, 'right hash')
    await expectBytes(key, body)
  })

  test(`Content-MD5 of other bytes is BadDigest and stores nothing (${path})`, async () => {
    const body = randomBytes(size)
    const key = `md5-mismatch-${size}`
    const wrong = createHash('md5').update(randomBytes(16)).digest('base64')
    expectError(await putBody(key, body, { 'content-md5': wrong }), 400, 'BadDigest')
    await expectAbsent(key)
    const right = createHash('md5').update(body).digest('base64')
    const put = await putBody(key, body, { 'content-md5': right })
    expectOk(put, 200, 'right md5')
    assert.is(put.headers['etag'], `"${createHash('md5').update(body).digest('hex')}"`)
  })

  test(`x-amz-checksum-crc32 wrong is BadDigest, right is echoed (${path})`, async () => {
    const body = randomBytes(size)
    const key = `crc-${size}`
    const wrong = crc32Base64(Buffer.concat([body, Buffer.from('x')]))
    expectError(await putBody(key, body, { 'x-amz-checksum-crc32': wrong }), 400, 'BadDigest')
    await expectAbsent(key)
    const right = crc32Base64(body)
    const put = await putBody(key, body, { 'x-amz-checksum-crc32': right })
    expectOk(put, 200, 'right crc32')
    assert.is(put.headers['x-amz-checksum-crc32'], right)
    await expectBytes(key, body)
  })
}

test('Content-MD5 that is not base64 of 16 bytes is InvalidDigest', async () => {
  const body = Buffer.from('digest')
  const notBase64 = await putBody('md5-invalid', body, { 'content-md5': 'not base64!' })
  expectError(notBase64, 400, 'InvalidDigest', 'not base64')
  const fifteen = randomBytes(15).toString('base64')
  expectError(
    await putBody('md5-invalid', body, { 'content-md5': fifteen }),
    400,
    'InvalidDigest',
    '15 bytes',
  )
  const hex = createHash('md5').update(body).digest('hex')
  expectError(
    await putBody('md5-invalid', body, { 'content-md5': hex }),
    400,
    'InvalidDigest',
    'hex',
  )
  await expectAbsent('md5-invalid')
})

// ---------------------------------------------------------------------------------------------
// aws-chunked, built by hand

const CHUNK_SIGNATURE_LENGTH = 64
const EMPTY_SHA256 = sha256Hex('')

function chunkSizes(total: number, chunkBytes: number): number[] {
  const sizes: number[] = []
  for (let offset = 0; offset < total; offset += chunkBytes)
    sizes.push(Math.min(chunkBytes, total - offset))
  return sizes
}

/** PUT with STREAMING-AWS4-HMAC-SHA256-PAYLOAD. `tamper` alters that chunk's signature (the index
 * counts the final empty chunk too); `declared` replaces x-amz-decoded-content-length. */
async function signedChunkedPut(
  key: string,
  payload: Buffer,
  chunkBytes: number,
  options: { tamper?: number; declared?: number } = {},
): Promise<RawResponse> {
  const tamper = options.tamper ?? -1
  const sizes = [...chunkSizes(payload.length, chunkBytes), 0]
  const headerLength = (size: number): number =>
    `${size.toString(16)};chunk-signature=`.length + CHUNK_SIGNATURE_LENGTH + 2
  const encodedLength = sizes.reduce((sum, size) => sum + headerLength(size) + size + 2, 0)
  const signingDate = new Date()
  const signed = await signRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/${key}`,
    payloadHash: 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    headers: {
      'content-encoding': 'aws-chunked',
      'content-length': String(encodedLength),
      'x-amz-decoded-content-length': String(options.declared ?? payload.length),
    },
    signingDate,
  })
  const seed = /Signature=([0-9a-f]{64})/.exec(signed.headers['authorization'] ?? '')?.[1]
  const amzDate = signed.headers['x-amz-date']
  assert.ok(seed !== undefined && amzDate !== undefined)
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`
  const parts: Buffer[] = []
  let previous = seed
  let offset = 0
  for (const [index, size] of sizes.entries()) {
    const data = payload.subarray(offset, offset + size)
    offset += size
    const toSign = [
      'AWS4-HMAC-SHA256-PAYLOAD',
      amzDate,
      scope,
      previous,
      EMPTY_SHA256,
      sha256Hex(data),
    ].join('\n')
    const signature = await signer().sign(toSign, { signingDate })
    previous = signature
    const sent =
      index === tamper ? signature.replace(/^./, (c) => (c === '0' ? '1' : '0')) : signature
    parts.push(
      Buffer.from(`${size.toString(16)};chunk-signature=${sent}\r\n`),
      data,
      Buffer.from('\r\n'),
    )
  }
  const body = Buffer.concat(parts)
  assert.is(body.length, encodedLength)
  return send(server.url, 'PUT', signed.pathAndQuery, signed.headers, body)
}

test('aws-chunked with chunk signatures: 200 KiB in 64 KiB chunks round-trips', async () => {
  const payload = randomBytes(200 * KIB)
  const put = await signedChunkedPut('chunked-signed', payload, 64 * KIB)
  expectOk(put, 200)
  assert.is(put.headers['etag'], `"${createHash('md5').update(payload).digest('hex')}"`)
  await expectBytes('chunked-signed', payload)
  // Small enough to be stored inline, in odd chunk sizes.
  const small = randomBytes(5000)
  expectOk(await signedChunkedPut('chunked-signed-small', small, 1000), 200)
  await expectBytes('chunked-signed-small', small)
})

test('aws-chunked, one chunk signature altered: SignatureDoesNotMatch, no object', async () => {
  const payload = randomBytes(200 * KIB)
  for (const tamper of [0, 1, 4]) {
    const key = `chunked-forged-${tamper}`
    expectError(
      await signedChunkedPut(key, payload, 64 * KIB, { tamper }),
      403,
      'SignatureDoesNotMatch',
      key,
    )
    await expectAbsent(key)
  }
  const small = randomBytes(5000)
  expectError(
    await signedChunkedPut('chunked-forged-small', small, 1000, { tamper: 2 }),
    403,
    'SignatureDoesNotMatch',
  )
  await expectAbsent('chunked-forged-small')
})

for (const size of [5000, 200 * KIB]) {
  test(`aws-chunked, chunks differ from decoded length: IncompleteBody (${size} B)`, async () => {
    const payload = randomBytes(size)
    for (const declared of [size + 10, size - 10]) {
      const key = `chunked-length-${size}-${declared}`
      const put = await signedChunkedPut(key, payload, 64 * KIB, { declared })
      expectError(put, 400, 'IncompleteBody', `declared ${declared}`)
      await expectAbsent(key)
    }
  })
}

/** PUT with STREAMING-UNSIGNED-PAYLOAD-TRAILER and an x-amz-checksum-crc32 trailer. */
async function trailerPut(
  key: string,
  payload: Buffer,
  chunkBytes: number,
  trailerValue: string,
): Promise<RawResponse> {
  const parts: Buffer[] = []
  let offset = 0
  for (const size of chunkSizes(payload.length, chunkBytes)) {
    parts.push(
      Buffer.from(`${size.toString(16)}\r\n`),
      payload.subarray(offset, offset + size),
      Buffer.from('\r\n'),
    )
    offset += size
  }
  parts.push(Buffer.from(`0\r\nx-amz-checksum-crc32:${trailerValue}\r\n\r\n`))
  const body = Buffer.concat(parts)
  return request({
    method: 'PUT',
    path: `/${BUCKET}/${key}`,
    payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
    headers: {
      'content-encoding': 'aws-chunked',
      'content-length': String(body.length),
      'x-amz-decoded-content-length': String(payload.length),
      'x-amz-trailer': 'x-amz-checksum-crc32',
    },
    body,
  })
}

for (const size of [3000, 200 * KIB]) {
  test(`unsigned payload, crc32 trailer: right 200, wrong BadDigest (${size} B)`, async () => {
    const payload = randomBytes(size)
    const key = `trailer-${size}`
    const wrong = crc32Base64(randomBytes(64))
    expectError(await trailerPut(key, payload, 64 * KIB, wrong), 400, 'BadDigest', 'wrong trailer')
    await expectAbsent(key)
    const right = crc32Base64(payload)
    const put = await trailerPut(key, payload, 64 * KIB, right)
    expectOk(put, 200, 'right trailer')
    assert.is(put.headers['x-amz-checksum-crc32'], right)
    await expectBytes(key, payload)
  })
}

test("the SDK's default streaming PutObject (aws-chunked, CRC32 trailer) round-trips", async () => {
  const payload = randomBytes(300 * KIB)
  const seen: Record<string, string>[] = []
  const client = server.client()
  client.middlewareStack.add(
    (next) => async (args) => {
      const headers = (args.request as { headers?: Record<string, string> }).headers
      if (headers !== undefined) seen.push({ ...headers })
      return next(args)
    },
    { step: 'finalizeRequest', priority: 'low', name: 'captureHeaders' },
  )
  try {
    const body = Readable.from([payload.subarray(0, 100 * KIB), payload.subarray(100 * KIB)])
    const put = await client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'sdk-stream',
        Body: body,
        ContentLength: payload.length,
      }),
    )
    assert.is(put.ChecksumCRC32, crc32Base64(payload))
    const sent = seen[0] ?? {}
    assert.is(sent['content-encoding'], 'aws-chunked', JSON.stringify(sent))
    assert.is(sent['x-amz-trailer'], 'x-amz-checksum-crc32')
    assert.is(sent['x-amz-decoded-content-length'], String(payload.length))
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'sdk-stream' }))
    const bytes = Buffer.from(
      await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
    )
    assert.ok(bytes.equals(payload))
  } finally {
    client.destroy()
  }
})

// ---------------------------------------------------------------------------------------------
// Framing: short bodies, no length

async function listedKeys(prefix: string): Promise<string[]> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))
  return (listed.Contents ?? []).map((entry) => entry.Key ?? '')
}

/** Temporary blob files of the server: an aborted upload must leave none. */
function temporaryFiles(): string[] {
  const dir = join(server.dataDir, 'tmp')
  return existsSync(dir) ? readdirSync(dir) : []
}

test('a PUT announcing over 5 GiB is refused with EntityTooLarge before its body', async () => {
  const signed = await signRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/too-large`,
    headers: { 'content-length': String(5 * 1024 ** 3 + 1) },
  })
  const url = new URL(server.url)
  const head = [`PUT ${signed.pathAndQuery} HTTP/1.1`]
  for (const [name, value] of Object.entries(signed.headers)) head.push(`${name}: ${value}`)
  const socket = connect(Number(url.port), url.hostname)
  const answer = new Promise<string>((resolve) => {
    let text = ''
    socket.on('data', (data: Buffer) => {
      text += data.toString()
      if (text.includes('</Error>')) resolve(text)
    })
    socket.on('close', () => resolve(text))
  })
  socket.write(head.join('\r\n') + '\r\n\r\n')
  socket.write(randomBytes(64 * KIB))
  const text = (await firstWithin([answer], 10_000)) ?? 'no answer'
  socket.destroy()
  assert.match(text, /^HTTP\/1\.1 400/)
  assert.match(text, /<Code>EntityTooLarge<\/Code>/)
})

/** Announces `announced` bytes, sends `sent`, then drops the connection. */
async function disconnectMidBody(key: string, announced: number, sent: number): Promise<void> {
  const signed = await signRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/${key}`,
    headers: { 'content-length': String(announced) },
  })
  const url = new URL(server.url)
  const head = [`PUT ${signed.pathAndQuery} HTTP/1.1`]
  for (const [name, value] of Object.entries(signed.headers)) head.push(`${name}: ${value}`)
  const socket = connect(Number(url.port), url.hostname)
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject)
    socket.once('connect', () => resolve())
  })
  let answered = false
  socket.on('data', () => (answered = true))
  await new Promise<void>((resolve, reject) => {
    socket.write(head.join('\r\n') + '\r\n\r\n')
    socket.write(randomBytes(sent), (error) => (error ? reject(error) : resolve()))
  })
  // Let the server read what was sent before the cut.
  await sleep(200)
  assert.not.ok(answered, 'the server answered before the body was complete')
  socket.destroy()
}

for (const [announced, sent] of [
  [1024 * KIB, 100 * KIB],
  [40 * KIB, 10 * KIB],
] as const) {
  test(`client sends ${sent / KIB} of ${announced / KIB} KiB and leaves: no object`, async () => {
    const key = `partial-${announced}`
    await disconnectMidBody(key, announced, sent)
    const deadline = Date.now() + SETTLE_MS
    let get = await getObject(key)
    let listed = await listedKeys(key)
    let temporary = temporaryFiles()
    while (
      (get.status !== 404 || listed.length > 0 || temporary.length > 0) &&
      Date.now() < deadline
    ) {
      await sleep(100)
      get = await getObject(key)
      listed = await listedKeys(key)
      temporary = temporaryFiles()
    }
    expectError(get, 404, 'NoSuchKey')
    assert.equal(listed, [])
    assert.equal(temporary, [], 'the aborted upload left temporary blob files behind')
    // The key is not stuck: a complete upload to it succeeds.
    const body = randomBytes(announced)
    expectOk(await putBody(key, body), 200, 'complete upload after the aborted one')
    await expectBytes(key, body)
  })
}

test('PUT with transfer-encoding chunked, no Content-Length: MissingContentLength', async () => {
  const signed = await signRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/no-length`,
    headers: { 'transfer-encoding': 'chunked' },
  })
  assert.is(signed.headers['content-length'], undefined)
  const response = await send(server.url, 'PUT', signed.pathAndQuery, signed.headers, 'some bytes')
  expectError(response, 411, 'MissingContentLength')
  await expectAbsent('no-length')
})

// ---------------------------------------------------------------------------------------------
// Operations this server does not implement, and malformed requests

test('unimplemented subresources are 501 NotImplemented and do nothing else', async () => {
  const original = Buffer.from('tag me')
  expectOk(await putBody('tagged', original), 200)

  const website = await request({ method: 'GET', path: `/${BUCKET}`, query: { website: '' } })
  expectError(website, 501, 'NotImplemented', 'GET ?website')
  assert.not.ok(
    website.body.toString().includes('ListBucketResult'),
    'GET ?website listed the bucket',
  )

  const websiteXml = '<WebsiteConfiguration></WebsiteConfiguration>'
  const putWebsite = await request({
    method: 'PUT',
    path: '/ghost-bucket',
    query: { website: '' },
    headers: { 'content-length': String(websiteXml.length) },
    body: websiteXml,
  })
  expectError(putWebsite, 501, 'NotImplemented', 'PUT ?website')
  const head = await request({ method: 'HEAD', path: '/ghost-bucket' })
  expectOk(head, 404, 'PUT ?website must not create the bucket')
  const getTorrent = await request({
    method: 'GET',
    path: `/${BUCKET}/tagged`,
    query: { torrent: '' },
  })
  expectError(getTorrent, 501, 'NotImplemented', 'GET ?torrent')
  assert.not.ok(getTorrent.body.includes(original), 'GET ?torrent returned the object')

  const putTorrent = await request({
    method: 'PUT',
    path: `/${BUCKET}/tagged`,
    query: { torrent: '' },
    headers: { 'content-length': '4' },
    body: 'junk',
  })
  expectError(putTorrent, 501, 'NotImplemented', 'PUT ?torrent')
  const deleteTorrent = await request({
    method: 'DELETE',
    path: `/${BUCKET}/tagged`,
    query: { torrent: '' },
  })
  expectError(deleteTorrent, 501, 'NotImplemented', 'DELETE ?torrent')
  await expectBytes('tagged', original)

  const restore = await request({
    method: 'POST',
    path: `/${BUCKET}/archived`,
    query: { restore: '' },
  })
  expectError(restore, 501, 'NotImplemented', 'POST ?restore')
  await expectAbsent('archived')
})

function deleteRequest(xml: string): Promise<RawResponse> {
  const body = Buffer.from(xml)
  return request({
    method: 'POST',
    path: `/${BUCKET}`,
    query: { delete: '' },
    headers: {
      'content-length': String(body.length),
      'content-md5': createHash('md5').update(body).digest('base64'),
    },
    body,
  })
}

test('DeleteObjects of malformed XML or 1001 keys is MalformedXML, deletes nothing', async () => {
  expectOk(await putBody('keep-0', Buffer.from('kept')), 200)
  const truncated = '<Delete><Object><Key>keep-0</Key></Object'
  expectError(await deleteRequest(truncated), 400, 'MalformedXML', 'truncated')
  expectError(await deleteRequest('<Delete></Delete>'), 400, 'MalformedXML', 'no Object')
  const objects = Array.from({ length: 1001 }, (_, i) => `<Object><Key>keep-${i}</Key></Object>`)
  expectError(
    await deleteRequest(`<Delete>${objects.join('')}</Delete>`),
    400,
    'MalformedXML',
    '1001 keys',
  )
  await expectBytes('keep-0', Buffer.from('kept'))
  // 1000 keys is the limit, and is accepted.
  const thousand = await deleteRequest(
    `<Delete><Quiet>true</Quiet>${objects.slice(0, 1000).join('')}</Delete>`,
  )
  expectOk(thousand, 200, '1000 keys')
  await expectAbsent('keep-0')
})

test('ListObjectsV2 refuses bad max-keys and foreign continuation tokens', async () => {
  const list = (query: Record<string, string>): Promise<RawResponse> =>
    request({ method: 'GET', path: `/${BUCKET}`, query: { 'list-type': '2', ...query } })
  expectError(await list({ 'max-keys': 'abc' }), 400, 'InvalidArgument', 'max-keys=abc')
  expectError(await list({ 'max-keys': '-1' }), 400, 'InvalidArgument', 'max-keys=-1')
  expectError(
    await list({ 'continuation-token': 'bogus!token' }),
    400,
    'InvalidArgument',
    'bad alphabet',
  )
  const foreign = Buffer.from('xnot-a-token').toString('base64url')
  expectError(
    await list({ 'continuation-token': foreign }),
    400,
    'InvalidArgument',
    'foreign token',
  )
  expectError(await list({ 'encoding-type': 'base64' }), 400, 'InvalidArgument', 'encoding-type')
})

test('ListObjectsV2 with encoding-type=url encodes keys and prefixes', async () => {
  expectOk(await putBody('enc%20dir/with%20space+plus.txt', Buffer.from('e')), 200)
  const listed = await request({
    method: 'GET',
    path: `/${BUCKET}`,
    query: { 'list-type': '2', prefix: 'enc dir/', 'encoding-type': 'url' },
  })
  expectOk(listed, 200)
  const xml = listed.body.toString()
  const keys = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1])
  assert.equal(keys, ['enc%20dir/with%20space%2Bplus.txt'], xml)
  assert.match(xml, '<Prefix>enc%20dir/</Prefix>')
  assert.match(xml, '<EncodingType>url</EncodingType>')
  // Without it, the key comes back as stored.
  const plain = await request({
    method: 'GET',
    path: `/${BUCKET}`,
    query: { 'list-type': '2', prefix: 'enc dir/' },
  })
  assert.match(plain.body.toString(), '<Key>enc dir/with space+plus.txt</Key>')
})

// ---------------------------------------------------------------------------------------------
// Virtual-hosted style

test('virtual-hosted style with SVC_DOMAIN: bucket from Host; path style still works', async () => {
  const hosted = await startServer({ env: { SVC_DOMAIN: 's3.local' } })
  try {
    const vhost = `vbucket.s3.local:${hosted.port}`
    const create = await request({ method: 'PUT', path: '/', headers: { host: vhost } }, hosted.url)
    expectOk(create, 200, 'create via vhost')
    const body = Buffer.from('virtually hosted')
    const put = await request(
      {
        method: 'PUT',
        path: '/dir/a%20b.txt',
        headers: { host: vhost, 'content-length': String(body.length) },
        body,
      },
      hosted.url,
    )
    expectOk(put, 200, 'put via vhost')
    const viaHost = await request(
      { method: 'GET', path: '/dir/a%20b.txt', headers: { host: vhost } },
      hosted.url,
    )
    expectOk(viaHost, 200, 'get via vhost')
    assert.ok(viaHost.body.equals(body))
    const viaPath = await request({ method: 'GET', path: '/vbucket/dir/a%20b.txt' }, hosted.url)
    expectOk(viaPath, 200, 'get path-style')
    assert.ok(viaPath.body.equals(body))
    const listed = await request(
      { method: 'GET', path: '/', query: { 'list-type': '2' }, headers: { host: vhost } },
      hosted.url,
    )
    expectOk(listed, 200, 'list via vhost')
    assert.match(listed.body.toString(), '<Name>vbucket</Name>')
    assert.match(listed.body.toString(), '<Key>dir/a b.txt</Key>')
    // Path-style writes land in the same bucket.
    const pathPut = await request(
      { method: 'PUT', path: '/vbucket/second', headers: { 'content-length': '2' }, body: 'ok' },
      hosted.url,
    )
    expectOk(pathPut, 200, 'put path-style')
    const second = await request(
      { method: 'GET', path: '/second', headers: { host: vhost } },
      hosted.url,
    )
    expectOk(second, 200)
    assert.is(second.body.toString(), 'ok')
  } finally {
    await hosted.stop()
    hosted.cleanup()
  }
})

test.run()
