/** @module aws-chunked decoder unit tests.
 * Goal: the decoder returns exactly the payload of well-formed bodies however the bytes are split,
 * verifies every chunk and trailer signature, and refuses forged, malformed and truncated bodies
 * with the right ServiceError code. Method: the worked example of the Amazon S3 documentation
 * (PUT Object with STREAMING-AWS4-HMAC-SHA256-PAYLOAD, 66560 bytes of 'a'), bodies built here from
 * the specification with node:crypto (not with the decoder's helpers), a body captured from
 * @aws-sdk/client-s3, pushed whole, byte by byte and split at every boundary. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, createHmac } from 'node:crypto'
import { Readable } from 'node:stream'
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { ServiceError } from '../../protocol/errors.js'
import { checksumBase64 } from '../../protocol/checksums.js'
import {
  AwsChunkedDecoder,
  chunkedModeOf,
  decodedLengthHeader,
  type AwsChunkedOptions,
  type ChunkedMode,
} from '../../http/s3/aws-chunked.js'
import { parseAuth, verifyAuth, type HmacKey, type VerifiedAuth } from '../../http/s3/sigv4.js'

const EXAMPLE_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
const EXAMPLE_SEED = '4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9'
const EXAMPLE_FIRST = 'ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648'
const EXAMPLE_DATE = '20130524T000000Z'
const EXAMPLE_SCOPE = '20130524/us-east-1/s3/aws4_request'

function hmac(key: HmacKey | string, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex')
}

function exampleAuth(seedSignature = EXAMPLE_SEED): VerifiedAuth {
  let key = hmac('AWS4' + EXAMPLE_SECRET, '20130524')
  for (const part of ['us-east-1', 's3', 'aws4_request']) key = hmac(key, part)
  return {
    accessKey: 'AKIAIOSFODNN7EXAMPLE',
    signingKey: key,
    scope: EXAMPLE_SCOPE,
    amzDate: EXAMPLE_DATE,
    seedSignature,
    payload: { kind: 'streaming-signed' },
  }
}

interface BodyOptions {
  mode: ChunkedMode
  auth?: VerifiedAuth
  trailers?: Array<[string, string]>
  /** Leave out x-amz-trailer-signature (signed trailer mode). */
  omitTrailerSignature?: boolean
  /** End after the last trailer line, as @aws-sdk does, instead of with an empty line. */
  omitFinalCrlf?: boolean
}

/** An aws-chunked body as the specification describes it, one chunk per element of `chunks`. */
function encode(chunks: Uint8Array[], options: BodyOptions): Buffer {
  const parts: Buffer[] = []
  const auth = options.auth
  let previous = auth?.seedSignature ?? ''
  const empty = sha256('')
  for (const chunk of [...chunks, new Uint8Array(0)]) {
    let header = chunk.length.toString(16)
    if (auth !== undefined && options.mode !== 'streaming-unsigned-trailer') {
      const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', auth.amzDate, auth.scope, previous, empty]
      previous = hmac(auth.signingKey, [...toSign, sha256(chunk)].join('\n')).toString('hex')
      header += `;chunk-signature=${previous}`
    }
    parts.push(Buffer.from(header + '\r\n'))
    if (chunk.length > 0) parts.push(Buffer.from(chunk), Buffer.from('\r\n'))
  }
  let canonical = ''
  for (const [name, value] of options.trailers ?? []) {
    parts.push(Buffer.from(`${name}:${value}\r\n`))
    canonical += `${name}:${value}\n`
  }
  if (options.mode === 'streaming-signed-trailer' && auth && !options.omitTrailerSignature) {
    const toSign = [
      'AWS4-HMAC-SHA256-TRAILER',
      auth.amzDate,
      auth.scope,
      previous,
      sha256(canonical),
    ]
    parts.push(
      Buffer.from(
        `x-amz-trailer-signature:${hmac(auth.signingKey, toSign.join('\n')).toString('hex')}\r\n`,
      ),
    )
  }
  if (!options.omitFinalCrlf) parts.push(Buffer.from('\r\n'))
  return Buffer.concat(parts)
}

function decode(
  options: AwsChunkedOptions,
  pushes: Uint8Array[],
): { payload: Buffer; trailers: Record<string, string> } {
  const decoder = new AwsChunkedDecoder(options)
  const pieces: Uint8Array[] = []
  for (const push of pushes) pieces.push(...decoder.push(push))
  const { trailers } = decoder.finish()
  return { payload: Buffer.concat(pieces), trailers }
}

