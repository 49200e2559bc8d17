/** @module The sink of a body sent to a peer from the transport's own thread (Peers.openWrite):
 * each write encodes its chunk as Frames at once, copying the bytes (the caller's buffer is
 * neither kept nor detached, so one chunk can go to several peers), and hands them to the gRPC
 * call. gRPC is given the encoded bytes, not the chunk: a Writable that is still writing queues
 * what it is given, so handing it the chunk would keep it. A write resolves once at most
 * SENDING_WINDOW_FRAMES - 1 of the frames written so far wait for HTTP/2, whose flow control holds
 * back the rest: a peer that stops reading stops a writer that waits for its writes. `end` sends
 * the end frame, `abort` the abort frame; a failed call (`stop`) fails every later write with its
 * code. */
import type { CopyingSink } from '../../protocol/cluster.js'
import { ServiceError, type ErrorCode } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import {
  abortFrame,
  endFrame,
  FRAME_CHUNK_BYTES,
  SENDING_WINDOW_FRAMES,
  type Frame,
} from './body-frames.js'

/** The gRPC stream the encoded frames go to (a caller's Write call). */
export interface EncodedOutput {
  write(bytes: Buffer, flushed: (error?: Error | null) => void): boolean
  end(): void
}

interface Waiting {
  /** The count of flushed frames at which the write may resolve. */
  mark: number
  resolve: () => void
  reject: (error: ServiceError) => void
}

/** The failure of a sink stopped after its end: no write can follow, so it is never thrown. */
const ENDED = new ServiceError('unavailable', 'the body had ended')

export class FrameSink implements CopyingSink {
  readonly copies = true
  private written = 0
  private flushed = 0
  /** Writes waiting for HTTP/2, in the order of their marks: at most one per write not resolved,
   * which the writer bounds. */
  private readonly waiting: Waiting[] = []
  private failure: ServiceError | null = null
  private finished = false
  private readonly demandWaiters: ((range: null) => void)[] = []

  /** `onAbort` hears of the writer's abort, once it is sent. */
  constructor(
    private readonly output: EncodedOutput,
    private readonly encode: (frame: Frame) => Buffer,
    private readonly onAbort: (code: ErrorCode, detail: string) => void,
  ) {}

  /** A sink for a call that never started: every write fails with `code`. */
  static refused(code: ErrorCode, detail: string): FrameSink {
    const output = { write: () => false, end: () => undefined }
    const sink = new FrameSink(
      output,
      () => Buffer.alloc(0),
      () => undefined,
    )
    sink.stop(code, detail)
    return sink
  }

  write(chunk: Uint8Array): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure)
    if (this.finished) return Promise.reject(new ServiceError('internal', 'write after the end'))
    for (let offset = 0; offset < chunk.length; offset += FRAME_CHUNK_BYTES) {
      this.send({ chunk: chunk.subarray(offset, offset + FRAME_CHUNK_BYTES) }, true)
    }
    const mark = this.written - (SENDING_WINDOW_FRAMES - 1)
    if (this.flushed >= mark) return Promise.resolve()
    return new Promise((resolve, reject) => this.waiting.push({ mark, resolve, reject }))
  }

  /** Nothing to reuse: the chunks written stay the writer's. */
  buffer(): Uint8Array {
    return new Uint8Array(STREAM_CHUNK_BYTES)
  }

  giveBack(): void {}

  end(trailers: Record<string, string> = {}, md5Hex?: string): void {
    if (this.finished || this.failure !== null) return
    this.finished = true
    this.send(endFrame(trailers, md5Hex), false)
    this.output.end()
  }

  abort(code: ErrorCode, detail: string): void {
    if (this.finished) return
    const failed = this.failure !== null
    this.stop(code, detail)
    this.finished = true
    if (failed) return
    this.send(abortFrame(code, detail), false)
    this.output.end()
    this.onAbort(code, detail)
  }

  /** A body sent to a peer is never asked for a range: null once the call is over. */
  demand(): Promise<null> {
    if (this.failure !== null || this.finished) return Promise.resolve(null)
    return new Promise((resolve) => this.demandWaiters.push(resolve))
  }

  /** The call failed or was answered: later writes, and those waiting, fail with `code`. After
   * the body's end the writes waiting resolve instead: the answer says how the body fared. */
  stop(code: ErrorCode, detail: string): void {
    if (this.failure !== null) return
    // After the body's end nobody can be told: a ServiceError (its stack) is made only when some
    // writer would read it, not on every call that ends well.
    if (this.finished && this.waiting.length === 0) {
      this.failure = ENDED
      for (const resolve of this.demandWaiters.splice(0)) resolve(null)
      return
    }
    this.failure = new ServiceError(code, detail)
    for (const waiting of this.waiting.splice(0)) {
      if (this.finished) waiting.resolve()
      else waiting.reject(this.failure)
    }
    for (const resolve of this.demandWaiters.splice(0)) resolve(null)
  }

  private send(frame: Frame, counted: boolean): void {
    const bytes = this.encode(frame)
    if (!counted) {
      this.output.write(bytes, () => undefined)
      return
    }
    this.written++
    // An error comes back as the call's own failure (stop); the frame counts as gone.
    this.output.write(bytes, () => this.onFlushed())
  }

  private onFlushed(): void {
    this.flushed++
    while (this.waiting.length > 0 && (this.waiting[0] as Waiting).mark <= this.flushed) {
      ;(this.waiting.shift() as Waiting).resolve()
    }
  }
}
