/** @module aws-chunked: a streaming decoder for bodies sent with `Content-Encoding: aws-chunked`
 * (x-amz-content-sha256 STREAMING-*). Framing per chunk is `<hex size>[;chunk-signature=<sig>]\r\n
 * <data>\r\n`; a 0-size chunk ends the payload, followed by `\r\n` or, in the trailer modes, by
 * `name:value\r\n` trailer lines and an empty line. Signed modes chain each chunk's signature from
 * the request's seed signature and verify it as soon as the chunk's data is complete; the trailer
 * signature is verified after the last trailer line.
 * Invariants: payload pieces are subarrays of the pushed buffers (never copied), so the caller must
 * not reuse a pushed buffer while pieces from it are in use; only a chunk header or trailer line
 * split across pushes is buffered, at most CHUNK_HEADER_BYTES_MAX bytes. Bytes come from the
 * network, so every framing error is a ServiceError and never an assertion. The payload is only
 * trustworthy once finish() returns: a forged chunk is detected when it ends, after earlier pushes
 * have already handed out its first pieces. */
import assert from 'node:assert/strict'
import { createHash, type Hash } from 'node:crypto'
import { fail, ok, ServiceError, type Result } from '../../protocol/errors.js'
import { CHUNK_HEADER_BYTES_MAX, SINGLE_PUT_BYTES_MAX } from '../../protocol/limits.js'
import {
  EMPTY_SHA256_HEX,
  hmacSha256Hex,
  sha256Hex,
  signaturesEqual,
  type PayloadMode,
  type VerifiedAuth,
} from './sigv4.js'

export type ChunkedMode =
  'streaming-signed' | 'streaming-signed-trailer' | 'streaming-unsigned-trailer'

export interface AwsChunkedOptions {
  mode: ChunkedMode
  /** Required by the signed modes: the signing key, scope, date and seed signature. */
  auth?: VerifiedAuth
  /** x-amz-decoded-content-length when known: the payload must have exactly this many bytes. */
  decodedLength?: number
}

export interface AwsChunkedEnd {
  /** Trailer names lower-cased, values trimmed; x-amz-trailer-signature is not included. */
  trailers: Record<string, string>
}

export const DECODED_LENGTH_HEADER = 'x-amz-decoded-content-length'
const TRAILER_SIGNATURE = 'x-amz-trailer-signature'
const LF = 0x0a
const CR = 0x0d

/** The decoder mode for a request's payload mode, or null when the body is not aws-chunked. */
export function chunkedModeOf(payload: PayloadMode): ChunkedMode | null {
  switch (payload.kind) {
    case 'streaming-signed':
    case 'streaming-signed-trailer':
    case 'streaming-unsigned-trailer':
      return payload.kind
    case 'unsigned':
    case 'sha256':
      return null
  }
}

/** The payload size of an aws-chunked request: Content-Length counts the framing too, so S3
 * requires x-amz-decoded-content-length. */
export function decodedLengthHeader(headers: Record<string, string>): Result<number> {
  const value = headers[DECODED_LENGTH_HEADER]
  if (value === undefined) {
    return fail('missing_content_length', `aws-chunked bodies need ${DECODED_LENGTH_HEADER}`)
  }
  if (!/^[0-9]{1,16}$/.test(value)) {
    return fail('invalid_argument', `${DECODED_LENGTH_HEADER} is not a decimal byte count`)
  }
  const length = Number(value)
  if (length > SINGLE_PUT_BYTES_MAX) return fail('entity_too_large', 'Payload is too large')
  return ok(length)
}

/** Where the decoder is in the framing. 'line' reads a CRLF-terminated line (what it means depends
 * on lineKind); 'data' passes payload through; 'crlf' expects the CRLF that closes a chunk. */
type DecodeErrorCode = 'incomplete_body' | 'invalid_argument' | 'signature_mismatch'
type Stage = 'line' | 'data' | 'crlf' | 'done'
type LineKind = 'chunk-header' | 'final-crlf' | 'trailer'

