/** @module S3 lifecycle configurations as Amazon S3 reads and applies them, as pure rules: a
 * bucket's rules (ID, Status, a filter by prefix, tags and object size, and the actions: expire
 * current versions after days or at a date, expire noncurrent versions some days after they became
 * noncurrent keeping the newest few, remove expired delete markers, abort incomplete multipart
 * uploads), checked with S3's errors, and what a rule does to one version or upload at a time.
 * Days count as S3 counts them: an object becomes eligible at the first day boundary (midnight
 * UTC) after its time plus the days. The length of a day is the caller's (SVC_LIFECYCLE_DAY_SECS
 * shortens it for tests); the lifecycle actor runs the rules. */
import { fail, ok, type Result } from '../errors.js'
import type { Tag } from '../tagging.js'

export const DAY_MS = 86_400_000
/** S3's bound on the rules of one configuration. */
export const LIFECYCLE_RULES_MAX = 1000
const ID_CHARS_MAX = 255

export interface LifecycleFilter {
  prefix: string
  tags: Tag[]
  sizeGreaterThan: number | null
  sizeLessThan: number | null
}

export interface LifecycleRule {
  id: string | null
  enabled: boolean
  filter: LifecycleFilter
  /** Current versions: after `days`, or from `dateMs` on. */
  expiration: { days: number | null; dateMs: number | null } | null
  /** Remove a delete marker that is a key's only version left. */
  expiredObjectDeleteMarker: boolean
  noncurrentExpiration: { days: number; newerVersionsKept: number | null } | null
  abortUploadsAfterDays: number | null
}

export interface LifecycleConfiguration {
  rules: LifecycleRule[]
}

function positive(value: number | null, what: string): Result<null> {
  if (value === null || (Number.isSafeInteger(value) && value > 0)) return ok(null)
  return fail('invalid_argument', `'${what}' for a lifecycle rule must be a positive integer`)
}

function validateRule(rule: LifecycleRule): Result<null> {
  if (rule.id !== null && rule.id.length > ID_CHARS_MAX) {
    return fail('invalid_argument', 'ID length should not exceed allowed limit of 255')
  }
  const hasAction =
    rule.expiration !== null ||
    rule.expiredObjectDeleteMarker ||
    rule.noncurrentExpiration !== null ||
    rule.abortUploadsAfterDays !== null
  if (!hasAction) {
    return fail('invalid_request', 'At least one action needs to be specified in a rule')
  }
  const expiration = rule.expiration
  if (expiration !== null) {
    if ((expiration.days === null) === (expiration.dateMs === null)) {
      return fail('malformed_xml', 'an Expiration has either Days or Date')
    }
    const days = positive(expiration.days, 'Days')
    if (!days.ok) return days
    if (expiration.dateMs !== null && expiration.dateMs % DAY_MS !== 0) {
      return fail('invalid_argument', "'Date' must be at midnight GMT")
    }
    if (rule.expiredObjectDeleteMarker) {
      return fail('malformed_xml', 'ExpiredObjectDeleteMarker cannot be given with Days or Date')
    }
  }
  const noncurrent = rule.noncurrentExpiration
  if (noncurrent !== null) {
    const days = positive(noncurrent.days, 'NoncurrentDays')
    if (!days.ok) return days
    const kept = positive(noncurrent.newerVersionsKept, 'NewerNoncurrentVersions')
    if (!kept.ok) return kept
  }
  const abort = positive(rule.abortUploadsAfterDays, 'DaysAfterInitiation')
  if (!abort.ok) return abort
  const { tags, sizeGreaterThan, sizeLessThan } = rule.filter
  if (tags.length > 0 && (rule.expiredObjectDeleteMarker || rule.abortUploadsAfterDays !== null)) {
    return fail(
      'invalid_request',
      'Delete marker expiration and AbortIncompleteMultipartUpload cannot be specified with Tags.',
    )
  }
  if (sizeGreaterThan !== null && sizeLessThan !== null && sizeGreaterThan >= sizeLessThan) {
    return fail(
      'invalid_request',
      'ObjectSizeGreaterThan must be less than ObjectSizeLessThan in a lifecycle filter',
    )
  }
  for (const size of [sizeGreaterThan, sizeLessThan]) {
    if (size !== null && (!Number.isSafeInteger(size) || size < 0)) {
      return fail('invalid_argument', 'an object size in a lifecycle filter must be 0 or more')
    }
  }
  return ok(null)
}

export function validateLifecycleConfiguration(
  config: LifecycleConfiguration,
): Result<LifecycleConfiguration> {
  if (config.rules.length === 0) return fail('malformed_xml', 'a configuration needs a Rule')
  if (config.rules.length > LIFECYCLE_RULES_MAX) {
    return fail('invalid_argument', `a configuration has at most ${LIFECYCLE_RULES_MAX} rules`)
  }
  const ids = new Set<string>()
  for (const rule of config.rules) {
    if (rule.id !== null) {
      if (ids.has(rule.id)) return fail('invalid_argument', 'Rule ID must be unique.')
      ids.add(rule.id)
    }
    const valid = validateRule(rule)
    if (!valid.ok) return valid
  }
  return ok(config)
}

