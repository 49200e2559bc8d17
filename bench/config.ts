/** @module Bench knobs. Some come from the environment so a quick run is one command away:
 * BENCH_SECONDS (time bound of each load phase), BENCH_BIG_MB (size of the streamed object),
 * BENCH_LIST_KEYS (keys in the listing bucket), BENCH_RUNS (runs of each load phase, reported by
 * their median); BENCH_TARGETS and BENCH_PHASES (comma-separated) pick targets and phases. The
 * rest are fixed here, each with its reason. */
import assert from 'node:assert/strict'

function envNumber(name: string, fallback: number, max: number): number {
  const text = process.env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  assert(Number.isFinite(value) && value > 0, `${name} must be a positive number, got ${text}`)
  assert(value <= max, `${name} must be at most ${max}, got ${text}`)
  return value
}

/** Seconds per load phase: enough for the rates to settle, few enough that every target's phases
 * run in minutes. wrk counts whole seconds: a fraction is rounded up. */
export const PHASE_SECONDS = envNumber('BENCH_SECONDS', 5, 600)
/** Each load phase runs this many times in a row (a PUT of new keys writes new keys each time);
 * the report shows the median of each figure. */
export const PHASE_RUNS = Math.round(envNumber('BENCH_RUNS', 1, 9))
/** Unrecorded PUTs before a target's first phase, so that a JIT-compiled server (the service,
 * s3rver) is not measured cold against nginx. */
export const WARMUP_SECONDS = Math.min(1, PHASE_SECONDS)
export const WARMUP_OPS_MAX = 5_000
export const BIG_BYTES = Math.round(envNumber('BENCH_BIG_MB', 1024, 16 * 1024) * 1024 * 1024)
export const LIST_KEYS = Math.round(envNumber('BENCH_LIST_KEYS', 100_000, 1_000_000))

export const SMALL_BYTES = 4 * 1024
export const LARGE_BYTES = 1024 * 1024
export const CONCURRENCIES = [16, 64] as const
/** Count bound of a 4 KiB PUT phase of new keys. Every URL is presigned beforehand (an HMAC chain
 * each), so this also bounds the preparation time; reads and overwrites cycle over the keys their
 * PUT phase wrote. */
export const SMALL_OPS_MAX = 100_000
/** A 4 KiB PUT phase of new keys gets this many times the keys the warm-up's rate would need in
 * the phase's time, within SMALL_OPS_MAX: the warm-up is short and partly cold, and a phase that
 * runs out ends early, its rates still right, since wrk-load.lua times the answers it got. */
export const SMALL_OPS_MARGIN = 4
/** Count bound of a 1 MiB PUT phase of new keys: 4 GiB written per run at most, deleted once its
 * reads and overwrites are done. */
export const LARGE_OPS_MAX = 4_000
/** Chunk of the streamed upload: one buffer, filled once and sent again and again. */
export const BIG_CHUNK_BYTES = 1024 * 1024
/** A streamed transfer slower than this is cut off and reported as failed. */
export const BIG_TIMEOUT_MS = 240_000
/** Deleting a phase's 1 MiB objects (untimed) is quick; this bounds a slow server. */
export const DELETE_SECONDS_MAX = 30
export const LIST_FILL_CONCURRENCY = 64
/** s3rver fills slowly, so a reference's fill is cut off here (and its listing covers what it
 * has): otherwise s3rver alone would take minutes. */
export const LIST_FILL_SECONDS_MAX = 60
/** The service's listing goal is over the full bucket, so its fill may take longer. */
export const SERVICE_LIST_FILL_SECONDS_MAX = 150
/** s3rver takes seconds a page over a large bucket: we list for this long at most. */
export const LIST_SECONDS_MAX = 30
export const LIST_PAGE_KEYS = 1000
/** Every undici request that outlives this is failed, so no phase can hang on a stuck server;
 * wrk counts an answer slower than this as a timeout. */
export const REQUEST_TIMEOUT_MS = 30_000
/** The service must answer GET /health within this after its start. */
export const HEALTH_WAIT_MS = 30_000
/** Cluster nodes serve after their first catalog pull, which waits for the others; 3 nodes
 * starting together on a loaded machine take longer (dev/cluster.ts waits as long). */
export const CLUSTER_HEALTH_WAIT_MS = 90_000
export const RSS_POLL_MS = 50
export const BUCKET = 'bench'

/** Targets to run, by name; empty means all. Unknown names are reported by run.ts. */
export const ONLY_TARGETS = (process.env['BENCH_TARGETS'] ?? '')
  .split(',')
  .map((name) => name.trim())
  .filter((name) => name !== '')

/** Load phases to run, by substrings of their labels (e.g. `GET 4 KiB,PUT 1 MiB`); empty means
 * all. A phase that reads or overwrites keys brings the PUT phase that writes them. `streamed`
 * and `list` name the streamed object and the listing, which run only when named then. */
export const ONLY_PHASES = (process.env['BENCH_PHASES'] ?? '')
  .split(',')
  .map((name) => name.trim())
  .filter((name) => name !== '')
