/** @module S3 Object Lock as Amazon S3 applies it, as pure rules: a bucket's lock configuration
 * (enabled for good, with an optional default retention), a version's retention (GOVERNANCE or
 * COMPLIANCE until a date) and legal hold, the lock headers of a write, and the decisions: whether
 * a version may be deleted for good, and whether its retention may change. A version protected by
 * either is never removed: not by a delete of its id, not by a lifecycle rule, not by a bucket's
 * forced deletion; a delete without a version id only adds a marker, which S3 allows. The time a
 * retention is judged at is the caller's: a single node's clock, a cluster's change stamp. */
import { fail, ok, type Result } from '../errors.js'

export type RetentionMode = 'GOVERNANCE' | 'COMPLIANCE'

export interface ObjectLockConfiguration {
  /** Object lock cannot be turned off once on. */
  enabled: true
  defaultRetention: { mode: RetentionMode; days: number | null; years: number | null } | null
}

export interface Retention {
  mode: RetentionMode
  untilMs: number
}

/** What protects one version: its retention (null for none) and its legal hold. */
export interface VersionLock {
  retention: Retention | null
  legalHold: boolean
}

/** S3's bound on a default retention: 100 years. */
const DAYS_MAX = 36_500
const YEARS_MAX = 100
const DAY_MS = 24 * 60 * 60 * 1000

const LOCK_MODE_HEADER = 'x-amz-object-lock-mode'
const LOCK_UNTIL_HEADER = 'x-amz-object-lock-retain-until-date'
const LEGAL_HOLD_HEADER = 'x-amz-object-lock-legal-hold'

export function isRetentionMode(value: unknown): value is RetentionMode {
  return value === 'GOVERNANCE' || value === 'COMPLIANCE'
}

export function validateObjectLockConfiguration(
  config: ObjectLockConfiguration,
): Result<ObjectLockConfiguration> {
  const rule = config.defaultRetention
  if (rule === null) return ok(config)
  if (!isRetentionMode(rule.mode)) {
    return fail('malformed_xml', 'the default retention mode is GOVERNANCE or COMPLIANCE')
  }
  if ((rule.days === null) === (rule.years === null)) {
    return fail('malformed_xml', 'a default retention has either Days or Years')
  }
  const [count, max] = rule.days !== null ? [rule.days, DAYS_MAX] : [rule.years ?? 0, YEARS_MAX]
  if (!Number.isSafeInteger(count) || count <= 0) {
    return fail('invalid_argument', 'Default retention period must be a positive integer value.')
  }
  if (count > max) {
    return fail('invalid_argument', 'Default retention period is too large.')
  }
  return ok(config)
}

export function isObjectLockConfiguration(value: unknown): value is ObjectLockConfiguration {
  const config = value as Partial<ObjectLockConfiguration> | null
  if (config?.enabled !== true) return false
  const rule = config.defaultRetention
  if (rule === null) return true
  if (typeof rule !== 'object') return false
  const count = (field: unknown): boolean => field === null || typeof field === 'number'
  return isRetentionMode(rule.mode) && count(rule.days) && count(rule.years)
}

/** A default retention from a version's creation: whole days, or whole calendar years (UTC). */
export function defaultRetentionFor(
  config: ObjectLockConfiguration | null,
  createdMs: number,
): Retention | null {
  const rule = config?.defaultRetention ?? null
  if (rule === null) return null
  if (rule.days !== null) return { mode: rule.mode, untilMs: createdMs + rule.days * DAY_MS }
  const until = new Date(createdMs)
  until.setUTCFullYear(until.getUTCFullYear() + (rule.years ?? 0))
  return { mode: rule.mode, untilMs: until.getTime() }
}

/** The lock a write's headers set: a mode and a date together, and a legal hold; null for none. */
export function lockFromHeaders(
  headers: Readonly<Record<string, string>>,
  nowMs: number,
): Result<Partial<VersionLock> | null> {
  const mode = headers[LOCK_MODE_HEADER]
  const until = headers[LOCK_UNTIL_HEADER]
  const hold = headers[LEGAL_HOLD_HEADER]
  const lock: Partial<VersionLock> = {}
  if (mode !== undefined || until !== undefined) {
    if (mode === undefined || until === undefined) {
      return fail(
        'invalid_argument',
        `${LOCK_UNTIL_HEADER} and ${LOCK_MODE_HEADER} must both be supplied`,
      )
    }
    if (!isRetentionMode(mode)) return fail('invalid_argument', 'Unknown wormMode directive.')
    const retention = retentionUntil(mode, until, nowMs)
    if (!retention.ok) return retention
    lock.retention = retention.value
  }
  if (hold !== undefined) {
    if (hold !== 'ON' && hold !== 'OFF') {
      return fail('invalid_argument', "Legal Hold must be either of 'ON' or 'OFF'")
    }
    lock.legalHold = hold === 'ON'
  }
  return ok(Object.keys(lock).length === 0 ? null : lock)
}

/** A retention to set: its date in ISO 8601, in the future. */
export function retentionUntil(
  mode: RetentionMode,
  until: string,
  nowMs: number,
): Result<Retention> {
  const untilMs = Date.parse(until)
  if (Number.isNaN(untilMs) || !/^\d{4}-\d\d-\d\dT/.test(until)) {
    return fail('invalid_argument', 'The retain until date must be provided in ISO 8601 format')
  }
  if (untilMs <= nowMs) {
    return fail('invalid_argument', 'The retain until date must be in the future!')
  }
  return ok({ mode, untilMs })
}

/** A version's lock from its attributes, or what GET reports of them (the same fields). */
export function versionLockOf(
  attributes: { retention?: { mode: string; untilMs: number }; legalHold?: boolean } | undefined,
): VersionLock {
  const held = attributes?.retention
  const retention =
    held !== undefined && isRetentionMode(held.mode)
      ? { mode: held.mode, untilMs: held.untilMs }
      : null
  return { retention, legalHold: attributes?.legalHold === true }
}

const PROTECTED = 'Access Denied because object protected by object lock.'

/** Whether a version may be removed for good at `nowMs`; `bypass` when the request asked to
 * bypass governance retention and may. */
export function mayDeleteVersion(lock: VersionLock, nowMs: number, bypass: boolean): Result<null> {
  if (lock.legalHold) return fail('access_denied', PROTECTED)
  const retention = lock.retention
  if (retention === null || retention.untilMs <= nowMs) return ok(null)
  if (retention.mode === 'GOVERNANCE' && bypass) return ok(null)
  return fail('access_denied', PROTECTED)
}

/** Whether a version's retention may become `next` (null: removed). Extending keeps every
 * promise; shortening, removing or weakening COMPLIANCE to GOVERNANCE does not, and only an
 * expired COMPLIANCE or a GOVERNANCE bypassed may be changed so. */
export function mayChangeRetention(
  current: Retention | null,
  next: Retention | null,
  nowMs: number,
  bypass: boolean,
): Result<null> {
  if (current === null || current.untilMs <= nowMs) return ok(null)
  const keeps =
    next !== null &&
    next.untilMs >= current.untilMs &&
    (current.mode === 'GOVERNANCE' || next.mode === 'COMPLIANCE')
  if (keeps) return ok(null)
  if (current.mode === 'GOVERNANCE' && bypass) return ok(null)
  return fail('access_denied', PROTECTED)
}

/** A bucket without object lock refuses its requests, as S3 does. */
export function lockNotEnabled(): Result<never> {
  return fail('invalid_request', 'Bucket is missing Object Lock Configuration')
}
