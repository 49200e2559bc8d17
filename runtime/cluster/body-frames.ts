/** @module Byte streams between nodes, the same way in both directions: a body travels as the
 * `Frame`s of cluster.proto (a head, chunks of at most FRAME_CHUNK_BYTES, then an end with the
 * trailers and MD5, or an abort with an ErrorCode), bridged to a local stream port on each side.
 * `sendBody` reads a local source and writes frames, at most SENDING_WINDOW_FRAMES of them not yet
 * taken by HTTP/2, whose flow control holds back the rest: the sender stops granting credit to
 * its local writer as soon as the receiver stops reading. `BodyReceiver` writes received frames to
 * a local sink and pauses the gRPC stream while the sink has no credit, so gRPC stops reading and
 * HTTP/2 stops the sender. Each hop thus holds a bounded window, whatever the speeds. Frames from
 * another node are checked (order, sizes, JSON of the end and abort); a bad one fails the body
 * with `invalid_argument`. */
import { asServiceError, isErrorCode, type ErrorCode, ServiceError } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import type { PortSink, PortSource } from '../stream-port.js'

/** Frames handed to gRPC and not yet taken by HTTP/2, on top of its own window. */
export const SENDING_WINDOW_FRAMES = 2

/** The bytes of a chunk frame: half a stream chunk. A frame of a whole chunk (a few bytes over
 * STREAM_CHUNK_BYTES once encoded, and again with gRPC's 5-byte prefix) is past the size from
 * which the node maps each allocation of its own (main.ts), so every encoding and every gRPC
 * message cost an mmap, a page fault per 4 KiB and an munmap on both sides; half-chunk frames
 * come from malloc's reused memory, which cuts the coordinating node's CPU per PUT. A receiver
 * takes chunks of up to STREAM_CHUNK_BYTES, so nodes of either frame size work together. */
export const FRAME_CHUNK_BYTES = STREAM_CHUNK_BYTES / 2

/** A frame as @grpc/proto-loader reads it (`kind` names the member present) or as we write it. */
export interface Frame {
  kind?: 'head' | 'chunk' | 'end' | 'abort'
  head?: Buffer
  chunk?: Uint8Array
  end?: Buffer
  abort?: Buffer
}

/** A gRPC stream frames are written to: a caller's Write call, a server's Read call. */
export interface FrameOutput {
  write(frame: Frame, flushed: (error?: Error | null) => void): boolean
  end(): void
}

/** A gRPC stream frames are read from: a server's Write call, a caller's Read call. */
export interface FrameInput {
  pause(): void
  resume(): void
}

/** How a sent body ended: all of it and its end, the local writer's abort, or the call stopped. */
export type SendOutcome =
  { how: 'ended' } | { how: 'aborted'; code: ErrorCode; detail: string } | { how: 'stopped' }

/** Writes the bytes of `source` as chunk frames, then its end (or its abort), and ends `output`.
 * Stops writing, and cancels nothing, once `stopped` resolves (the call ended or failed: the
 * caller of this function then fails the source). */
export async function sendBody(
  source: PortSource,
  output: FrameOutput,
  stopped: Promise<unknown>,
): Promise<SendOutcome> {
  let stop = false
  let unflushed = 0
  let wake = (): void => undefined
  const halted = stopped.then(() => {
    stop = true
    wake()
    return null
  })
  for (;;) {
    let chunk: Uint8Array | null
    try {
      const next = source.next()
      next.catch(() => undefined) // Left behind when the call stops first.
      chunk = await Promise.race([next, halted])
    } catch (error) {
      if (stop) return { how: 'stopped' }
      const { code, detail } = failureOf(error)
      output.write(abortFrame(code, detail), () => undefined)
      output.end()
      return { how: 'aborted', code, detail }
    }
    if (stop) return { how: 'stopped' }
    if (chunk === null) {
      output.write(endFrame(source.trailers(), source.md5()), () => undefined)
      output.end()
      return { how: 'ended' }
    }
    for (let offset = 0; offset < chunk.length; offset += FRAME_CHUNK_BYTES) {
      while (unflushed >= SENDING_WINDOW_FRAMES && !stop) {
        await new Promise<void>((resolve) => (wake = resolve))
      }
      if (stop) return { how: 'stopped' }
      const piece = chunk.subarray(offset, offset + FRAME_CHUNK_BYTES)
      const last = offset + FRAME_CHUNK_BYTES >= chunk.length
      const whole = chunk
      unflushed++
      // Serialized by now; once HTTP/2 took it, the chunk's buffer goes back to its pool.
      output.write({ chunk: piece }, () => {
        unflushed--
        if (last) source.release(whole)
        wake()
      })
    }
  }
}

