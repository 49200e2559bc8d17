/** @module The attributes of an object version beyond its bytes and metadata, as one family: the
 * write that makes a version may set them (PutObject, CopyObject, CreateMultipartUpload, a form
 * upload), and each can be set alone later (object.attributes.put). A version's record keeps them
 * with, in cluster mode, the stamp of each one's last change, so that replicas keep the newest of
 * each whatever order the changes came in: an object's tags, its canned ACL, and its object lock
 * retention and legal hold.
 *
 * Each attribute's entry says how its value is checked, when a value is none (the record then
 * carries nothing), what GET and HEAD report of it, what CopyObject does with it when the request
 * names none (S3 keeps the source's tags; the S3 front end names the request's when its directive
 * says to replace them), and how a key's digest names it. Adding an attribute is an entry here, its
 * field in the wire schemas (wire/fields.ts objectAttributes and attributeSummary) and its S3
 * front end (http/s3/object-attributes.ts). Pure functions, without zod. */
import type { z } from 'zod'
import { fail, ok, type Result } from './errors.js'
import { validateTags, type Tag } from './tagging.js'
import type { attributeSummary, objectAttributes } from './wire/fields.js'

export type ObjectAttributes = z.infer<typeof objectAttributes>
export type AttributeName = keyof ObjectAttributes
/** What GET and HEAD report of each attribute a version carries. */
export type AttributeSummary = z.infer<typeof attributeSummary>
/** Cluster mode: the stamp of each attribute's last change after its version was written. */
export type AttributeStamps = Partial<Record<AttributeName, string>>

/** The stamp of a version's last change: its write, or a later change of one of its attributes.
 * An attribute change orders nothing else: the key's stamp, which orders its versions and
 * deletions, stays that of the newest write. */
export function changeStampOf(record: {
  stamp?: string
  attributeStamps?: AttributeStamps
}): string {
  let newest = record.stamp ?? ''
  for (const stamp of Object.values(record.attributeStamps ?? {})) {
    if (stamp > newest) newest = stamp
  }
  return newest
}

type Value<N extends AttributeName> = NonNullable<ObjectAttributes[N]>

interface AttributeRule<N extends AttributeName> {
  /** Whether a value read from outside the process (a record on disk, a peer's) has its shape. */
  isValue(value: unknown): value is Value<N>
  validate(value: Value<N>): Result<unknown>
  /** A value that means none, which a record does not carry (an empty tag set). */
  isNone(value: Value<N>): boolean
  summary(value: Value<N>): NonNullable<AttributeSummary[N]>
  /** CopyObject without the attribute named: `source` keeps the source's, `none` has none. */
  copy: 'source' | 'none'
  /** What a key's digest names of it (replication/digests.ts), from its value (or none) and the
   * stamp of its last change, if any. An attribute added later must name itself, and give '' for
   * none without a stamp, so that every record without it hashes as before. */
  digest(value: Value<N> | undefined, stamp: string | undefined): string
}

const RULES: { [N in AttributeName]: AttributeRule<N> } = {
  tags: {
    isValue: (tags): tags is Tag[] =>
      Array.isArray(tags) &&
      tags.every((tag: Partial<Tag> | null) => {
        return typeof tag?.key === 'string' && typeof tag.value === 'string'
      }),
    validate: (tags) => validateTags(tags, 'object'),
    isNone: (tags) => tags.length === 0,
    summary: (tags) => tags.length,
    copy: 'source',
    // The form of digests made before attributes were a family: the count, then the stamp.
    digest: (tags, stamp) => `\0${tags?.length ?? 0}${stamp === undefined ? '' : `\0${stamp}`}`,
  },
  acl: {
    isValue: (acl): acl is Value<'acl'> =>
      acl === 'private' || acl === 'public-read' || acl === 'authenticated-read',
    validate: (acl) => ok(acl),
    isNone: (acl) => acl === 'private',
    summary: (acl) => acl,
    // S3 gives a copy the ACL its request names, else the private one.
    copy: 'none',
    digest: (acl, stamp) =>
      acl === undefined && stamp === undefined ? '' : `\0acl\0${acl ?? ''}\0${stamp ?? ''}`,
  },
  retention: {
    isValue: (value): value is Value<'retention'> => {
      const held = value as Partial<Value<'retention'>> | null
      const modes: unknown[] = ['GOVERNANCE', 'COMPLIANCE', 'OFF']
      return modes.includes(held?.mode) && typeof held?.untilMs === 'number'
    },
    validate: (retention) =>
      Number.isSafeInteger(retention.untilMs) && retention.untilMs >= 0
        ? ok(retention)
        : fail('invalid_argument', 'a retention date is a time in ms'),
    isNone: (retention) => retention.mode === 'OFF',
    summary: (retention) => retention,
    // S3 gives a copy the retention its request names, else its bucket's default.
    copy: 'none',
    digest: (retention, stamp) => {
      if (retention === undefined && stamp === undefined) return ''
      const held = retention === undefined ? '' : `${retention.mode}:${retention.untilMs}`
      return `\0retention\0${held}\0${stamp ?? ''}`
    },
  },
  legalHold: {
    isValue: (value): value is boolean => typeof value === 'boolean',
    validate: (hold) => ok(hold),
    isNone: (hold) => !hold,
    summary: () => true as const,
    copy: 'none',
    digest: (hold, stamp) =>
      hold === undefined && stamp === undefined
        ? ''
        : `\0legalHold\0${String(hold ?? '')}\0${stamp ?? ''}`,
  },
}

