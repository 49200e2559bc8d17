/** @module Tags of objects and buckets, as Amazon S3 bounds them: the `Tagging` XML a client puts
 * and gets, the `x-amz-tagging` header (URL-encoded `k1=v1&k2=v2`) of PutObject, CopyObject and
 * CreateMultipartUpload, and S3's rules: at most 10 tags on an object and 50 on a bucket, keys of 1
 * to 128 and values of at most 256 Unicode characters, each key once, no key starting with `aws:`.
 * A rule broken is S3's `InvalidTag` with S3's message; a body outside the schema `MalformedXML`.
 * Pure functions. */
import { fail, ok, type Result } from './errors.js'
import { newDocument, parseXmlBody, serialize, text, xmlChildren, xmlChildText } from './s3-xml.js'

export interface Tag {
  key: string
  value: string
}

export const OBJECT_TAGS_MAX = 10
export const BUCKET_TAGS_MAX = 50
export const TAG_KEY_CHARS_MAX = 128
export const TAG_VALUE_CHARS_MAX = 256

export type TagOwner = 'object' | 'bucket'

/** Length in Unicode characters (code points), as S3 counts a tag's key and value. */
function characters(value: string): number {
  let count = 0
  for (const _ of value) count++
  return count
}

/** Checks a tag set against S3's rules for an object's or a bucket's tags. */
export function validateTags(tags: readonly Tag[], owner: TagOwner): Result<readonly Tag[]> {
  if (owner === 'object' && tags.length > OBJECT_TAGS_MAX) {
    return fail('invalid_tag', `Object tags cannot be greater than ${OBJECT_TAGS_MAX}`)
  }
  if (owner === 'bucket' && tags.length > BUCKET_TAGS_MAX) {
    return fail('invalid_tag', `Bucket tag count cannot be greater than ${BUCKET_TAGS_MAX}`)
  }
  const seen = new Set<string>()
  for (const { key, value } of tags) {
    if (key === '') return fail('invalid_tag', 'The TagKey you have provided is invalid')
    if (characters(key) > TAG_KEY_CHARS_MAX) {
      return fail('invalid_tag', 'The TagKey you have provided is too long, max 128')
    }
    if (characters(value) > TAG_VALUE_CHARS_MAX) {
      return fail('invalid_tag', 'The TagValue you have provided is too long, max 256')
    }
    if (seen.has(key)) return fail('invalid_tag', 'Cannot provide multiple Tags with the same key')
    seen.add(key)
    if (key.toLowerCase().startsWith('aws:')) {
      return fail(
        'invalid_tag',
        owner === 'object'
          ? 'Your TagKey cannot be prefixed with aws:'
          : 'User-defined tag keys can\'t start with "aws:". ' +
              'This prefix is reserved for system tags.',
      )
    }
  }
  return ok(tags)
}

/** The `x-amz-tagging` header: a URL query string (`+` is a space); empty means no tags. */
export function parseTaggingHeader(header: string, owner: TagOwner = 'object'): Result<Tag[]> {
  const tags: Tag[] = []
  for (const [key, value] of new URLSearchParams(header)) tags.push({ key, value })
  const valid = validateTags(tags, owner)
  return valid.ok ? ok(tags) : valid
}

/** A PutObjectTagging or PutBucketTagging body:
 * `<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet></Tagging>`. */
export function parseTagging(xml: string | Uint8Array, owner: TagOwner): Result<Tag[]> {
  const root = parseXmlBody(xml, 'Tagging')
  if (!root.ok) return root
  const sets = xmlChildren(root.value, 'TagSet')
  const [set] = sets
  if (set === undefined || sets.length > 1) return fail('malformed_xml', 'one TagSet is required')
  if (typeof set === 'string') {
    return set.trim() === '' ? ok([]) : fail('malformed_xml', 'TagSet holds text')
  }
  const tags: Tag[] = []
  for (const element of xmlChildren(set, 'Tag')) {
    if (typeof element === 'string') return fail('malformed_xml', 'Tag without Key and Value')
    const key = xmlChildText(element, 'Key')
    if (!key.ok) return key
    const value = xmlChildText(element, 'Value')
    if (!value.ok) return value
    if (key.value === undefined || value.value === undefined) {
      return fail('malformed_xml', 'a Tag needs a Key and a Value')
    }
    tags.push({ key: key.value, value: value.value })
  }
  const valid = validateTags(tags, owner)
  return valid.ok ? ok(tags) : valid
}

/** GetObjectTagging's and GetBucketTagging's answer. */
export function taggingXml(tags: readonly Tag[]): string {
  const root = newDocument('Tagging', true)
  const set = root.ele('TagSet')
  for (const { key, value } of tags) {
    const tag = set.ele('Tag')
    text(tag, 'Key', key)
    text(tag, 'Value', value)
  }
  return serialize(root)
}