export class AwsChunkedDecoder {
  private readonly mode: ChunkedMode
  private readonly auth: VerifiedAuth | null
  private readonly decodedLength: number | null
  private stage: Stage = 'line'
  private lineKind: LineKind = 'chunk-header'
  /** Start of a line that began in an earlier push (latin1: the framing is ASCII). */
  private pending = ''
  /** Payload bytes still expected in the current chunk. */
  private remaining = 0
  /** CR and LF bytes of the closing CRLF seen so far (0 or 1 between pushes). */
  private crlfSeen = 0
  private chunkSignature = ''
  private chunkHash: Hash | null = null
  private previousSignature = ''
  private decodedBytes = 0
  private trailerBytes = 0
  private trailerSignature: string | null = null
  private readonly trailerLines: string[] = []
  private readonly trailers: Record<string, string> = {}
  private failure: ServiceError | null = null

  constructor(options: AwsChunkedOptions) {
    this.mode = options.mode
    this.auth = options.auth ?? null
    this.decodedLength = options.decodedLength ?? null
    if (this.signed) {
      assert(this.auth !== null, 'signed aws-chunked needs the verified auth')
      this.previousSignature = this.auth.seedSignature
    }
    if (this.decodedLength !== null) {
      assert(Number.isInteger(this.decodedLength) && this.decodedLength >= 0)
    }
  }

  /** Payload bytes handed out so far. */
  get bytesDecoded(): number {
    return this.decodedBytes
  }

  private get signed(): boolean {
    return this.mode !== 'streaming-unsigned-trailer'
  }

  /** Decodes the next bytes of the body; returns the payload pieces they contain, in order. */
  push(data: Uint8Array): Uint8Array[] {
    if (this.failure !== null) throw this.failure
    const pieces: Uint8Array[] = []
    try {
      let position = 0
      while (position < data.length) {
        position = this.step(data, position, pieces)
      }
    } catch (error) {
      if (error instanceof ServiceError) this.failure = error
      throw error
    }
    return pieces
  }

  /** Ends the body. Throws ServiceError('incomplete_body') when it stopped inside the framing. */
  finish(): AwsChunkedEnd {
    if (this.failure !== null) throw this.failure
    // The SDKs end an unsigned trailer body right after its last line, without the empty line.
    // Likewise a signed body may stop after its final chunk header: that chunk was verified.
    if (this.stage === 'line' && this.pending === '') {
      if (this.lineKind === 'trailer') this.endTrailers()
      if (this.lineKind === 'final-crlf') this.stage = 'done'
    }
    if (this.stage !== 'done')
      this.reject('incomplete_body', 'Body ended inside aws-chunked framing')
    if (this.decodedLength !== null && this.decodedBytes !== this.decodedLength) {
      this.reject(
        'incomplete_body',
        `Payload has ${this.decodedBytes} bytes, not the declared size`,
      )
    }
    return { trailers: { ...this.trailers } }
  }

  private step(data: Uint8Array, position: number, pieces: Uint8Array[]): number {
    switch (this.stage) {
      case 'line':
        return this.readLine(data, position)
      case 'data':
        return this.readData(data, position, pieces)
      case 'crlf':
        return this.readCrlf(data, position)
      case 'done':
        return this.reject('invalid_argument', 'Data after the end of the aws-chunked body')
    }
  }

  private readData(data: Uint8Array, position: number, pieces: Uint8Array[]): number {
    const take = Math.min(this.remaining, data.length - position)
    const piece = data.subarray(position, position + take)
    this.chunkHash?.update(piece)
    pieces.push(piece)
    this.remaining -= take
    this.decodedBytes += take
    if (this.remaining === 0) {
      if (this.chunkHash !== null) this.verifyChunk(this.chunkHash.digest('hex'))
      this.chunkHash = null
      this.stage = 'crlf'
      this.crlfSeen = 0
    }
    return position + take
  }

  private readCrlf(data: Uint8Array, position: number): number {
    const expected = this.crlfSeen === 0 ? CR : LF
    if (data[position] !== expected)
      this.reject('invalid_argument', 'Chunk data not followed by CRLF')
    this.crlfSeen += 1
    if (this.crlfSeen === 2) {
      this.stage = 'line'
      this.lineKind = 'chunk-header'
    }
    return position + 1
  }

  /** Completes a line when its LF is within reach, else keeps what there is for the next push. */
  private readLine(data: Uint8Array, position: number): number {
    const room = CHUNK_HEADER_BYTES_MAX - this.pending.length
    const window = data.subarray(position, position + room)
    const lf = window.indexOf(LF)
    if (lf < 0) {
      if (window.length === room) this.reject('invalid_argument', 'aws-chunked line is too long')
      this.pending += latin1(window)
      return position + window.length
    }
    const line = this.pending + latin1(window.subarray(0, lf))
    this.pending = ''
    if (!line.endsWith('\r')) this.reject('invalid_argument', 'aws-chunked line not ended by CRLF')
    this.handleLine(line.slice(0, -1))
    return position + lf + 1
  }