export function isLifecycleConfiguration(value: unknown): value is LifecycleConfiguration {
  const rules = (value as { rules?: unknown } | null)?.rules
  return (
    Array.isArray(rules) &&
    rules.every((rule: Partial<LifecycleRule> | null) => {
      const filter = rule?.filter
      return (
        typeof rule?.enabled === 'boolean' &&
        typeof filter?.prefix === 'string' &&
        Array.isArray(filter.tags) &&
        typeof rule.expiredObjectDeleteMarker === 'boolean'
      )
    })
  )
}

/** The first day boundary at or after `ms`: S3 rounds an expiry up to the next midnight UTC. */
function dayBoundary(ms: number, dayMs: number): number {
  return Math.ceil(ms / dayMs) * dayMs
}

/** Whether `days` have passed since `sinceMs`, as S3 counts them. */
function daysPassed(sinceMs: number, days: number, nowMs: number, dayMs: number): boolean {
  return nowMs >= dayBoundary(sinceMs + days * dayMs, dayMs)
}

function matches(
  filter: LifecycleFilter,
  object: { key: string; size: number; tags: readonly Tag[] | null },
): boolean {
  if (!object.key.startsWith(filter.prefix)) return false
  if (filter.sizeGreaterThan !== null && !(object.size > filter.sizeGreaterThan)) return false
  if (filter.sizeLessThan !== null && !(object.size < filter.sizeLessThan)) return false
  // Tags unknown (null) match no tag filter: the caller reads them when a rule needs them.
  return filter.tags.every((wanted) =>
    object.tags?.some((tag) => tag.key === wanted.key && tag.value === wanted.value),
  )
}

/** Whether any enabled rule that could apply to this key filters by tags: its tags must be read. */
export function needsTags(config: LifecycleConfiguration, key: string): boolean {
  return config.rules.some(
    (rule) => rule.enabled && rule.filter.tags.length > 0 && key.startsWith(rule.filter.prefix),
  )
}

export interface VersionFacts {
  key: string
  size: number
  /** Null when not read (no rule for the key filters by tags). */
  tags: readonly Tag[] | null
  lastModifiedMs: number
  isDeleteMarker: boolean
}

/** What the rules do to a key's current version: expire it (a marker in a versioned bucket),
 * remove it when it is a delete marker left alone (`versionsLeft`: the key's other versions), or
 * nothing. */
export function currentVersionAction(
  config: LifecycleConfiguration,
  version: VersionFacts & { versionsLeft: number },
  nowMs: number,
  dayMs = DAY_MS,
): 'expire' | 'remove-marker' | null {
  for (const rule of config.rules) {
    if (!rule.enabled || !matches(rule.filter, version)) continue
    if (version.isDeleteMarker) {
      // S3: a rule that expires current versions also removes expired delete markers.
      const removes = rule.expiredObjectDeleteMarker || rule.expiration?.days != null
      if (removes && version.versionsLeft === 0) return 'remove-marker'
      continue
    }
    const expiration = rule.expiration
    if (expiration === null) continue
    if (
      expiration.days !== null &&
      daysPassed(version.lastModifiedMs, expiration.days, nowMs, dayMs)
    ) {
      return 'expire'
    }
    if (expiration.dateMs !== null && nowMs >= expiration.dateMs) return 'expire'
  }
  return null
}

/** Whether the rules expire a noncurrent version: `becameNoncurrentMs` is when the version after
 * it was made, `newerNoncurrent` how many noncurrent versions of the key are newer than it. */
export function noncurrentVersionAction(
  config: LifecycleConfiguration,
  version: VersionFacts & { becameNoncurrentMs: number; newerNoncurrent: number },
  nowMs: number,
  dayMs = DAY_MS,
): 'expire' | null {
  for (const rule of config.rules) {
    const noncurrent = rule.noncurrentExpiration
    if (!rule.enabled || noncurrent === null || !matches(rule.filter, version)) continue
    if (!daysPassed(version.becameNoncurrentMs, noncurrent.days, nowMs, dayMs)) continue
    if (version.newerNoncurrent < (noncurrent.newerVersionsKept ?? 0)) continue
    return 'expire'
  }
  return null
}

/** Whether the rules abort an incomplete multipart upload (filtered by prefix only, as in S3). */
export function uploadAction(
  config: LifecycleConfiguration,
  upload: { key: string; initiatedMs: number },
  nowMs: number,
  dayMs = DAY_MS,
): 'abort' | null {
  for (const rule of config.rules) {
    const days = rule.abortUploadsAfterDays
    if (!rule.enabled || days === null || !upload.key.startsWith(rule.filter.prefix)) continue
    if (rule.filter.tags.length > 0) continue
    if (daysPassed(upload.initiatedMs, days, nowMs, dayMs)) return 'abort'
  }
  return null
}
