/** @module A thread's free list of stream chunk buffers (STREAM_CHUNK_BYTES each). A chunk's
 * receiver hands its buffer back once done with it (ByteSource.release): back to the sending
 * thread over the stream while the stream is open, else into its own thread's list. Reusing
 * buffers instead of allocating one per chunk keeps large transfers from churning the allocator
 * (whose freed memory stays resident) and from waiting on the garbage collector to free them.
 * The list is bounded; a buffer past the bound is left to the collector. */
import { STREAM_CHUNK_BYTES } from '../protocol/limits.js'
import { countStreamedBytes } from './reclaim.js'

/** 8 MiB per thread: enough for a few dozen streams' windows to cycle without allocating. */
const FREE_CHUNKS_MAX = 32

const free: ArrayBuffer[] = []

/** A buffer of STREAM_CHUNK_BYTES, reused when one is free. Its bytes are whatever it held last:
 * the caller fills it before anything reads it. */
export function takeChunk(): Uint8Array {
  const buffer = free.pop()
  return buffer === undefined ? new Uint8Array(STREAM_CHUNK_BYTES) : new Uint8Array(buffer)
}

/** True for a chunk that is a whole buffer of the pooled size (not a view into a larger one, not
 * transferred away). */
export function isPoolable(chunk: Uint8Array): boolean {
  return (
    chunk.byteOffset === 0 &&
    chunk.byteLength === STREAM_CHUNK_BYTES &&
    chunk.buffer.byteLength === STREAM_CHUNK_BYTES &&
    chunk.buffer instanceof ArrayBuffer
  )
}

/** Keeps `chunk`'s buffer for reuse. The caller must hold no other reference to it that it still
 * reads or writes. */
export function recycleChunk(chunk: Uint8Array): void {
  if (!isPoolable(chunk)) return
  if (free.length < FREE_CHUNKS_MAX) free.push(chunk.buffer as ArrayBuffer)
  else countStreamedBytes(chunk.byteLength)
}

/** Buffers on the free list now (for tests). */
export function freeChunks(): number {
  return free.length
}
