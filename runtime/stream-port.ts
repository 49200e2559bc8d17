/** @module Byte streams over a MessagePort with credit-based backpressure. The receiver grants
 * credit (one chunk per credit, STREAM_WINDOW_CHUNKS up front) and the sender never posts a chunk
 * without one, so a stream holds at most a window of chunks in flight whatever the speeds. Chunks
 * are transferred, not copied. A peer that dies closes the port, which fails the other end at once;
 * a stream without progress for STREAM_IDLE_TIMEOUT_MS fails with `timeout`. */
import { MessageChannel, MessagePort } from 'node:worker_threads'
import type { ByteSink, ByteSource, StreamHandle, WriteLoan } from '../protocol/actor.js'
import type { BodyDigests } from '../protocol/objects.js'
import { ServiceError, type ErrorCode } from '../protocol/errors.js'
import { STREAM_IDLE_TIMEOUT_MS, STREAM_WINDOW_CHUNKS } from '../protocol/timing.js'
import { owningCopy } from './transfer.js'
import { countStreamedBytes } from './reclaim.js'
import { isPoolable, recycleChunk, takeChunk } from './chunk-pool.js'

/** Frames to the receiver. A lent write's sender sends `written` (a chunk is in the file) in
 * place of `data`, and its `end` carries the digests. */
export type ToSource =
  | { t: 'data'; chunk: Uint8Array }
  | { t: 'written' }
  | { t: 'end'; trailers: Record<string, string>; md5?: string; written?: BodyDigests }
  | { t: 'abort'; code: ErrorCode; detail: string }
/** Frames to the sender; `lend` hands it the file of a lent write. */
export type ToSink =
  | { t: 'credit'; n: number }
  | { t: 'recycle'; chunk: Uint8Array }
  | { t: 'demand'; start: number; end: number }
  | { t: 'cancel'; code: ErrorCode; detail: string }
  | { t: 'lend'; loan: WriteLoan }

export function openStream(): [StreamHandle, StreamHandle] {
  const channel = new MessageChannel()
  return [channel.port1, channel.port2]
}

export function asPort(handle: StreamHandle): MessagePort {
  if (!(handle instanceof MessagePort)) throw new TypeError('stream handle is not a MessagePort')
  return handle
}

/** One waiter at a time, failed by a timer when nothing arrives in time. */
export class Waiter<T> {
  private pending: { resolve: (v: T) => void; reject: (e: unknown) => void } | null = null
  private timer: NodeJS.Timeout | null = null

  wait(what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending = { resolve, reject }
      this.timer = setTimeout(() => {
        this.fail(new ServiceError('timeout', `stream idle too long waiting for ${what}`))
      }, STREAM_IDLE_TIMEOUT_MS)
      // The bound of a wait, not a reason to live: a process with nothing else to do can end.
      this.timer.unref()
    })
  }
  get waiting(): boolean {
    return this.pending !== null
  }
  wake(value: T): void {
    const pending = this.take()
    pending?.resolve(value)
  }
  fail(error: unknown): void {
    const pending = this.take()
    pending?.reject(error)
  }
  private take(): { resolve: (v: T) => void; reject: (e: unknown) => void } | null {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    const pending = this.pending
    this.pending = null
    return pending
  }
}

export class PortSource implements ByteSource {
  private readonly port: MessagePort
  private readonly queue: Uint8Array[] = []
  private done: {
    trailers: Record<string, string>
    md5: string | undefined
    written: BodyDigests | undefined
  } | null = null
  private failure: ServiceError | null = null
  /** Set once this end closed the port: released buffers then stay on this thread. */
  private portClosed = false
  private readonly waiter = new Waiter<void>()

  constructor(handle: StreamHandle) {
    this.port = asPort(handle)
    this.port.on('message', (frame: ToSource) => this.onFrame(frame))
    this.port.on('close', () => {
      if (this.done === null) this.onFailure(new ServiceError('unavailable', 'stream peer gone'))
    })
    this.post({ t: 'credit', n: STREAM_WINDOW_CHUNKS })
  }

  private post(frame: ToSink): void {
    try {
      this.port.postMessage(frame)
    } catch {
      // The port is closed; the close handler reports it.
    }
  }

  private onFrame(frame: ToSource): void {
    if (frame.t === 'data') this.queue.push(frame.chunk)
    else if (frame.t === 'end') {
      this.done = { trailers: frame.trailers, md5: frame.md5, written: frame.written }
    } else if (frame.t === 'abort') this.onFailure(new ServiceError(frame.code, frame.detail))
    // `written`: progress of a lent write, which wakes its waiter (and so restarts its idle time).
    this.waiter.wake()
  }

  private onFailure(error: ServiceError): void {
    if (this.failure !== null) return
    this.failure = error
    this.waiter.fail(error)
  }

  async next(): Promise<Uint8Array | null> {
    for (;;) {
      const chunk = this.queue.shift()
      if (chunk !== undefined) {
        // A pooled buffer is handed back by release; any other dies on this thread.
        if (!isPoolable(chunk)) countStreamedBytes(chunk.length)
        this.post({ t: 'credit', n: 1 })
        return chunk
      }
      if (this.done !== null) {
        this.closePort()
        return null
      }
      if (this.failure !== null) throw this.failure
      await this.waiter.wait('data')
    }
  }

