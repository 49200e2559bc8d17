/** @module Reading a blob file the store lent (GetResult.lent): a single node's ingress opens the
 * file of a GET itself, so the bytes go from the page cache into the ingress's own pooled chunks
 * and on to the socket, instead of being read on the store's thread and posted across in chunks
 * (measured on GETs of 1 MiB: the store's thread spent about 1 ms per GET on opening, reads, posts,
 * fresh chunks and their collection). The store keeps the file from removal for LOAN_PIN_MS, and
 * an open file stays readable once removed, so a file that does not open was never there or is
 * damaged: that fails `corrupt`, as a CRC32 mismatch of a whole read does, before the last chunk
 * goes out; the reader's `onDamage` tells the store. The descriptor is this thread's own, opened
 * at the first `next` and closed at the end, on cancel or on failure. */
import { close, open, read } from 'node:fs'
import type { ByteSource } from '../protocol/actor.js'
import { crc32Update } from '../protocol/checksums.js'
import { ServiceError } from '../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../protocol/limits.js'
import type { LentFile } from '../protocol/messages.js'
import { recycleChunk, takeChunk } from './chunk-pool.js'

export class LoanSource implements ByteSource {
  private start = 0
  private end: number
  private offset = 0
  private crc = 0
  private fd: Promise<number> | null = null
  /** The read of the next chunk, started while the current one is sent. */
  private ahead: Promise<Uint8Array> | null = null
  private finished = false

  constructor(
    private readonly lent: LentFile,
    private readonly deadlineMs: number,
    private readonly now: () => number,
    private readonly onDamage: (why: string) => void,
  ) {
    this.end = lent.size - 1
  }

  request(start: number, end: number): void {
    if (!(0 <= start && start <= end && end < this.lent.size) || this.fd !== null) {
      throw new ServiceError('invalid_range', `range ${start}-${end} of ${this.lent.size} bytes`)
    }
    this.start = start
    this.end = end
    this.offset = start
  }

  async next(): Promise<Uint8Array | null> {
    if (this.finished) return null
    if (this.offset > this.end) {
      this.finish()
      return null
    }
    try {
      if (this.now() > this.deadlineMs) {
        throw new ServiceError('timeout', 'reading a blob file outlived its deadline')
      }
      this.fd ??= quiet(openFirst(this.lent.paths))
      const chunk = await (this.ahead ?? this.readAt(this.offset))
      this.offset += chunk.byteLength
      this.ahead = this.offset <= this.end ? quiet(this.readAt(this.offset)) : null
      if (this.start === 0 && this.end === this.lent.size - 1) this.check(chunk)
      return chunk
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'corrupt') this.onDamage(error.message)
      this.finish()
      throw error
    }
  }

  /** CRC32 over a whole read, checked before its last chunk is handed out. */
  private check(chunk: Uint8Array): void {
    this.crc = crc32Update(this.crc, chunk)
    if (this.offset <= this.end || this.crc === this.lent.crc32) return
    throw new ServiceError('corrupt', `blob ${this.lent.sha256} fails its CRC32`)
  }

  private async readAt(position: number): Promise<Uint8Array> {
    const fd = await (this.fd as Promise<number>)
    const length = Math.min(STREAM_CHUNK_BYTES, this.end + 1 - position)
    const chunk = takeChunk()
    let filled = 0
    // Bounded: every turn reads at least one byte of `length`, or fails.
    while (filled < length) {
      const bytes = await readInto(fd, chunk, filled, length - filled, position + filled)
      if (bytes === 0) {
        throw new ServiceError('corrupt', `blob ${this.lent.sha256}'s file is short`)
      }
      filled += bytes
    }
    return length === chunk.byteLength ? chunk : chunk.subarray(0, length)
  }

  trailers(): Record<string, string> {
    return {}
  }

  md5(): string | undefined {
    return undefined
  }

  release(chunk: Uint8Array): void {
    if (chunk.byteOffset === 0 && chunk.buffer.byteLength === STREAM_CHUNK_BYTES) {
      recycleChunk(new Uint8Array(chunk.buffer as ArrayBuffer))
    }
  }

  cancel(): void {
    this.finish()
  }

  /** Closes the file once, after the read ahead (if any) ended. */
  private finish(): void {
    if (this.finished) return
    this.finished = true
    const fd = this.fd
    const ahead = this.ahead ?? Promise.resolve()
    this.ahead = null
    if (fd === null) return
    const closeFd = (): void => {
      fd.then(
        (opened) => close(opened, () => undefined),
        () => undefined,
      )
    }
    ahead.then(closeFd, closeFd)
  }
}

/** `promise` itself, marked handled: a read ahead may fail while nobody awaits it yet (the next
 * `next` or `finish` does), which must not count as an unhandled rejection. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined)
  return promise
}

/** The first of `paths` that opens; `corrupt` when none does (the store pins the file, so it was
 * never there or is gone for good). */
async function openFirst(paths: readonly string[]): Promise<number> {
  for (const path of paths) {
    const fd = await new Promise<number | null>((resolve, reject) => {
      open(path, 'r', (error, opened) => {
        if (error === null) resolve(opened)
        else if (error.code === 'ENOENT') resolve(null)
        else reject(new ServiceError('internal', `opening a blob file: ${error.message}`))
      })
    })
    if (fd !== null) return fd
  }
  throw new ServiceError('corrupt', 'blob file is missing')
}

function readInto(
  fd: number,
  chunk: Uint8Array,
  at: number,
  length: number,
  position: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, chunk, at, length, position, (error, bytes) => {
      if (error === null) resolve(bytes)
      else reject(new ServiceError('internal', `reading a blob file: ${error.message}`))
    })
  })
}