export const ATTRIBUTE_NAMES = Object.keys(RULES) as AttributeName[]

/** Attributes as a table of any name's value: a loop over the names sets each by its name, which
 * the compiler cannot tie to that name's own type. */
export type AnyAttributes = Partial<Record<AttributeName, unknown>>

function ruleOf(name: AttributeName): AttributeRule<AttributeName> {
  return RULES[name] as AttributeRule<AttributeName>
}

/** Checks each attribute against its own rules. */
export function validateAttributes(attributes: ObjectAttributes): Result<ObjectAttributes> {
  for (const name of ATTRIBUTE_NAMES) {
    const value = attributes[name]
    if (value === undefined) continue
    const valid = ruleOf(name).validate(value)
    if (!valid.ok) return valid
  }
  return ok(attributes)
}

/** Whether attributes read from outside the process (a record on disk, a peer's) are well formed:
 * only attributes of the registry, each of its shape and within its rules. */
export function isAttributes(value: unknown): value is ObjectAttributes {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  for (const [name, held] of Object.entries(value)) {
    if (!(ATTRIBUTE_NAMES as string[]).includes(name)) return false
    const rule = ruleOf(name as AttributeName)
    if (!rule.isValue(held) || !rule.validate(held).ok) return false
  }
  return true
}

/** Whether stamps of attributes read from outside the process name only attributes of the
 * registry, each with a string. */
export function isAttributeStamps(value: unknown): value is AttributeStamps {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  return Object.entries(value).every(
    ([name, stamp]) => (ATTRIBUTE_NAMES as string[]).includes(name) && typeof stamp === 'string',
  )
}

/** The attributes a record keeps: those that are not none; absent when none is left, so a record
 * without attributes stays as it was. */
export function withAttributes(attributes: ObjectAttributes | undefined): {
  attributes?: ObjectAttributes
} {
  const kept: ObjectAttributes = {}
  for (const name of ATTRIBUTE_NAMES) {
    const value = attributes?.[name]
    if (value !== undefined && !ruleOf(name).isNone(value)) (kept as AnyAttributes)[name] = value
  }
  return Object.keys(kept).length === 0 ? {} : { attributes: kept }
}

/** What GET and HEAD report of a version's attributes; undefined when it carries none. */
export function summaryOf(attributes: ObjectAttributes | undefined): AttributeSummary | undefined {
  const summary: AttributeSummary = {}
  for (const name of ATTRIBUTE_NAMES) {
    const value = attributes?.[name]
    if (value !== undefined && !ruleOf(name).isNone(value)) {
      ;(summary as AnyAttributes)[name] = ruleOf(name).summary(value)
    }
  }
  return Object.keys(summary).length === 0 ? undefined : summary
}

/** A copy's attributes: those the request names, and for the others S3's rule (the source's, or
 * none). */
export function copiedAttributes(
  source: ObjectAttributes | undefined,
  request: ObjectAttributes | undefined,
): ObjectAttributes {
  const copied: ObjectAttributes = {}
  for (const name of ATTRIBUTE_NAMES) {
    const value = request?.[name] ?? (ruleOf(name).copy === 'source' ? source?.[name] : undefined)
    if (value !== undefined) (copied as AnyAttributes)[name] = value
  }
  return copied
}

/** Whether a copy needs its source's attributes: one it keeps the source has (`summary` says). */
export function copyReadsSource(
  summary: AttributeSummary | undefined,
  request: ObjectAttributes | undefined,
): boolean {
  return ATTRIBUTE_NAMES.some(
    (name) =>
      ruleOf(name).copy === 'source' &&
      request?.[name] === undefined &&
      summary?.[name] !== undefined,
  )
}

/** The digest item's part of a version's attributes (see AttributeRule.digest). */
export function attributesDigest(
  attributes: ObjectAttributes | undefined,
  stamps: AttributeStamps | undefined,
): string {
  let digest = ''
  for (const name of ATTRIBUTE_NAMES) {
    digest += ruleOf(name).digest(attributes?.[name], stamps?.[name])
  }
  return digest
}