  trailers(): Record<string, string> {
    return this.done?.trailers ?? {}
  }

  md5(): string | undefined {
    return this.done?.md5
  }

  request(start: number, end: number): void {
    this.post({ t: 'demand', start, end })
  }

  async lendWrite(loan: WriteLoan): Promise<BodyDigests> {
    this.post({ t: 'lend', loan })
    for (;;) {
      if (this.queue.length > 0) {
        this.cancel('invalid_request', 'bytes sent on a stream that lent its file')
      }
      if (this.failure !== null) throw this.failure
      if (this.done !== null) {
        this.closePort()
        if (this.done.written === undefined) {
          throw new ServiceError('invalid_request', 'a lent write ended without its digests')
        }
        return this.done.written
      }
      await this.waiter.wait('a lent write')
    }
  }

  release(chunk: Uint8Array): void {
    if (!isPoolable(chunk)) return
    if (this.portClosed) {
      recycleChunk(chunk)
      return
    }
    try {
      this.port.postMessage({ t: 'recycle', chunk } satisfies ToSink, [chunk.buffer as ArrayBuffer])
    } catch {
      recycleChunk(chunk)
    }
  }

  cancel(code: ErrorCode, detail: string): void {
    this.post({ t: 'cancel', code, detail })
    this.failure ??= new ServiceError(code, detail)
    this.closePort()
  }

  private closePort(): void {
    this.portClosed = true
    this.port.close()
  }
}

export class PortSink implements ByteSink {
  private readonly port: MessagePort
  private credit = 0
  private cancelled: ServiceError | null = null
  private finished = false
  private demanded: { start: number; end: number } | null = null
  private readonly creditWaiter = new Waiter<void>()
  private readonly demandWaiter = new Waiter<{ start: number; end: number } | null>()
  /** Told once when the receiver cancels or goes away (or this end aborts). */
  private cancelListeners: ((error: ServiceError) => void)[] = []

  constructor(handle: StreamHandle) {
    this.port = asPort(handle)
    this.port.on('message', (frame: ToSink) => this.onFrame(frame))
    this.port.on('close', () => {
      if (!this.finished) this.onCancel(new ServiceError('unavailable', 'stream peer gone'))
    })
  }

  private onFrame(frame: ToSink): void {
    if (frame.t === 'credit') {
      this.credit += frame.n
      this.creditWaiter.wake()
    } else if (frame.t === 'recycle') {
      recycleChunk(frame.chunk)
    } else if (frame.t === 'demand') {
      this.demanded = { start: frame.start, end: frame.end }
      this.demandWaiter.wake(this.demanded)
    } else if (frame.t === 'cancel') {
      this.onCancel(new ServiceError(frame.code, frame.detail))
    } else {
      // A file lent to a sender of bytes: the receiver expects a lent write (LentWriteSink).
      this.onCancel(new ServiceError('internal', 'a file lent on a stream that sends bytes'))
    }
  }

  private onCancel(error: ServiceError): void {
    if (this.cancelled !== null) return
    this.cancelled = error
    this.creditWaiter.fail(error)
    this.demandWaiter.wake(null)
    for (const listener of this.cancelListeners.splice(0)) listener(error)
  }

  /** Resolves when the receiver cancels or goes away, even while nothing is being written (a
   * bridge to another transport ends its side at once then); never once the stream ended. */
  whenCancelled(): Promise<ServiceError> {
    if (this.cancelled !== null) return Promise.resolve(this.cancelled)
    return new Promise((resolve) => this.cancelListeners.push(resolve))
  }

  async write(chunk: Uint8Array): Promise<void> {
    while (this.credit === 0) {
      if (this.cancelled !== null) throw this.cancelled
      await this.creditWaiter.wait('credit')
    }
    if (this.cancelled !== null) throw this.cancelled
    this.credit--
    // What the sender made the chunk from (the ingress's socket reads) is garbage now.
    countStreamedBytes(chunk.length)
    const owned = owningCopy(chunk)
    const frame: ToSource = { t: 'data', chunk: owned }
    this.port.postMessage(frame, [owned.buffer as ArrayBuffer])
  }

  buffer(): Uint8Array {
    return takeChunk()
  }

  giveBack(buffer: Uint8Array): void {
    recycleChunk(buffer)
  }

  end(trailers: Record<string, string> = {}, md5Hex?: string): void {
    if (this.finished || this.cancelled !== null) return
    this.finished = true
    const frame: ToSource = { t: 'end', trailers }
    if (md5Hex !== undefined) frame.md5 = md5Hex
    this.port.postMessage(frame)
  }

  abort(code: ErrorCode, detail: string): void {
    if (this.finished) return
    this.finished = true
    // A write waiting for credit fails now rather than at the idle timeout.
    this.onCancel(new ServiceError(code, detail))
    try {
      this.port.postMessage({ t: 'abort', code, detail } satisfies ToSource)
    } catch {
      // Already closed: the receiver has gone and knows.
    }
    this.port.close()
  }

  async demand(): Promise<{ start: number; end: number } | null> {
    if (this.demanded !== null) return this.demanded
    if (this.cancelled !== null) return null
    try {
      return await this.demandWaiter.wait('a read request')
    } catch {
      return null
    }
  }
}
