/** @module The undici client, for what wrk (wrk.ts, the timed load phases) cannot do well: the
 * untimed deletes, which must reach every key whatever the time, and the listing's fill of zero-
 * byte objects; big.ts streams over its Pool too. One run is up to `countMax` requests from
 * `concurrency` workers over a Pool per origin with as many connections (pipelining 1), stopped
 * by whichever of count or time comes first; with several origins each path goes to its own.
 * Paths are ready-made (presigned beforehand), bodies are one shared buffer, responses are read
 * and dropped. */
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { REQUEST_TIMEOUT_MS } from './config.js'

export interface PhaseSpec {
  /** Path j goes to origins[j % origins.length]: one server, or the nodes in turn. */
  origins: readonly string[]
  /** DELETE clears a phase's objects away, untimed, so they stop holding dirty page cache. */
  method: 'PUT' | 'DELETE'
  /** Request i goes to paths[i % paths.length]. */
  paths: readonly string[]
  /** Sent with every PUT; DELETEs count none. */
  objectBytes: number
  concurrency: number
  countMax: number
  secondsMax: number
}

export interface PhaseResult {
  ops: number
  failed: number
  bytes: number
  seconds: number
  /** Latencies of the successful requests, ascending. */
  latenciesMs: Float64Array
  firstError: string | null
}

interface Progress {
  next: number
  ops: number
  failed: number
  bytes: number
  lastEndMs: number
  firstError: string | null
  latenciesMs: Float64Array
}

/** Bytes of an error body we keep to explain a failure. */
const ERROR_TEXT_MAX = 300

export function newPool(origin: string, connections: number): Pool {
  return new Pool(origin, {
    connections,
    pipelining: 1,
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
    connectTimeout: REQUEST_TIMEOUT_MS,
  })
}

/** The client's own collections run on the cores the server under test uses: every timed part
 * starts from a collected client heap (`npm run bench` runs node with --expose-gc): with the
 * listing fill's URLs still held, mark-compacts of the client's heap, longer than a page, made
 * the slowest listing pages. */
export function collectClientGarbage(): void {
  ;(globalThis as { gc?: () => void }).gc?.()
}

export async function runPhase(spec: PhaseSpec): Promise<PhaseResult> {
  assert(spec.paths.length > 0 && spec.origins.length > 0)
  assert(spec.paths.length % spec.origins.length === 0, 'every origin takes as many paths')
  assert(spec.concurrency > 0 && spec.countMax > 0)
  const pools = spec.origins.map((origin) => newPool(origin, spec.concurrency))
  const body = spec.method === 'PUT' ? Buffer.alloc(spec.objectBytes, 0x61) : null
  const progress: Progress = {
    next: 0,
    ops: 0,
    failed: 0,
    bytes: 0,
    lastEndMs: 0,
    firstError: null,
    latenciesMs: new Float64Array(spec.countMax),
  }
  collectClientGarbage()
  const startMs = performance.now()
  const deadlineMs = startMs + spec.secondsMax * 1000
  try {
    const workers: Promise<void>[] = []
    for (let i = 0; i < spec.concurrency; i++) {
      workers.push(work(pools, spec, body, progress, deadlineMs))
    }
    await Promise.all(workers)
  } finally {
    await Promise.all(pools.map((pool) => pool.close()))
  }
  const latenciesMs = progress.latenciesMs.subarray(0, progress.ops).sort()
  return {
    ops: progress.ops,
    failed: progress.failed,
    bytes: progress.bytes,
    seconds: Math.max(progress.lastEndMs - startMs, 1) / 1000,
    latenciesMs,
    firstError: progress.firstError,
  }
}

async function work(
  pools: readonly Pool[],
  spec: PhaseSpec,
  body: Buffer | null,
  progress: Progress,
  deadlineMs: number,
): Promise<void> {
  // Bounded by countMax: every turn takes a fresh index.
  while (progress.next < spec.countMax && performance.now() < deadlineMs) {
    const index = progress.next++
    const at = index % spec.paths.length
    const path = spec.paths[at]
    const pool = pools[at % pools.length]
    assert(path !== undefined && pool !== undefined)
    const startMs = performance.now()
    const outcome = await once(pool, spec.method, path, body)
    const endMs = performance.now()
    progress.lastEndMs = Math.max(progress.lastEndMs, endMs)
    if (outcome.error === null && outcome.received === 0) {
      progress.latenciesMs[progress.ops++] = endMs - startMs
      progress.bytes += spec.method === 'DELETE' ? 0 : spec.objectBytes
      continue
    }
    progress.failed++
    progress.firstError ??= outcome.error ?? `${spec.method} got ${outcome.received} bytes`
  }
}

interface Outcome {
  received: number
  error: string | null
}

async function once(
  pool: Pool,
  method: string,
  path: string,
  body: Buffer | null,
): Promise<Outcome> {
  try {
    const response = await pool.request({ method, path, body })
    if (response.statusCode < 200 || response.statusCode > 299) {
      const text = (await response.body.text()).slice(0, ERROR_TEXT_MAX)
      return { received: 0, error: `${method} ${response.statusCode}: ${text}` }
    }
    let received = 0
    for await (const chunk of response.body) received += (chunk as Buffer).length
    return { received, error: null }
  } catch (error) {
    return { received: 0, error: `${method}: ${String(error)}` }
  }
}

/** Nearest-rank percentile of ascending values; NaN when there are none. */
export function percentile(sorted: Float64Array, fraction: number): number {
  assert(fraction > 0 && fraction <= 1)
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil(fraction * sorted.length) - 1
  return sorted[Math.min(Math.max(rank, 0), sorted.length - 1)] ?? Number.NaN
}
