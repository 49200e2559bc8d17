/** @module Tunables of the runtime, with the relations between them asserted at load. Contract
 * limits (S3's own numbers) live in protocol/limits.ts instead. */
import assert from 'node:assert/strict'
import type { ActorName } from '../protocol/actor.js'
import { CALL_TIMEOUT_MS, STREAM_IDLE_TIMEOUT_MS } from '../protocol/timing.js'

/** Requests an actor handles at once; one more is answered `busy` (503 SlowDown) at once. */
export const MAILBOX_DEPTH_MAX = 512
/** Requests a caller may have outstanding on one link; one more fails `busy` without sending. */
export const PENDING_CALLS_MAX = 1024
/** Restart intensity: more than this many restarts of one actor within the period is a crash loop
 * and stops the node (OTP's intensity/period). Killing every actor once does not reach it. */
export const RESTART_INTENSITY = 5
export const RESTART_PERIOD_MS = 30_000
/** Exponential restart backoff: first delay, doubling per recent restart, capped. */
export const RESTART_BACKOFF_MS_MIN = 50
export const RESTART_BACKOFF_MS_MAX = 2_000
/** How long an actor may take to start (open RocksDB, recover) before it counts as crashed. */
export const ACTOR_START_TIMEOUT_MS = 60_000
/** A control call (connect, disconnect) to a running thread must be answered within this; a
 * thread that does not is terminated and restarts. It is served between two turns of the
 * thread's loop, so only a stuck thread comes near it. One still starting gets the start's bound,
 * ACTOR_START_TIMEOUT_MS. */
export const CONTROL_CALL_TIMEOUT_MS = 10_000
/** Graceful shutdown: in-flight requests get this long (SPEC.md section 3). */
export const SHUTDOWN_DRAIN_MS = 30_000
/** A node that cannot run in its environment (runtime/fatal.ts) stops within this, then exits:
 * operators are promised an exit within 5 s of the failure. */
export const FATAL_STOP_TIMEOUT_MS = 3_000
/** A stopping actor gets this long to release its resources before it is terminated. */
export const ACTOR_STOP_TIMEOUT_MS = 10_000
/** Young-generation size of each actor thread, bounded so that per-request garbage cannot grow a
 * thread's heap far. On the request path 16 MiB keeps scavenges rare: 4 MiB made them the largest
 * cost of a 1000-key listing page, and cost the coordinator a share of its small GETs. iam is
 * asked only on a key-cache miss, and 4 MiB keeps less of its heap resident; the gossiper, a few
 * small messages a second, needs no more either. Body
 * chunks are reclaimed explicitly instead (runtime/reclaim.ts). */
export const WORKER_YOUNG_GENERATION_MB: Readonly<Record<ActorName, number>> = {
  'replica-store': 16,
  'http-ingress': 16,
  coordinator: 16,
  iam: 4,
  // Node-to-node messages are small JSON (at most 4 MiB each, rarely near it).
  'grpc-ingress': 4,
  gossiper: 4,
  // Pages of at most 512 hints, and a few deliveries at once.
  'hint-queue': 4,
  // Reads one blob at a time, at a paced rate; its chunks are external memory, not heap.
  scrubber: 4,
  // Pages of at most 1000 key digests, one key's sync at a time.
  'anti-entropy': 4,
  // One status request at a time; its own work is a loop, not messages.
  lifecycle: 4,
}
/** Native memory trimming (runtime/native-trim.ts): how often the node's RSS is looked at; the
 * growth since the last trim that makes the next one worth its cost; and, for memory freed without
 * RSS growing (the collector freeing chunks after a burst), how many looks apart a trim is retried
 * while RSS stays that far above the lowest a trim reached. Trimming every look slowed a streamed
 * upload (freed pages are faulted in again); every fourth costs nothing measurable. */
export const TRIM_CHECK_MS = 1_000
export const TRIM_GROWTH_BYTES = 16 * 1024 * 1024
export const TRIM_RETRY_CHECKS = 4
/** Ingress threads when SVC_HTTP_WORKERS is not set: one per core beyond the two that the store
 * and the coordinator keep busy, at least one and at most DEFAULT_HTTP_WORKERS_MAX. On two cores a
 * second ingress thread served no more small GETs or large PUTs, and held more memory. Each costs
 * its own V8 heap; past a few, the ingress is no longer what limits a node. */
export const DEFAULT_HTTP_WORKERS_RESERVED_CORES = 2
export const DEFAULT_HTTP_WORKERS_MAX = 4
/** Metrics gathered from actors for one scrape must answer within this. */
export const METRICS_GATHER_TIMEOUT_MS = 2_000
/** Password pool (argon2id, tens of milliseconds and 19 MiB a task): threads, tasks that may
 * wait, and how long one task may take before it is aborted; 64 waiting is seconds of work. */
export const PASSWORD_THREADS_MAX = 2
export const PASSWORD_QUEUE_MAX = 64
export const PASSWORD_TASK_TIMEOUT_MS = 10_000

assert(RESTART_BACKOFF_MS_MIN < RESTART_BACKOFF_MS_MAX)
assert(FATAL_STOP_TIMEOUT_MS < 5_000)
assert(CONTROL_CALL_TIMEOUT_MS < ACTOR_START_TIMEOUT_MS)
assert(RESTART_BACKOFF_MS_MAX * RESTART_INTENSITY < RESTART_PERIOD_MS)
assert(CALL_TIMEOUT_MS < STREAM_IDLE_TIMEOUT_MS)
assert(MAILBOX_DEPTH_MAX <= PENDING_CALLS_MAX)
assert(PASSWORD_TASK_TIMEOUT_MS < CALL_TIMEOUT_MS)
