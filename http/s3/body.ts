/** @module Request bodies: decoding (plain, or aws-chunked with per-chunk signatures and trailers)
 * and moving the bytes on. Small bodies are read whole (bounded); object bodies are cut into
 * STREAM_CHUNK_BYTES chunks and written to a stream with backpressure, so memory per request stays
 * bounded whatever the object size. A client that disconnects mid-body aborts the stream, and the
 * store then discards everything it received. */
import { createHash } from 'node:crypto'
import type { ByteSink } from '../../protocol/actor.js'
import { fail, ok, ServiceError, type ErrorCode, type Result } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import { checksumAlgorithmFromHeader, checksumBase64 } from '../../protocol/checksums.js'
import { AwsChunkedDecoder } from './aws-chunked.js'
import type { Authenticated } from './authenticate.js'
import { sha256Hex } from './sigv4.js'
import type { S3Exchange } from './exchange.js'

interface PayloadDecoder {
  push(data: Uint8Array): Uint8Array[]
  finish(): Record<string, string>
}

function payloadDecoder(auth: Authenticated): PayloadDecoder {
  const mode = auth.parsed.payload.kind
  if (mode === 'unsigned' || mode === 'sha256') {
    return { push: (data) => [data], finish: () => ({}) }
  }
  const decoder = new AwsChunkedDecoder({ mode, auth: auth.verified })
  return { push: (data) => decoder.push(data), finish: () => decoder.finish().trailers }
}

/** Declared payload size: x-amz-decoded-content-length for aws-chunked, else Content-Length; a
 * plain `Transfer-Encoding: chunked` body without Content-Length may declare its size in
 * x-amz-decoded-content-length too, as S3 allows. Neither is 411 MissingContentLength. */
export function declaredSize(ex: S3Exchange, auth: Authenticated): Result<number> {
  const streaming = auth.parsed.payload.kind.startsWith('streaming')
  const header = streaming
    ? ex.headers['x-amz-decoded-content-length']
    : (ex.headers['content-length'] ?? ex.headers['x-amz-decoded-content-length'])
  if (header === undefined) {
    if (streaming) return fail('missing_content_length', 'x-amz-decoded-content-length is required')
    return fail('missing_content_length', 'You must provide the Content-Length HTTP header.')
  }
  if (!/^\d{1,16}$/.test(header)) return fail('invalid_argument', 'invalid content length')
  return ok(Number(header))
}

function errorCodeOf(error: unknown): ErrorCode {
  return error instanceof ServiceError ? error.code : 'incomplete_body'
}

/** Reads a small body whole (XML requests, small objects), checking the signed payload hash. */
export async function readWholeBody(
  ex: S3Exchange,
  auth: Authenticated,
  maxBytes: number,
  tooLarge: ErrorCode,
): Promise<Result<{ bytes: Uint8Array; trailers: Record<string, string> }>> {
  const decoder = payloadDecoder(auth)
  const pieces: Uint8Array[] = []
  let length = 0
  try {
    for await (const data of ex.incoming as AsyncIterable<Buffer>) {
      for (const piece of decoder.push(data)) {
        length += piece.length
        if (length > maxBytes) return fail(tooLarge, `body larger than ${maxBytes} bytes`)
        pieces.push(piece)
      }
    }
    const trailers = decoder.finish()
    ex.bodyConsumed = true
    const bytes = Buffer.concat(pieces, length)
    const payload = auth.parsed.payload
    if (payload.kind === 'sha256') {
      const actual = sha256Hex(bytes)
      if (actual !== payload.hex) {
        return fail('content_sha256_mismatch', 'The provided x-amz-content-sha256 does not match')
      }
    }
    return ok({ bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), trailers })
  } catch (error) {
    return fail(errorCodeOf(error), error instanceof Error ? error.message : 'body read failed')
  }
}

/** Checks a request body that does not go to the store (XML requests) against the Content-MD5 and
 * x-amz-checksum-* the client sent with it, in headers or trailers. Object bodies are checked by
 * the store while it hashes them. */
