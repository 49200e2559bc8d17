/** @module Gives the native memory that actor threads freed back to the system. Body chunks and
 * socket reads are malloc'd in glibc's per-thread arenas, and glibc returns freed memory on its own
 * only from the top of an arena; after a burst of large transfers the node kept resident memory
 * it no longer used, which one malloc_trim gave back down to the idle level (`npm run bench`'s
 * peak RSS of the 1 GiB transfer shows it). The supervisor's thread, which serves no requests,
 * looks at the node's RSS every TRIM_CHECK_MS and calls malloc_trim(0) (all arenas) when RSS grew
 * by TRIM_GROWTH_BYTES since the last trim, or stays that far above the lowest a trim reached (a
 * retry every TRIM_RETRY_CHECKS looks). Without glibc there is nothing to call and the trimmer does
 * not start. koffi is the FFI: it ships prebuilt, so nothing compiles at install.
 *
 * Stream chunks (STREAM_CHUNK_BYTES) are also kept out of the arenas (`mapLargeAllocations`). */
import { TRIM_CHECK_MS, TRIM_GROWTH_BYTES, TRIM_RETRY_CHECKS } from './knobs.js'
import { loadLibc } from './libc.js'

type MallocTrim = (pad: number) => number
type Mallopt = (param: number, value: number) => number

/** mallopt's parameter for the size from which malloc maps a block of its own (malloc.h). */
const M_MMAP_THRESHOLD = -3

/** Makes every allocation of at least `bytes` a mapping of its own, which free() unmaps at once.
 * glibc starts at 128 KiB but raises its threshold to the size of each mapped block freed (up to
 * 32 MiB); from the first freed chunk on, stream chunks came from the threads' arenas, where freed
 * ones stay resident between live blocks until a trim. Setting the threshold also ends that
 * raising. Called before the actor threads start; false without glibc (nothing changes). */
export async function mapLargeAllocations(bytes: number): Promise<boolean> {
  try {
    const mallopt = (await loadLibc()).lib.func('int mallopt(int param, int value)') as Mallopt
    return mallopt(M_MMAP_THRESHOLD, bytes) === 1
  } catch {
    return false
  }
}

/** A platform without koffi's prebuilt binary, or a C library without malloc_trim (musl), leaves
 * the node running untrimmed rather than unable to start. */
async function loadMallocTrim(): Promise<MallocTrim | null> {
  try {
    return (await loadLibc()).lib.func('int malloc_trim(size_t pad)') as MallocTrim
  } catch {
    return null
  }
}

/** Trims every arena now; returns the bytes of RSS given back. */
export type TrimNow = () => number

/** malloc_trim(0) over every arena, measured; null without glibc. Also the trimmer's own call. */
export async function loadTrimNow(): Promise<TrimNow | null> {
  const mallocTrim = await loadMallocTrim()
  if (mallocTrim === null) return null
  return () => {
    const before = process.memoryUsage.rss()
    mallocTrim(0)
    return Math.max(0, before - process.memoryUsage.rss())
  }
}

/** What the trimmer's checks remember between looks. */
export interface TrimWatch {
  /** The lowest RSS a trim has left: the node's own footprint, which trimming cannot go under. */
  floor: number
  /** RSS right after the last trim (or at start). */
  lastAfter: number
  checksSinceTrim: number
}

/** One look of the trimmer: trim when RSS grew by TRIM_GROWTH_BYTES since the last trim, or has
 * stayed that far above the floor for TRIM_RETRY_CHECKS looks. Counts the look. */
export function dueForTrim(watch: TrimWatch, rss: number): boolean {
  watch.checksSinceTrim++
  const grew = rss - watch.lastAfter >= TRIM_GROWTH_BYTES
  const above = rss - watch.floor >= TRIM_GROWTH_BYTES && watch.checksSinceTrim >= TRIM_RETRY_CHECKS
  return grew || above
}

/** Records a trim that left RSS at `after`. */
export function trimmed(watch: TrimWatch, after: number): void {
  watch.floor = Math.min(watch.floor, after)
  watch.lastAfter = after
  watch.checksSinceTrim = 0
}

/** Looks at the node's RSS every TRIM_CHECK_MS and trims when `dueForTrim` says so; returns the
 * stop function, or null without glibc. */
export async function startNativeTrimmer(): Promise<(() => void) | null> {
  const trimNow = await loadTrimNow()
  if (trimNow === null) return null
  const start = process.memoryUsage.rss()
  const watch: TrimWatch = { floor: start, lastAfter: start, checksSinceTrim: 0 }
  const timer = setInterval(() => {
    if (!dueForTrim(watch, process.memoryUsage.rss())) return
    trimNow()
    trimmed(watch, process.memoryUsage.rss())
  }, TRIM_CHECK_MS)
  timer.unref()
  return () => clearInterval(timer)
}
