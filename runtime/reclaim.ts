/** @module Prompt reclamation of streamed body buffers. Chunks are short-lived ArrayBuffers whose
 * memory lives outside the V8 heap; V8 collects them only when a thread's external memory grows by
 * about 64 MiB since its last collection, so with several actor threads moving a large object the
 * node would hold a few hundred MiB of dead chunks. Each thread counts the body bytes it moves and
 * runs a young-generation collection (about a millisecond with these small heaps) every
 * RECLAIM_EVERY_BYTES; `--expose-gc` is set by main.ts before the threads start. Under high
 * concurrency buffers wait long enough (a socket read queued behind a full stream window) to be
 * promoted to the old generation, which only a major collection frees: every
 * MAJOR_RECLAIM_EVERY_BYTES one starts, marking concurrently. With 64 1 MiB transfers at once this
 * held the node's peak RSS about 50 MB lower. */
const RECLAIM_EVERY_BYTES = 4 * 1024 * 1024
const MAJOR_RECLAIM_EVERY_BYTES = 64 * 1024 * 1024

let movedSinceReclaim = 0
let movedSinceMajor = 0
type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void

export function countStreamedBytes(bytes: number): void {
  movedSinceReclaim += bytes
  if (movedSinceReclaim < RECLAIM_EVERY_BYTES) return
  movedSinceMajor += movedSinceReclaim
  movedSinceReclaim = 0
  const gc = (globalThis as { gc?: GcFunction }).gc
  if (movedSinceMajor >= MAJOR_RECLAIM_EVERY_BYTES) {
    movedSinceMajor = 0
    gc?.({ type: 'major', execution: 'async' })
  } else {
    gc?.({ type: 'minor' })
  }
}