/** Writes the frames that follow the head to a local sink, in order, pausing `input` while the
 * sink waits for credit. `onFailure` hears of a bad frame or a receiver that cancelled. */
export class BodyReceiver {
  private queue: Promise<void> = Promise.resolve()
  private pending = 0
  private state: 'open' | 'ended' | 'failed' = 'open'

  constructor(
    private readonly sink: PortSink,
    private readonly input: FrameInput,
    private readonly onFailure: (error: ServiceError) => void,
  ) {
    void sink.whenCancelled().then((error) => this.failWith(error))
  }

  /** True once the end or an abort was written, or the body failed. */
  get finished(): boolean {
    return this.state !== 'open'
  }

  take(frame: Frame): void {
    if (this.state !== 'open') return
    if (frame.kind === 'chunk' && frame.chunk !== undefined) {
      if (frame.chunk.length > STREAM_CHUNK_BYTES) return this.refuse('a chunk over the bound')
      const chunk = frame.chunk
      this.pending++
      this.input.pause()
      this.queue = this.queue.then(() => this.write(chunk))
      return
    }
    if (frame.kind === 'end' && frame.end !== undefined) {
      const end = readEnd(frame.end)
      if (end === null) return this.refuse('a malformed end frame')
      this.state = 'ended'
      this.queue = this.queue.then(() => this.sink.end(end.trailers, end.md5))
      return
    }
    if (frame.kind === 'abort' && frame.abort !== undefined) {
      const abort = readAbort(frame.abort)
      if (abort === null) return this.refuse('a malformed abort frame')
      this.state = 'failed'
      this.queue = this.queue.then(() => this.sink.abort(abort.code, abort.detail))
      return
    }
    this.refuse(`an unexpected ${frame.kind ?? 'empty'} frame`)
  }

  /** Fails the local sink with `code` unless the body already ended or failed. */
  fail(code: ErrorCode, detail: string): void {
    if (this.state !== 'open') return
    this.state = 'failed'
    this.sink.abort(code, detail)
  }

  private async write(chunk: Uint8Array): Promise<void> {
    try {
      if (this.state === 'open' || this.state === 'ended') await this.sink.write(chunk)
    } catch (error) {
      this.failWith(asServiceError(error))
    }
    if (--this.pending === 0) this.input.resume()
  }

  private refuse(detail: string): void {
    this.fail('invalid_argument', detail)
    this.onFailure(new ServiceError('invalid_argument', detail))
  }

  private failWith(error: ServiceError): void {
    if (this.state === 'failed') return
    this.state = 'failed'
    this.onFailure(error)
  }
}

export function endFrame(trailers: Record<string, string>, md5: string | undefined): Frame {
  const end = md5 === undefined ? { trailers } : { trailers, md5 }
  return { end: Buffer.from(JSON.stringify(end), 'utf8') }
}

export function abortFrame(code: ErrorCode, detail: string): Frame {
  return { abort: Buffer.from(JSON.stringify({ code, detail }), 'utf8') }
}

/** The code and detail of a stream's failure (a ServiceError), or `internal` for anything else. */
export function failureOf(error: unknown): { code: ErrorCode; detail: string } {
  const failure = asServiceError(error)
  return { code: failure.code, detail: failure.message }
}

function parseObject(bytes: Buffer): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(bytes.toString('utf8'))
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as Record<string, unknown>)
      : null
  } catch {
    return null
  }
}

function readEnd(bytes: Buffer): { trailers: Record<string, string>; md5?: string } | null {
  const end = parseObject(bytes)
  const trailers = end?.['trailers']
  if (end === null || typeof trailers !== 'object' || trailers === null) return null
  const entries = Object.entries(trailers)
  if (!entries.every(([, value]) => typeof value === 'string')) return null
  const md5 = end['md5']
  if (md5 !== undefined && (typeof md5 !== 'string' || !/^[0-9a-f]{32}$/.test(md5))) return null
  const read = { trailers: Object.fromEntries(entries) as Record<string, string> }
  return md5 === undefined ? read : { ...read, md5 }
}

function readAbort(bytes: Buffer): { code: ErrorCode; detail: string } | null {
  const abort = parseObject(bytes)
  const code = abort?.['code']
  const detail = abort?.['detail']
  if (typeof code !== 'string' || !/^[a-z0-9_]{1,64}$/.test(code)) return null
  const named = typeof detail === 'string' ? detail : ''
  // A sender of another build may name a code this one lacks: a fault, the code kept in the detail.
  return isErrorCode(code)
    ? { code, detail: named }
    : { code: 'internal', detail: `${code}: ${named}` }
}
