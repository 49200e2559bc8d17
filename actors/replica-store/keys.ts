/** @module Key layout of the store's metadata. One-letter prefixes, then `\0`, keep each record
 * kind in its own contiguous range:
 *
 *   B\0<bucket>         bucket record (creation time, per-bucket counters)
 *   R\0<bucket>         the bucket's CORS rules, if it has any; deleted with the bucket
 *   O\0<bucket>\0<key>  object record; a bucket's objects are one range, in S3's listing order
 *   H\0<sha256>         blob record (size, CRC32, reference count, file id if not inline)
 *   D\0<sha256>         bytes of an inline blob (at most INLINE_BLOB_BYTES_MAX)
 *   F\0<file id>        file -> sha256, so recovery can tell a committed temporary file
 *   G\0<file id>        garbage: a file whose blob lost its last reference, removed after commit
 *   C\0                 store-wide counters
 *   Y\0<name>           system records kept for other actors (iam)
 *
 * Keys compare as UTF-8 bytes, which is the order S3 lists keys in. Bucket names never contain
 * `\0`, so `O\0<bucket>\0` is a prefix of exactly that bucket's objects; object keys are opaque and
 * may contain anything after it. */
import assert from 'node:assert/strict'

export const COUNTERS_KEY = 'C\0'
export const BUCKET_PREFIX = 'B\0'
/** The first key after every bucket record. */
export const BUCKET_END = 'B\x01'
export const GARBAGE_PREFIX = 'G\0'
export const GARBAGE_END = 'G\x01'
export const SYSTEM_PREFIX = 'Y\0'
/** The first key after every system record. */
export const SYSTEM_END = 'Y\x01'

function checkBucket(bucket: string): void {
  assert(bucket.length > 0, 'empty bucket name')
  assert(!bucket.includes('\0'), 'bucket name with NUL')
}

export function bucketKey(bucket: string): string {
  checkBucket(bucket)
  return BUCKET_PREFIX + bucket
}

export function corsKey(bucket: string): string {
  checkBucket(bucket)
  return 'R\0' + bucket
}

export function objectPrefix(bucket: string): string {
  checkBucket(bucket)
  return `O\0${bucket}\0`
}

/** The first key after every object of `bucket`. */
export function objectEnd(bucket: string): string {
  checkBucket(bucket)
  return `O\0${bucket}\x01`
}

export function objectKey(bucket: string, key: string): string {
  assert(key.length > 0, 'empty object key')
  return objectPrefix(bucket) + key
}

export function blobKey(sha256Hex: string): string {
  assert(/^[0-9a-f]{64}$/.test(sha256Hex), 'blob key is not a SHA-256')
  return 'H\0' + sha256Hex
}

export function inlineKey(sha256Hex: string): string {
  assert(/^[0-9a-f]{64}$/.test(sha256Hex), 'inline key is not a SHA-256')
  return 'D\0' + sha256Hex
}

/** File ids are hex strings the store draws from ctx.randomBytes (see put.ts). */
export function isFileId(text: string): boolean {
  return /^[0-9a-f]{32}$/.test(text)
}

export function fileKey(fileId: string): string {
  assert(isFileId(fileId), 'file key of a malformed file id')
  return 'F\0' + fileId
}

export function garbageKey(fileId: string): string {
  assert(isFileId(fileId), 'garbage key of a malformed file id')
  return GARBAGE_PREFIX + fileId
}

export function systemKey(name: string): string {
  assert(name.length > 0, 'empty system record name')
  return SYSTEM_PREFIX + name
}

const SURROGATE_FIRST = 0xd800
const SURROGATE_LAST = 0xdfff
const CODE_POINT_LAST = 0x10ffff

/** The smallest string greater (as UTF-8 bytes) than every string that starts with `text`, or
 * null if there is none (`text` is all U+10FFFF). Incrementing the last code point works because
 * UTF-8 preserves code point order; a code point that cannot grow is dropped and the one before it
 * grows instead. Used as an exclusive upper bound for "every key with this prefix". */
export function successor(text: string): string | null {
  const points = Array.from(text)
  while (points.length > 0) {
    const last = points.pop()?.codePointAt(0)
    assert(last !== undefined)
    // A lone surrogate is stored as U+FFFD (what UTF-8 encoding makes of it): grow from there.
    const stored = last >= SURROGATE_FIRST && last <= SURROGATE_LAST ? 0xfffd : last
    // The next code point after U+D7FF that UTF-8 can hold is U+E000.
    const next = stored + 1 === SURROGATE_FIRST ? SURROGATE_LAST + 1 : stored + 1
    if (next <= CODE_POINT_LAST) return points.join('') + String.fromCodePoint(next)
  }
  return null
}