/** A whole request body of at most `maxBytes` (an XML configuration or request), checked against
 * its Content-MD5 and x-amz-checksum-* trailers, and headers unless `checksumHeaders` is false
 * (where they describe something else). */
export async function readCheckedBody(
  ex: S3Exchange,
  auth: Authenticated,
  maxBytes: number,
  tooLarge: ErrorCode,
  checksumHeaders = true,
): Promise<Result<Uint8Array>> {
  const body = await readWholeBody(ex, auth, maxBytes, tooLarge)
  if (!body.ok) return body
  const { bytes, trailers } = body.value
  const digests = await checkBodyDigests(ex, bytes, trailers, checksumHeaders)
  if (!digests.ok) return digests
  return ok(body.value.bytes)
}

export async function checkBodyDigests(
  ex: S3Exchange,
  bytes: Uint8Array,
  trailers: Record<string, string>,
  checksumHeaders = true,
): Promise<Result<null>> {
  const md5 = ex.headers['content-md5']
  if (md5 !== undefined && createHash('md5').update(bytes).digest('base64') !== md5) {
    return fail('bad_digest', 'The Content-MD5 you specified did not match what we received.')
  }
  const headers = checksumHeaders ? Object.entries(ex.headers) : []
  for (const [name, value] of [...headers, ...Object.entries(trailers)]) {
    const algorithm = checksumAlgorithmFromHeader(name)
    if (algorithm !== null && (await checksumBase64(algorithm, bytes)) !== value) {
      return fail('checksum_mismatch', `The ${name} you specified did not match the body.`)
    }
  }
  return ok(null)
}

/** Cuts decoded pieces into owned chunks of STREAM_CHUNK_BYTES (the last may be shorter), filling
 * buffers from `fresh`. */
export class Chunker {
  private buffer: Uint8Array
  private filled = 0

  constructor(private readonly fresh: () => Uint8Array) {
    this.buffer = fresh()
  }

  push(piece: Uint8Array, out: Uint8Array[]): void {
    let offset = 0
    while (offset < piece.length) {
      const take = Math.min(piece.length - offset, STREAM_CHUNK_BYTES - this.filled)
      this.buffer.set(piece.subarray(offset, offset + take), this.filled)
      this.filled += take
      offset += take
      if (this.filled === STREAM_CHUNK_BYTES) out.push(this.take())
    }
  }

  take(): Uint8Array {
    if (this.filled < STREAM_CHUNK_BYTES) {
      // The last piece of a body: a copy of its size (it owns its buffer); the buffer is reused.
      const chunk = this.buffer.slice(0, this.filled)
      this.filled = 0
      return chunk
    }
    const chunk = this.buffer
    this.buffer = this.fresh()
    this.filled = 0
    return chunk
  }

  get pending(): number {
    return this.filled
  }

  /** The buffer being filled, once nothing more will be pushed (its bytes were taken). */
  get spare(): Uint8Array {
    return this.buffer
  }
}

/** Streams the request body to `sink`; ends the stream with the trailers, or aborts it. */
export async function pumpBody(ex: S3Exchange, auth: Authenticated, sink: ByteSink): Promise<void> {
  const decoder = payloadDecoder(auth)
  const chunker = new Chunker(() => sink.buffer())
  const ready: Uint8Array[] = []
  const md5 = createHash('md5')
  try {
    for await (const data of ex.incoming as AsyncIterable<Buffer>) {
      for (const piece of decoder.push(data)) {
        md5.update(piece)
        chunker.push(piece, ready)
      }
      for (const chunk of ready.splice(0)) await sink.write(chunk)
    }
    const trailers = decoder.finish()
    ex.bodyConsumed = true
    if (chunker.pending > 0) await sink.write(chunker.take())
    // Every body ends on a buffer whose bytes were copied out or never written; without this, each
    // small PUT would allocate a new chunk.
    sink.giveBack(chunker.spare)
    sink.end(trailers, md5.digest('hex'))
  } catch (error) {
    sink.abort(errorCodeOf(error), error instanceof Error ? error.message : 'body read failed')
  }
}
