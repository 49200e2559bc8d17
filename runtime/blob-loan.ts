/** @module Reading a blob file the store lent (GetResult.lent): a single node's ingress opens the
 * file of a GET itself, so the bytes go from the page cache into the ingress's own pooled chunks
 * and on to the socket, instead of being read on the store's thread and posted across in chunks
 * (the store's thread would spend its time on opening, reads, posts, fresh chunks and their
 * collection). The store keeps the file from removal for LOAN_PIN_MS, and
 * an open file stays readable once removed, so a file that does not open was never there or is
 * damaged: that fails `corrupt`, as a CRC32 mismatch of a whole read does, before the last chunk
 * goes out; the reader's `onDamage` tells the store. The descriptor is this thread's own, opened
 * at the first `next` and closed at the end, on cancel or on failure.
 *
 * Opens, reads and closes are synchronous, as nginx reads files by default: a read the page cache
 * holds takes the kernel's copy and no more, where a read on libuv's pool cost as much again in
 * hand-offs between threads, and an open and close several times theirs. The price is that a read
 * from a cold disk holds this thread's other requests for its duration. */
import { closeSync, openSync, readSync } from 'node:fs'
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
  private fd: number | null = null
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

  next(): Promise<Uint8Array | null> {
    if (this.finished) return Promise.resolve(null)
    if (this.offset > this.end) {
      this.finish()
      return Promise.resolve(null)
    }
    try {
      if (this.now() > this.deadlineMs) {
        throw new ServiceError('timeout', 'reading a blob file outlived its deadline')
      }
      this.fd ??= openFirst(this.lent.paths)
      const chunk = this.readAt(this.fd, this.offset)
      this.offset += chunk.byteLength
      if (this.start === 0 && this.end === this.lent.size - 1) this.check(chunk)
      return Promise.resolve(chunk)
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'corrupt') this.onDamage(error.message)
      this.finish()
      return Promise.reject(error instanceof Error ? error : new Error(String(error)))
    }
  }

  /** CRC32 over a whole read, checked before its last chunk is handed out. */
  private check(chunk: Uint8Array): void {
    this.crc = crc32Update(this.crc, chunk)
    if (this.offset <= this.end || this.crc === this.lent.crc32) return
    throw new ServiceError('corrupt', `blob ${this.lent.sha256} fails its CRC32`)
  }

  private readAt(fd: number, position: number): Uint8Array {
    const length = Math.min(STREAM_CHUNK_BYTES, this.end + 1 - position)
    const chunk = takeChunk()
    let filled = 0
    // Bounded: every turn reads at least one byte of `length`, or fails.
    while (filled < length) {
      const bytes = readInto(fd, chunk, filled, length - filled, position + filled)
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

  private finish(): void {
    if (this.finished) return
    this.finished = true
    if (this.fd !== null) closeSync(this.fd)
  }
}

/** The first of `paths` that opens; `corrupt` when none does (the store pins the file, so it was
 * never there or is gone for good). */
function openFirst(paths: readonly string[]): number {
  for (const path of paths) {
    try {
      return openSync(path, 'r')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw new ServiceError('internal', `opening a blob file: ${(error as Error).message}`)
    }
  }
  throw new ServiceError('corrupt', 'blob file is missing')
}

function readInto(
  fd: number,
  chunk: Uint8Array,
  at: number,
  length: number,
  position: number,
): number {
  try {
    return readSync(fd, chunk, at, length, position)
  } catch (error) {
    throw new ServiceError('internal', `reading a blob file: ${(error as Error).message}`)
  }
}
