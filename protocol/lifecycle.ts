/** @module The lifecycle actor's contract: it runs every bucket's lifecycle rules
 * (protocol/s3-rules/lifecycle.ts) in passes, in the background, and answers `lifecycle.status`
 * with its progress and counts (for /metrics, the admin API and the cluster's repair status). Its
 * place in a pass is a local record of its store, LIFECYCLE_RECORD. */
import type { Request } from './actor.js'

export const LIFECYCLE_RECORD = 'lifecycle.cursor'

/** The lifecycle actor's settings: [variable, default, largest, whole numbers only]. The runtime
 * checks them (runtime/config.ts); a lifecycle day may only be shortened (tests). */
export const LIFECYCLE_SETTINGS = {
  daySecs: ['SVC_LIFECYCLE_DAY_SECS', 86_400, 86_400, false],
  intervalSecs: ['SVC_LIFECYCLE_INTERVAL_SECS', 3_600, 7 * 86_400, false],
  actionsPerSecond: ['SVC_LIFECYCLE_ACTIONS_PER_SECOND', 100, 100_000, true],
} as const

/** Snake case, as the admin API's JSON: what `GET /api/admin/lifecycle` answers as it is. */
export interface LifecycleStatus {
  passes_completed: number
  pass_in_progress: boolean
  /** 0..1: the share of buckets the pass has done (1 between passes, 0 before the actor has read
   * its record). */
  pass_progress: number
  /** Buckets with rules this node ran, in the last or current pass. */
  buckets_with_rules: number
  objects_expired: number
  versions_expired: number
  delete_markers_removed: number
  uploads_aborted: number
  /** Versions a rule would expire that object lock keeps. */
  locked_skipped: number
  errors: number
  last_pass_ended_at: string | null
  next_pass_at: string | null
}

export type LifecycleMsg = Request & { kind: 'lifecycle.status' }

export type LifecycleReply = { 'lifecycle.status': LifecycleStatus }