function expectError(code: string, run: () => unknown): void {
  try {
    run()
  } catch (error) {
    assert.instance(error, ServiceError)
    if (error instanceof ServiceError) assert.is(error.code, code, error.message)
    return
  }
  assert.unreachable(`expected ServiceError ${code}`)
}

function exampleBody(): Buffer {
  const a = (n: number): Buffer => Buffer.alloc(n, 'a')
  return encode([a(65536), a(1024)], { mode: 'streaming-signed', auth: exampleAuth() })
}

test('the S3 documentation example: seed, chunk signatures and payload', () => {
  const body = exampleBody()
  assert.is(body.length, 66824, 'Content-Length of the documented request')
  assert.ok(
    body
      .subarray(0, 100)
      .toString('latin1')
      .startsWith(`10000;chunk-signature=${EXAMPLE_FIRST}\r\n`),
  )
  const { payload } = decode({ mode: 'streaming-signed', auth: exampleAuth() }, [body])
  assert.is(payload.length, 66560)
  assert.ok(payload.equals(Buffer.alloc(66560, 'a')))
})

test('the documented request itself verifies and seeds the decoder', () => {
  const req = {
    method: 'PUT',
    rawPath: '/examplebucket/chunkObject.txt',
    rawQuery: '',
    headers: {
      host: 's3.amazonaws.com',
      'x-amz-date': EXAMPLE_DATE,
      'x-amz-storage-class': 'REDUCED_REDUNDANCY',
      'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
      'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': '66560',
      'content-length': '66824',
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,' +
        'SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;' +
        `x-amz-decoded-content-length;x-amz-storage-class,Signature=${EXAMPLE_SEED}`,
    },
  }
  const parsed = parseAuth(req, Date.UTC(2013, 4, 24))
  if (!parsed.ok) throw new Error(parsed.detail)
  const verified = verifyAuth(parsed.value, req, EXAMPLE_SECRET)
  if (!verified.ok) throw new Error(verified.detail)
  assert.is(verified.value.seedSignature, EXAMPLE_SEED)
  const mode = chunkedModeOf(verified.value.payload)
  assert.is(mode, 'streaming-signed')
  const length = decodedLengthHeader(req.headers)
  assert.equal(length, { ok: true, value: 66560 })
  const options = { mode: 'streaming-signed' as const, auth: verified.value, decodedLength: 66560 }
  assert.is(decode(options, [exampleBody()]).payload.length, 66560)
})

test('the documentation example with one bit changed is refused', () => {
  const options = { mode: 'streaming-signed' as const, auth: exampleAuth() }
  const dataAt = exampleBody().indexOf('\r\n') + 2
  for (const offset of [dataAt, dataAt + 40_000, exampleBody().length - 200]) {
    const body = exampleBody()
    body[offset] = (body[offset] ?? 0) ^ 1
    expectError('signature_mismatch', () => decode(options, [body]))
  }
  const signatureAt = exampleBody().indexOf(EXAMPLE_FIRST)
  const forged = exampleBody()
  forged[signatureAt] = '0'.charCodeAt(0) // 'a' -> '0': still hex, a different signature
  expectError('signature_mismatch', () => decode(options, [forged]))
  const otherSeed = { ...options, auth: exampleAuth(EXAMPLE_SEED.replace(/^4/, '5')) }
  expectError('signature_mismatch', () => decode(otherSeed, [exampleBody()]))
})

test('a small body split at every byte boundary, and byte by byte, in every mode', async () => {
  const chunks = [Buffer.from('hello'), Buffer.from(' wo'), Buffer.from('rld\r\n!')]
  const payload = Buffer.concat(chunks)
  const crc = await checksumBase64('crc32', payload)
  const modes: ChunkedMode[] = [
    'streaming-signed',
    'streaming-signed-trailer',
    'streaming-unsigned-trailer',
  ]
  for (const mode of modes) {
    const trailers: Array<[string, string]> =
      mode === 'streaming-signed' ? [] : [['x-amz-checksum-crc32', crc]]
    const auth = exampleAuth()
    const body = encode(chunks, { mode, auth, trailers })
    const options = { mode, auth, decodedLength: payload.length }
    const expected = mode === 'streaming-signed' ? {} : { 'x-amz-checksum-crc32': crc }
    for (let split = 0; split <= body.length; split++) {
      const result = decode(options, [body.subarray(0, split), body.subarray(split)])
      assert.ok(result.payload.equals(payload), `${mode} split at ${split}`)
      assert.equal(result.trailers, expected)
    }
    const bytes = [...body].map((byte) => Uint8Array.of(byte))
    assert.ok(decode(options, bytes).payload.equals(payload), `${mode} byte by byte`)
  }
})

