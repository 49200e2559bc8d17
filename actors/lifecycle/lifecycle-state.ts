/** @module The lifecycle actor's state and settings. What must outlive a restart (the pass's
 * place) is its record in the store (cursor.ts); the counters count since this actor started, as
 * Prometheus counters do. */
import type { Context } from '../../protocol/actor.js'
import { LIFECYCLE_SETTINGS } from '../../protocol/lifecycle.js'

export interface LifecycleCursor {
  /** The bucket the pass is in (null: before the first). */
  bucket: string | null
  /** What of the bucket is next: its versions, its uploads, or nothing (the next bucket). */
  phase: 'versions' | 'uploads' | 'done'
  /** Where its versions go on from ('' for the first). */
  keyMarker: string
  versionIdMarker: string
  /** The key whose versions the last page ended in, the time of its last version seen (when the
   * next one became noncurrent) and how many noncurrent ones were seen: a key's versions may span
   * pages. */
  carry: { key: string; newerMs: number; noncurrent: number } | null
}

export function firstCursor(bucket: string | null): LifecycleCursor {
  return { bucket, phase: 'versions', keyMarker: '', versionIdMarker: '', carry: null }
}

interface LifecycleCounters {
  passesCompleted: number
  objectsExpired: number
  versionsExpired: number
  deleteMarkersRemoved: number
  uploadsAborted: number
  lockedSkipped: number
  errors: number
}

export interface LifecycleState {
  /** A lifecycle day: SVC_LIFECYCLE_DAY_SECS (a day, unless a test shortens it). */
  readonly dayMs: number
  readonly intervalMs: number
  /** The least time between two actions. */
  readonly actionGapMs: number
  /** Cluster mode: this node, which runs the buckets it owns; null on a single node. */
  readonly nodeId: string | null
  loaded: boolean
  cursor: LifecycleCursor
  passStartedMs: number | null
  passDone: boolean
  nextPassMs: number
  lastPassEndedMs: number | null
  /** Buckets of the pass (names in order) and how many are done. */
  bucketsTotal: number
  bucketsDone: number
  bucketsWithRules: number
  /** The next action may run no sooner. */
  paceUntilMs: number
  readonly counters: LifecycleCounters
  consecutiveErrors: number
  stopping: boolean
  wake: (() => void) | null
}

/** A setting as the runtime checked it, or its default (a test's context may leave it out). */
function setting(config: Readonly<Record<string, string>>, which: keyof typeof LIFECYCLE_SETTINGS) {
  const [name, fallback] = LIFECYCLE_SETTINGS[which]
  return Number(config[name] ?? fallback)
}

export function createState(ctx: Context): LifecycleState {
  const config = ctx.config
  const daySecs = setting(config, 'daySecs')
  const intervalSecs = setting(config, 'intervalSecs')
  const rate = setting(config, 'actionsPerSecond')
  return {
    dayMs: Math.round(daySecs * 1000),
    intervalMs: Math.round(intervalSecs * 1000),
    actionGapMs: 1000 / rate,
    nodeId: config['SVC_MODE'] === 'cluster' ? (config['SVC_NODE_ID'] ?? '') : null,
    loaded: false,
    cursor: { ...firstCursor(null), phase: 'done' },
    passStartedMs: null,
    passDone: true,
    nextPassMs: 0,
    lastPassEndedMs: null,
    bucketsTotal: 0,
    bucketsDone: 0,
    bucketsWithRules: 0,
    paceUntilMs: 0,
    counters: {
      passesCompleted: 0,
      objectsExpired: 0,
      versionsExpired: 0,
      deleteMarkersRemoved: 0,
      uploadsAborted: 0,
      lockedSkipped: 0,
      errors: 0,
    },
    consecutiveErrors: 0,
    stopping: false,
    wake: null,
  }
}