  private handleLine(line: string): void {
    switch (this.lineKind) {
      case 'chunk-header':
        return this.chunkHeader(line)
      case 'final-crlf':
        if (line !== '') this.reject('invalid_argument', 'Data after the final aws-chunked chunk')
        this.stage = 'done'
        return
      case 'trailer':
        return line === '' ? this.endTrailers() : this.trailerLine(line)
    }
  }

  private chunkHeader(line: string): void {
    const match = this.signed
      ? /^([0-9a-fA-F]{1,16});chunk-signature=([0-9a-fA-F]{64})$/.exec(line)
      : /^([0-9a-fA-F]{1,16})(?:;.*)?$/.exec(line)
    if (match === null) this.reject('invalid_argument', 'Malformed aws-chunked chunk header')
    const size = parseInt(match[1] ?? '', 16)
    const declaredMax = this.decodedLength ?? SINGLE_PUT_BYTES_MAX
    if (this.decodedBytes + size > declaredMax) {
      this.reject('invalid_argument', 'aws-chunked payload exceeds its declared size')
    }
    this.chunkSignature = match[2] ?? ''
    if (size > 0) {
      this.remaining = size
      this.chunkHash = this.signed ? createHash('sha256') : null
      this.stage = 'data'
      return
    }
    if (this.signed) this.verifyChunk(EMPTY_SHA256_HEX)
    this.lineKind = this.mode === 'streaming-signed' ? 'final-crlf' : 'trailer'
  }

  private verifyChunk(dataHashHex: string): void {
    const auth = this.auth
    assert(auth !== null)
    const toSign = [
      'AWS4-HMAC-SHA256-PAYLOAD',
      auth.amzDate,
      auth.scope,
      this.previousSignature,
      EMPTY_SHA256_HEX,
      dataHashHex,
    ].join('\n')
    const expected = hmacSha256Hex(auth.signingKey, toSign)
    if (!signaturesEqual(expected, this.chunkSignature)) {
      this.reject('signature_mismatch', 'aws-chunked chunk signature does not match')
    }
    this.previousSignature = expected
  }

  private trailerLine(line: string): void {
    this.trailerBytes += line.length + 2
    if (this.trailerBytes > CHUNK_HEADER_BYTES_MAX)
      this.reject('invalid_argument', 'Trailer too long')
    if (this.trailerSignature !== null) {
      this.reject('invalid_argument', `${TRAILER_SIGNATURE} must be the last trailer`)
    }
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (colon <= 0 || !/^[a-z0-9-]+$/.test(name))
      this.reject('invalid_argument', 'Malformed trailer')
    if (name === TRAILER_SIGNATURE) {
      if (this.mode !== 'streaming-signed-trailer') {
        this.reject('invalid_argument', `${TRAILER_SIGNATURE} in an unsigned body`)
      }
      this.trailerSignature = value
      return
    }
    if (Object.hasOwn(this.trailers, name)) this.reject('invalid_argument', `Trailer ${name} twice`)
    this.trailers[name] = value
    this.trailerLines.push(`${name}:${value}\n`)
  }

  private endTrailers(): void {
    if (this.mode === 'streaming-signed-trailer') this.verifyTrailers()
    this.stage = 'done'
  }

  /** The trailer signature covers the trailer lines as `name:value\n`, chained from the final
   * chunk's signature. Required even without trailers: otherwise stripping them would pass. */
  private verifyTrailers(): void {
    const auth = this.auth
    assert(auth !== null)
    if (this.trailerSignature === null) {
      this.reject('signature_mismatch', `Missing ${TRAILER_SIGNATURE}`)
    }
    const toSign = [
      'AWS4-HMAC-SHA256-TRAILER',
      auth.amzDate,
      auth.scope,
      this.previousSignature,
      sha256Hex(this.trailerLines.join('')),
    ].join('\n')
    const expected = hmacSha256Hex(auth.signingKey, toSign)
    if (!signaturesEqual(expected, this.trailerSignature)) {
      this.reject('signature_mismatch', 'aws-chunked trailer signature does not match')
    }
  }

  private reject(code: DecodeErrorCode, detail: string): never {
    throw new ServiceError(code, detail)
  }
}

function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
}