test('a truncated body fails with incomplete_body wherever it is cut', () => {
  const chunks = [Buffer.from('abcdef'), Buffer.from('gh')]
  for (const mode of [
    'streaming-signed',
    'streaming-signed-trailer',
    'streaming-unsigned-trailer',
  ] as const) {
    const trailers: Array<[string, string]> = [['x-amz-checksum-crc32', 'AAAAAA==']]
    const body = encode(chunks, {
      mode,
      auth: exampleAuth(),
      trailers: mode === 'streaming-signed' ? [] : trailers,
    })
    // Accepted early ends: the body may stop right after the final chunk's line (signed) or after
    // the last complete trailer line (SDK style); everything before the final chunk is too short.
    const finalLineEnd = body.indexOf('\r\n', body.indexOf('\r\n0') + 2) + 2
    for (let cut = 0; cut < finalLineEnd; cut++) {
      expectError('incomplete_body', () =>
        decode({ mode, auth: exampleAuth() }, [body.subarray(0, cut)]),
      )
    }
  }
})

test('unsigned trailer: the @aws-sdk/client-s3 body, with and without the final CRLF', async () => {
  let captured: { headers: Record<string, string>; body: Readable } | null = null
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://localhost:9000',
    forcePathStyle: true,
    credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
    requestHandler: {
      handle: (request: { headers: Record<string, string>; body: Readable }) => {
        captured = request
        return Promise.resolve({
          response: { statusCode: 200, headers: {}, body: Readable.from([]) },
        })
      },
    },
  })
  const payload = Buffer.from('x'.repeat(100_000) + 'tail')
  const body = Readable.from([payload.subarray(0, 70_000), payload.subarray(70_000)])
  const pending = client.send(
    new PutObjectCommand({ Bucket: 'b', Key: 'k', Body: body, ContentLength: payload.length }),
  )
  await pending
  const request = captured as { headers: Record<string, string>; body: Readable } | null
  if (request === null) throw new Error('nothing captured')
  assert.is(request.headers['x-amz-content-sha256'], 'STREAMING-UNSIGNED-PAYLOAD-TRAILER')
  const wire: Buffer[] = []
  for await (const piece of request.body) wire.push(Buffer.from(piece as Uint8Array))
  const decodedLength = decodedLengthHeader(request.headers)
  assert.ok(decodedLength.ok)
  const options = { mode: 'streaming-unsigned-trailer' as const, decodedLength: payload.length }
  const result = decode(options, wire)
  assert.ok(result.payload.equals(payload))
  assert.equal(result.trailers, { 'x-amz-checksum-crc32': await checksumBase64('crc32', payload) })
  client.destroy()
  const bare = encode([payload], {
    mode: 'streaming-unsigned-trailer',
    trailers: [['x-amz-checksum-crc32', 'AAAAAA==']],
    omitFinalCrlf: true,
  })
  assert.equal(decode(options, [bare]).trailers, { 'x-amz-checksum-crc32': 'AAAAAA==' })
  const noTrailers = encode([payload], { mode: 'streaming-unsigned-trailer', omitFinalCrlf: true })
  assert.equal(decode(options, [noTrailers]).trailers, {})
})

test('signed trailer: verified; a changed, missing or unsigned trailer is refused', async () => {
  const auth = exampleAuth()
  const payload = Buffer.from('payload with a trailer')
  const crc = await checksumBase64('crc32c', payload)
  const trailers: Array<[string, string]> = [['x-amz-checksum-crc32c', crc]]
  const mode = 'streaming-signed-trailer' as const
  const body = encode([payload], { mode, auth, trailers })
  assert.equal(decode({ mode, auth }, [body]).trailers, { 'x-amz-checksum-crc32c': crc })
  const changed = Buffer.from(body.toString('latin1').replace(crc, 'AAAAAA=='), 'latin1')
  expectError('signature_mismatch', () => decode({ mode, auth }, [changed]))
  const unsigned = encode([payload], { mode, auth, trailers, omitTrailerSignature: true })
  expectError('signature_mismatch', () => decode({ mode, auth }, [unsigned]))
  const stripped = encode([payload], { mode, auth, omitTrailerSignature: true })
  expectError('signature_mismatch', () => decode({ mode, auth }, [stripped]))
  const none = encode([payload], { mode, auth })
  assert.equal(decode({ mode, auth }, [none]).trailers, {})
  const spoof = encode([payload], {
    mode: 'streaming-unsigned-trailer',
    trailers: [['x-amz-trailer-signature', 'x']],
  })
  expectError('invalid_argument', () => decode({ mode: 'streaming-unsigned-trailer' }, [spoof]))
})

