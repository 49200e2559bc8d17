/** @module Prompt reclamation of streamed body buffers. Chunks are short-lived ArrayBuffers whose
 * memory lives outside the V8 heap; V8 collects them only when a thread's external memory grows by
 * about 64 MiB since its last collection, so with several actor threads moving a large object the
 * node would hold a few hundred MiB of dead chunks. Each thread counts the body bytes it moves and
 * runs a young-generation collection (about a millisecond with these small heaps) every
 * RECLAIM_EVERY_BYTES; `--expose-gc` is set by main.ts before the threads start. */
const RECLAIM_EVERY_BYTES = 4 * 1024 * 1024

let movedSinceReclaim = 0
type GcFunction = (options?: { type?: 'minor' | 'major'; execution?: 'sync' | 'async' }) => void

export function countStreamedBytes(bytes: number): void {
  movedSinceReclaim += bytes
  if (movedSinceReclaim < RECLAIM_EVERY_BYTES) return
  movedSinceReclaim = 0
  const gc = (globalThis as { gc?: GcFunction }).gc
  gc?.({ type: 'minor' })
}
