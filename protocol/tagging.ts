/** @module Tags of objects and buckets, as Amazon S3 bounds them (the `Tagging` XML a client puts
 * and gets is http/s3/xml/tagging-xml.ts): the `x-amz-tagging` header (URL-encoded `k1=v1&k2=v2`)
 * of PutObject, CopyObject and CreateMultipartUpload, and S3's rules: at most 10 tags on an object
 * and 50 on a bucket, keys of 1 to 128 and values of at most 256 Unicode characters, each key
 * once, no key starting with `aws:`. A rule broken is S3's `InvalidTag` with S3's message; a body
 * outside the schema `MalformedXML`. Pure functions. */
import type { z } from 'zod'
import { fail, ok, type Result } from './errors.js'
import type { tag } from './wire/fields.js'

export type Tag = z.infer<typeof tag>

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
