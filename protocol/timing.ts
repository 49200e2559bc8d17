/** @module Timing shared by the ingress and the actors: request deadlines, the stream window, and
 * the two ways a wait is bounded. The ingress derives each request's deadline from these; actors
 * and links enforce it. */

/** Default deadline of a request without a body stream. */
export const CALL_TIMEOUT_MS = 30_000
/** A body stream that makes no progress for this long is aborted with `timeout`. */
export const STREAM_IDLE_TIMEOUT_MS = 60_000
/** Chunks a stream sender may run ahead of its receiver (credit window). With 256 KiB chunks this
 * bounds a stream's in-flight bytes to 512 KiB; a third chunk in flight served no faster. */
export const STREAM_WINDOW_CHUNKS = 2
/** Slowest transfer rate a streamed request's deadline allows for, in bytes per second. */
export const STREAM_RATE_BYTES_MIN = 256 * 1024
/** A streamed request never gets more than this, whatever its size. */
export const STREAM_DEADLINE_MS_MAX = 6 * 3600 * 1000

/** Deadline of a request that moves `bytes` on a stream, starting now. */
export function streamDeadlineMs(nowMs: number, bytes: number): number {
  const transferMs = Math.ceil((bytes / STREAM_RATE_BYTES_MIN) * 1000)
  return nowMs + Math.min(STREAM_DEADLINE_MS_MAX, CALL_TIMEOUT_MS + transferMs)
}

/** How long a blob file lent to a reader of the store's process (GetResult.lent) is kept from
 * removal as garbage: the reader opens it at once, and an open file stays readable. */
export const LOAN_PIN_MS = CALL_TIMEOUT_MS

/** Bounds `promise` by `ms`: it rejects, naming `what`, when the time is up first. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)
  })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

/** The first of `waits` to settle, or null once `ms` passed: for a caller that moves on (to
 * another node, say) rather than failing. */
export async function firstWithin<T>(waits: Promise<T>[], ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms)
  })
  try {
    return await Promise.race([...waits, late])
  } finally {
    clearTimeout(timer)
  }
}

/** A background worker's failures (the scrubber's, the lifecycle actor's) back off 1.5^n seconds
 * (Garage's workers), at most BACKOFF_MS_MAX. */
export const BACKOFF_MS_MAX = 60_000
const BACKOFF_BASE_MS = 1_000

/** The wait after `consecutive` failures in a row (1 or more). */
export function backoffMs(consecutive: number): number {
  return Math.min(BACKOFF_MS_MAX, BACKOFF_BASE_MS * 1.5 ** (consecutive - 1))
}
