/** @module Bucket-name and key rules, shared by the S3 API and (later) the admin API so both apply
 * the same rules (SPEC.md section 2). */
import { BUCKET_NAME_MAX, BUCKET_NAME_MIN, KEY_BYTES_MAX } from '../../protocol/limits.js'

/** Prefixes and suffixes Amazon S3 reserves for its own names (access point aliases, Object
 * Lambda, Multi-Region Access Points, directory and table buckets, internationalized domains). */
const RESERVED_PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-']
const RESERVED_SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3']

/** 3 to 63 characters of lowercase letters, digits, hyphens and dots; starts with a letter or
 * digit, does not end with a hyphen. Also refused, as Amazon S3 does: an IP-address form, `..`,
 * a dot next to a hyphen, and S3's reserved prefixes and suffixes. */
export function isValidBucketName(name: string): boolean {
  if (name.length < BUCKET_NAME_MIN || name.length > BUCKET_NAME_MAX) return false
  if (!/^[a-z0-9][a-z0-9.-]*$/.test(name)) return false
  if (name.endsWith('-') || name.endsWith('.')) return false
  if (name.includes('..') || name.includes('.-') || name.includes('-.')) return false
  if (RESERVED_PREFIXES.some((prefix) => name.startsWith(prefix))) return false
  if (RESERVED_SUFFIXES.some((suffix) => name.endsWith(suffix))) return false
  return !/^\d+\.\d+\.\d+\.\d+$/.test(name)
}

export function isKeyTooLong(key: string): boolean {
  return Buffer.byteLength(key, 'utf8') > KEY_BYTES_MAX
}