test('malformed framing is invalid_argument', () => {
  const auth = exampleAuth()
  const signed = { mode: 'streaming-signed' as const, auth }
  const unsigned = { mode: 'streaming-unsigned-trailer' as const }
  const cases: Array<[AwsChunkedOptions, string]> = [
    [unsigned, 'zz\r\nab\r\n0\r\n\r\n'],
    [unsigned, '2\nab\r\n0\r\n\r\n'],
    [unsigned, '2\r\nabX\n0\r\n\r\n'],
    [unsigned, '2\r\nab\r\n0\r\n\r\nextra'],
    [unsigned, '2\r\nab\r\n0\r\nno-colon\r\n\r\n'],
    [unsigned, '2\r\nab\r\n0\r\nx-a:1\r\nx-a:2\r\n\r\n'],
    [unsigned, '2\r\nab\r\n0\r\n' + 'x-a:' + 'v'.repeat(5000) + '\r\n\r\n'],
    [unsigned, '1'.repeat(5000)],
    [unsigned, 'fffffffffffffff\r\n'],
    [signed, '2\r\nab\r\n0\r\n\r\n'],
    [signed, `2;chunk-signature=${'0'.repeat(63)}\r\n`],
  ]
  for (const [options, body] of cases) {
    expectError('invalid_argument', () => decode(options, [Buffer.from(body, 'latin1')]))
  }
  const lengthy = { ...unsigned, decodedLength: 1 }
  expectError('invalid_argument', () => decode(lengthy, [Buffer.from('2\r\nab\r\n0\r\n\r\n')]))
  const short = { ...unsigned, decodedLength: 3 }
  expectError('incomplete_body', () => decode(short, [Buffer.from('2\r\nab\r\n0\r\n\r\n')]))
})

test('a decoder that failed keeps failing', () => {
  const decoder = new AwsChunkedDecoder({ mode: 'streaming-unsigned-trailer' })
  expectError('invalid_argument', () => decoder.push(Buffer.from('zz\r\n')))
  expectError('invalid_argument', () => decoder.push(Buffer.from('0\r\n\r\n')))
  expectError('invalid_argument', () => decoder.finish())
})

test('1 MiB in 64 KiB pushes: payload pieces are views of the pushed buffers', () => {
  const auth = exampleAuth()
  const payload = Buffer.alloc(1 << 20)
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 7) & 0xff
  const chunks: Buffer[] = []
  for (let at = 0; at < payload.length; at += 65536) chunks.push(payload.subarray(at, at + 65536))
  const body = encode(chunks, { mode: 'streaming-signed', auth })
  const decoder = new AwsChunkedDecoder({
    mode: 'streaming-signed',
    auth,
    decodedLength: payload.length,
  })
  const pieces: Uint8Array[] = []
  for (let at = 0; at < body.length; at += 65536) {
    const push = Uint8Array.from(body.subarray(at, at + 65536))
    for (const piece of decoder.push(push)) {
      assert.ok(piece.buffer === push.buffer, 'piece is a view, not a copy')
      pieces.push(piece)
    }
  }
  decoder.finish()
  assert.is(decoder.bytesDecoded, payload.length)
  assert.ok(Buffer.concat(pieces).equals(payload))
})

test('decodedLengthHeader and chunkedModeOf', () => {
  assert.equal(decodedLengthHeader({ 'x-amz-decoded-content-length': '0' }), { ok: true, value: 0 })
  assert.is(decodedLengthHeader({}).ok, false)
  const missing = decodedLengthHeader({})
  if (!missing.ok) assert.is(missing.code, 'missing_content_length')
  for (const bad of ['-1', '1.5', 'abc', '']) {
    const result = decodedLengthHeader({ 'x-amz-decoded-content-length': bad })
    if (result.ok) assert.unreachable(bad)
    else assert.is(result.code, 'invalid_argument')
  }
  const huge = decodedLengthHeader({ 'x-amz-decoded-content-length': String(6 * 1024 ** 3) })
  if (!huge.ok) assert.is(huge.code, 'entity_too_large')
  else assert.unreachable('6 GiB accepted')
  assert.is(chunkedModeOf({ kind: 'unsigned' }), null)
  assert.is(chunkedModeOf({ kind: 'sha256', hex: '0'.repeat(64) }), null)
  assert.is(chunkedModeOf({ kind: 'streaming-unsigned-trailer' }), 'streaming-unsigned-trailer')
})

test.run()
