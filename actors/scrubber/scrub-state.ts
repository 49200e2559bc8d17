/** @module The scrubber's state and settings. Everything here is in memory: what must outlive a
 * restart (where the pass is) goes to the store as the scrubber's record (cursor.ts), so a
 * restart is exactly a new `init`. The counters count since this scrubber started, as a
 * Prometheus counter does. */
import type { Context } from '../../protocol/actor.js'
import type { BlobEntry } from '../../protocol/scrubbing.js'

export const DAY_MS = 86_400_000
/** SPEC.md's default of SVC_SCRUBBER_FULL_SCAN_DAYS. */
export const FULL_SCAN_DAYS_DEFAULT = 30
/** Blobs a GET reported and the scrubber has not checked yet, at most; more wait for the pass. */
export const URGENT_MAX = 1_024
/** Corrupt copies remembered (so that each is counted found once), at most. */
export const KNOWN_CORRUPT_MAX = 10_000

export interface ScrubberCounters {
  blobsScanned: number
  corruptionsFound: number
  corruptionsHealed: number
}

export interface ScrubberState {
  /** A full pass's period: SVC_SCRUBBER_FULL_SCAN_DAYS. */
  readonly periodMs: number
  /** Cluster mode: this node and its pool, whose other nodes may hold a good copy; null on a
   * single node, which finds and reports but cannot heal. */
  readonly cluster: { nodeId: string; pool: string } | null
  /** Whether the record was read from the store (nothing is scanned before). */
  loaded: boolean
  /** The last blob the pass checked (null: it starts from the first). */
  cursor: string | null
  /** When the current pass, or the last one, began (null: none ever did here). */
  passStartedMs: number | null
  /** The pass ended: the next begins at `nextPassMs`. */
  passDone: boolean
  nextPassMs: number
  /** Blobs of the page being checked, in order. */
  page: BlobEntry[]
  /** Logical bytes the store holds (its last page said): the pace derives from them. */
  storedBytes: number
  /** The pace: the next blob of the pass is read no sooner. */
  paceUntilMs: number
  /** After a failure: nothing is asked of the store before this. */
  retryAtMs: number
  /** When the record was last saved. */
  savedMs: number
  readonly counters: ScrubberCounters
  /** Corrupt copies found and not healed since this scrubber started. */
  readonly knownCorrupt: Set<string>
  /** Blobs to check before the pass goes on (a GET met them), in arrival order. */
  readonly urgent: Set<string>
  readonly errors: { total: number; consecutive: number; last: string | null }
  stopping: boolean
  /** Ends the current wait at once (a report came, or stop), when the loop waits. */
  wake: (() => void) | null
}

export function createState(ctx: Context): ScrubberState {
  const days = Number(ctx.config['SVC_SCRUBBER_FULL_SCAN_DAYS'] ?? FULL_SCAN_DAYS_DEFAULT)
  const cluster =
    ctx.config['SVC_MODE'] === 'cluster'
      ? { nodeId: ctx.config['SVC_NODE_ID'] ?? '', pool: ctx.config['SVC_POOL_NAME'] ?? '' }
      : null
  return {
    periodMs: Math.max(1, Math.round(days * DAY_MS)),
    cluster,
    loaded: false,
    cursor: null,
    passStartedMs: null,
    passDone: true,
    nextPassMs: 0,
    page: [],
    storedBytes: 0,
    paceUntilMs: 0,
    retryAtMs: 0,
    savedMs: 0,
    counters: { blobsScanned: 0, corruptionsFound: 0, corruptionsHealed: 0 },
    knownCorrupt: new Set(),
    urgent: new Set(),
    errors: { total: 0, consecutive: 0, last: null },
    stopping: false,
    wake: null,
  }
}
