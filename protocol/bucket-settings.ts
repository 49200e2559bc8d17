/** @module The bucket settings as one family: each setting a bucket may hold apart from its record
 * (CORS rules, tags) has here its name, its value's type, how a value is checked, the S3 error
 * when the bucket has none, and whether an empty value deletes it. The messages
 * bucket.setting.put, .get and .delete carry a name and a value of its type; the store keeps each
 * setting as a record of its own (actors/replica-store/keys.ts, bucketSettingKey), deletes them
 * all with their bucket, and in a cluster its catalog spreads them to every node. A new setting is
 * a row of BUCKET_SETTINGS and of the key table in keys.ts; the S3 front end adds its handlers.
 *
 * The ingress validates a value before it sends it and the store asserts the same check; a
 * record read back from disk is checked for its shape (`isValue`) and then validated again, and
 * is `corrupt` if either fails. Pure functions, no zod: a single node's store loads this. */
import { validateCorsConfiguration, type CorsConfiguration, type CorsRule } from './cors.js'
import { fail, ok, type ErrorCode, type Result } from './errors.js'
import { CORS_BODY_BYTES_MAX, XML_BODY_BYTES_MAX } from './limits.js'
import { parseBucketPolicy, POLICY_BYTES_MAX } from './s3-rules/bucket-policy.js'
import {
  isLifecycleConfiguration,
  validateLifecycleConfiguration,
  type LifecycleConfiguration,
} from './s3-rules/lifecycle.js'
import {
  isObjectLockConfiguration,
  validateObjectLockConfiguration,
  type ObjectLockConfiguration,
} from './s3-rules/object-lock.js'
import {
  BUCKET_TAGS_MAX,
  TAG_KEY_CHARS_MAX,
  TAG_VALUE_CHARS_MAX,
  validateTags,
  type Tag,
} from './tagging.js'

/** Each setting's name and the type of its value. */
export interface BucketSettingValues {
  cors: CorsConfiguration
  tags: Tag[]
  /** The bucket policy's JSON as it was put (GetBucketPolicy answers it so). */
  policy: { text: string }
  /** The bucket's canned ACL when it is not `private` (which is its absence). */
  acl: { canned: BucketCannedAcl }
  /** Bounds of the bucket's size and object count, null for none (http/s3/quota.ts applies). */
  quota: BucketQuota
  /** Object lock, once enabled (protocol/s3-rules/object-lock.ts). */
  objectLock: ObjectLockConfiguration
  /** Lifecycle rules (protocol/s3-rules/lifecycle.ts), which the lifecycle actor runs. */
  lifecycle: LifecycleConfiguration
}

export interface BucketQuota {
  maxBytes: number | null
  maxObjects: number | null
}

function isBound(value: unknown): value is number | null {
  return value === null || (Number.isSafeInteger(value) && (value as number) >= 0)
}

/** The canned ACLs a bucket may hold besides `private`: what they grant is
 * protocol/s3-rules/access.ts's. */
const BUCKET_CANNED_ACLS = ['public-read', 'authenticated-read'] as const
export type BucketCannedAcl = (typeof BUCKET_CANNED_ACLS)[number]

function isCannedAcl(value: unknown): value is BucketCannedAcl {
  return (BUCKET_CANNED_ACLS as readonly unknown[]).includes(value)
}

export type BucketSettingName = keyof BucketSettingValues

/** A value of any setting: what bucket.setting.get answers (its caller knows which by the name). */
export type BucketSettingValue = BucketSettingValues[BucketSettingName]

/** A setting's name with a value of its own type (distributes over the names). */
export type NamedBucketSetting = {
  [N in BucketSettingName]: { name: N; value: BucketSettingValues[N] }
}[BucketSettingName]

export interface BucketSettingRules<V> {
  /** Checks a value as S3 does; the ingress answers its failure, the store asserts success. */
  validate(value: V): Result<unknown>
  /** Whether data read back from disk has the value's shape, before `validate` checks it. */
  isValue(value: unknown): value is V
  /** Whether putting this value deletes the setting instead (S3's PutBucketTagging with an
   * empty TagSet); a setting without one never has an empty value. */
  isEmpty(value: V): boolean
  /** The bound of a stored record of a valid value: more read back from disk is `corrupt`. */
  recordBytesMax: number
  /** What a get answers when the bucket has none. */
  absent: { code: ErrorCode; message: string }
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string')
}

function isCorsRule(value: unknown): value is CorsRule {
  if (typeof value !== 'object' || value === null) return false
  const rule = value as Record<string, unknown>
  const lists = ['allowedOrigins', 'allowedMethods', 'allowedHeaders', 'exposeHeaders']
  if (!lists.every((name) => isStringList(rule[name]))) return false
  if (rule['id'] !== undefined && typeof rule['id'] !== 'string') return false
  return rule['maxAgeSeconds'] === undefined || typeof rule['maxAgeSeconds'] === 'number'
}

function isCorsConfiguration(value: unknown): value is CorsConfiguration {
  const rules = (value as { rules?: unknown } | null)?.rules
  return Array.isArray(rules) && rules.every(isCorsRule)
}

function isTagList(value: unknown): value is Tag[] {
  const isTag = (entry: unknown): boolean => {
    const tag = entry as Partial<Tag> | null
    return typeof tag?.key === 'string' && typeof tag.value === 'string'
  }
  return Array.isArray(value) && value.every(isTag)
}

