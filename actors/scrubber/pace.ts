/** @module The scrubber's pace and progress, as pure functions. A pass reads every blob at
 * max(1 MiB/s, stored bytes / period) (CLUSTER.md section 8), so it ends within the period, and
 * the next starts a period after it began. Stored bytes are the store's logical bytes (each
 * reference counted), which bound the blob bytes from above: with deduplication a pass ends a
 * little early, never late. Each blob costs at least BLOB_COST_BYTES_MIN of the pace (a small
 * blob still costs a read). Progress is the cursor's place in the SHA-256 space: blobs are
 * spread evenly over it, so no count is needed. */

/** The slowest a pass reads, bytes per second. */
export const SCAN_BYTES_PER_SECOND_MIN = 1024 * 1024
export const BLOB_COST_BYTES_MIN = 4 * 1024
/** A pace a blob ahead of its time by less than this goes on without a timer: reads come in small
 * bursts rather than one timer per small blob. */
export const PACE_SLACK_MS = 50
/** How long the scrubber waits when the store is busy (more than LOAD_YIELD requests and GET
 * streams in hand): client traffic goes first. */
export const LOAD_YIELD = 16
export const YIELD_MS = 500

/** Bytes per millisecond a pass reads at. */
export function scanBytesPerMs(storedBytes: number, periodMs: number): number {
  const floor = SCAN_BYTES_PER_SECOND_MIN / 1000
  return Math.max(floor, storedBytes / periodMs)
}

/** When the next blob of the pass may be read, after one of `size` bytes was read at `nowMs`. */
export function nextPaceMs(
  paceUntilMs: number,
  nowMs: number,
  size: number,
  bytesPerMs: number,
): number {
  return Math.max(paceUntilMs, nowMs) + Math.max(size, BLOB_COST_BYTES_MIN) / bytesPerMs
}

/** How far a pass is, 0..1, from the last blob it checked (null: none yet). */
export function progressOf(cursor: string | null): number {
  if (cursor === null) return 0
  return Number.parseInt(cursor.slice(0, 8), 16) / 2 ** 32
}