/** JSON at most doubles a CORS value (only `"` and `\` are escaped; control characters are
 * refused), and the fixed keys of a rule take under 100 bytes more than its XML elements did,
 * 10 KB for 100 rules: below 3 times the 64 KiB body. */
const CORS_RECORD_BYTES_MAX = 3 * CORS_BODY_BYTES_MAX

/** A character of a tag takes at most 6 bytes of JSON (a control character or a lone surrogate
 * as `\uXXXX`), and a tag's fixed text `{"key":"","value":""},` 22. */
const TAG_RECORD_BYTES_MAX = 6 * (TAG_KEY_CHARS_MAX + TAG_VALUE_CHARS_MAX) + 22
const TAGS_RECORD_BYTES_MAX = BUCKET_TAGS_MAX * TAG_RECORD_BYTES_MAX + 2

/** A configuration comes in an XML body of at most XML_BODY_BYTES_MAX, whose every text JSON
 * writes in at most 6 bytes a character, under names no longer than the XML's own. */
const LIFECYCLE_RECORD_BYTES_MAX = 6 * XML_BODY_BYTES_MAX

/** A policy's character takes at most 6 bytes of JSON (as `\uXXXX`), and `{"text":""}` 11. */
const POLICY_RECORD_BYTES_MAX = 6 * POLICY_BYTES_MAX + 11

export const BUCKET_SETTINGS: {
  [N in BucketSettingName]: BucketSettingRules<BucketSettingValues[N]>
} = {
  cors: {
    validate: validateCorsConfiguration,
    isValue: isCorsConfiguration,
    isEmpty: () => false,
    recordBytesMax: CORS_RECORD_BYTES_MAX,
    absent: {
      code: 'no_such_cors_configuration',
      message: 'The CORS configuration does not exist',
    },
  },
  tags: {
    validate: (tags) => validateTags(tags, 'bucket'),
    isValue: isTagList,
    isEmpty: (tags) => tags.length === 0,
    recordBytesMax: TAGS_RECORD_BYTES_MAX,
    absent: { code: 'no_such_tag_set', message: 'The TagSet does not exist' },
  },
  policy: {
    // The ingress checks the resources against the bucket too; the store checks the grammar.
    validate: ({ text }) => parseBucketPolicy(text, null),
    isValue: (value): value is { text: string } =>
      typeof (value as { text?: unknown } | null)?.text === 'string',
    isEmpty: () => false,
    recordBytesMax: POLICY_RECORD_BYTES_MAX,
    absent: { code: 'no_such_bucket_policy', message: 'The bucket policy does not exist' },
  },
  acl: {
    validate: ({ canned }) =>
      isCannedAcl(canned) ? ok(null) : fail('invalid_argument', `Unknown canned ACL ${canned}`),
    isValue: (value): value is { canned: BucketCannedAcl } =>
      typeof (value as { canned?: unknown } | null)?.canned === 'string',
    isEmpty: () => false,
    recordBytesMax: 64,
    // Never answered: a bucket without the setting has the private ACL (acl.ts).
    absent: { code: 'no_such_key', message: 'The bucket has the private ACL' },
  },
  quota: {
    validate: ({ maxBytes, maxObjects }) =>
      isBound(maxBytes) && isBound(maxObjects)
        ? ok(null)
        : fail('invalid_argument', 'a quota bound is a whole number of at least 0, or null'),
    isValue: (value): value is BucketQuota => {
      const quota = value as Partial<BucketQuota> | null
      return (
        quota !== null && typeof quota === 'object' && 'maxBytes' in quota && 'maxObjects' in quota
      )
    },
    // A quota without a bound is none.
    isEmpty: ({ maxBytes, maxObjects }) => maxBytes === null && maxObjects === null,
    recordBytesMax: 64,
    // Never answered: a bucket without a quota has no bounds (the admin API says so).
    absent: { code: 'no_such_key', message: 'The bucket has no quota' },
  },
  lifecycle: {
    validate: validateLifecycleConfiguration,
    isValue: isLifecycleConfiguration,
    isEmpty: () => false,
    recordBytesMax: LIFECYCLE_RECORD_BYTES_MAX,
    absent: {
      code: 'no_such_lifecycle_configuration',
      message: 'The lifecycle configuration does not exist',
    },
  },
  objectLock: {
    validate: validateObjectLockConfiguration,
    isValue: isObjectLockConfiguration,
    isEmpty: () => false,
    recordBytesMax: 128,
    absent: {
      code: 'no_such_object_lock_configuration',
      message: 'Object Lock configuration does not exist for this bucket',
    },
  },
}

/** Every setting's name, in the registry's order. */
export const BUCKET_SETTING_NAMES = Object.keys(BUCKET_SETTINGS) as BucketSettingName[]

export function isBucketSettingName(name: string): name is BucketSettingName {
  return Object.hasOwn(BUCKET_SETTINGS, name)
}

/** The rules of a named setting, typed for a value of any setting (each name's rules take only
 * its own values, which NamedBucketSetting ties to the name). */
export function settingRules(name: BucketSettingName): BucketSettingRules<BucketSettingValue> {
  return BUCKET_SETTINGS[name] as BucketSettingRules<BucketSettingValue>
}

/** The error of a get of a setting the bucket does not have. */
export function settingAbsent<T>(name: BucketSettingName): Result<T> {
  const { code, message } = BUCKET_SETTINGS[name].absent
  return fail(code, message)
}
