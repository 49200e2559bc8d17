/** @module Key layout of the store's metadata. One-letter prefixes, then `\0`, keep each record
 * kind in its own contiguous range:
 *
 *   B\0<bucket>         bucket record (creation time, per-bucket counters)
 *   R\0<bucket>         the bucket's CORS rules, if it has any; deleted with the bucket
 *   T\0<bucket>         the bucket's tags, if it has any; deleted with the bucket
 *   p\0<bucket>         the bucket's policy, if it has one; deleted with the bucket
 *   a\0<bucket>         the bucket's canned ACL, if not private; deleted with the bucket
 *   q\0<bucket>         the bucket's quota, if it has one; deleted with the bucket
 *   o\0<bucket>         the bucket's object lock configuration, once enabled; deleted with it
 *   l\0<bucket>         the bucket's lifecycle rules, if it has any; deleted with the bucket
 *                       (R\0, T\0 and the small letters are bucket settings: bucketSettingKey;
 *                       every capital letter has a record kind, so settings added later take small
 *                       ones)
 *   O\0<bucket>\0<key>  object record; a bucket's objects are one range, in S3's listing order
 *   H\0<sha256>         blob record (size, CRC32, reference count, file id if not inline, and
 *                       whether the scrubber found the copy corrupt); the scrubber walks this range
 *   D\0<sha256>         bytes of an inline blob (at most INLINE_BLOB_BYTES_MAX)
 *   F\0<file id>        file -> sha256, so recovery can tell a committed temporary file
 *   G\0<file id>        garbage: a file whose blob lost its last reference, removed after commit
 *   C\0                 store-wide counters (shard 0's, and the only ones of a store of one shard)
 *   C\0<shard>          store-wide counters of store shard <shard> (1 and up); the counts are the
 *                       sum of every C\0 record, a shard's alone may be negative (a blob one shard
 *                       made, another freed)
 *   K\0<bucket>\0<shard>  the bucket's counters kept by store shard <shard> (1 and up), added to
 *                       those in its B\0 record (shard 0's); deleted with the bucket
 *   Y\0<name>           system records kept for other actors (iam)
 *   L\0<name>           records of this node alone kept for other actors (the scrubber's cursor):
 *                       never part of the catalog; and L\0replica-store.digests, present once the
 *                       digests (E\0, Z\0) are complete
 *   U\0<bucket>\0<key>\0<upload id>  multipart upload in progress; a bucket's uploads are one
 *                       range in (key, upload id) order, which is ListMultipartUploads' order
 *   P\0<upload id>\0<part number, 5 digits>  an uploaded part (it holds a blob reference)
 *   X\0<initiated ms, 15 digits><upload id>  expiry index of uploads, oldest first (and of
 *                       completed uploads' records, by completion time)
 *   M\0<upload id>      a completed upload's result, to answer a retried complete the same
 *   V\0<bucket>\0<key>\0<version token>  a version that is not the current object (an older
 *                       version, or a delete marker); tokens sort newest first
 *   N\0<bucket>\0<key>  the token of the key's `null` version when it is under V\0
 *   S\0<catalog key>    cluster mode: the hybrid-clock stamp of the catalog key's last change
 *                       (B\0, Y\0 and bucket settings' keys); kept when the key is deleted (a
 *                       tombstone)
 *   Q\0<bucket>\0<key>  cluster mode: the stamp of the newest change of the key this store applied
 *                       or refused as stale (puts, deletes, markers, deletes by id, attribute
 *                       changes, completes): the key's tombstone once its object is gone;
 *                       deleted with the bucket's objects
 *   W\0<bucket>\0<key>\0<version token>  cluster mode: a version deleted by id (value: the
 *                       delete's stamp), so that a late copy of it is never written again
 *   A\0<upload id>      cluster mode: an aborted upload (bucket, key), so that its replicas can
 *                       say it ended; expires with completed uploads' records (X\0, M\0)
 *   I\0<upload id>      cluster mode: bucket and key of a stamped upload in progress, so that its
 *                       state can be found by id alone
 *   J\0<node>\0<bucket>\0<key>  cluster mode: a hint: a change of the key (value: its stamp) that
 *                       replica <node> missed, kept until repair brings it the change
 *   E\0<pp>\0<ll>\0<bucket>\0<key>  cluster mode: the key's digest (32 bytes, digests.ts) of its
 *                       O\0, V\0, Q\0 and W\0 records; pp and ll (2 hex digits) are its partition
 *                       and leaf, so that a leaf's keys are one range in (bucket, key) order
 *   Z\0<pp>\0<ll>       cluster mode: the digest of a leaf of partition pp
 *   Z\0<pp>             cluster mode: the root digest of partition pp
 *
 * Keys compare as UTF-8 bytes, which is the order S3 lists keys in. Bucket names never contain
 * `\0`, so `O\0<bucket>\0` is a prefix of exactly that bucket's objects; object keys are opaque and
 * may contain anything after it. */
import assert from 'node:assert/strict'
import { isBucketSettingName, type BucketSettingName } from '../../protocol/bucket-settings.js'
import { parseHlc } from '../../protocol/hlc.js'

export const COUNTERS_KEY = 'C\0'
/** The first key after every counters record. */
export const COUNTERS_END = 'C\x01'
export const BUCKET_PREFIX = 'B\0'
/** The first key after every bucket record. */
export const BUCKET_END = 'B\x01'
export const GARBAGE_PREFIX = 'G\0'
export const GARBAGE_END = 'G\x01'
export const SYSTEM_PREFIX = 'Y\0'
/** The first key after every system record. */
export const SYSTEM_END = 'Y\x01'

/** The prefix of each bucket setting's records (protocol/bucket-settings.ts): these are the
 * bytes data directories hold, so a setting keeps its prefix for good and a new one takes a letter
 * no other record kind uses. */
const BUCKET_SETTING_PREFIXES: { [N in BucketSettingName]: string } = {
  cors: 'R\0',
  tags: 'T\0',
  policy: 'p\0',
  acl: 'a\0',
  quota: 'q\0',
  objectLock: 'o\0',
  lifecycle: 'l\0',
}

export const STAMP_PREFIX = 'S\0'
export const STAMP_END = 'S\x01'
/** Key ranges that make up the catalog: what every node of a cluster knows. */
export const CATALOG_PREFIXES: readonly string[] = [
  BUCKET_PREFIX,
  ...Object.values(BUCKET_SETTING_PREFIXES),
  SYSTEM_PREFIX,
]

export function isCatalogKey(key: string): boolean {
  return CATALOG_PREFIXES.some((prefix) => key.startsWith(prefix))
}

export function stampKey(catalogKey: string): string {
  assert(isCatalogKey(catalogKey), 'a stamp for a key outside the catalog')
  return STAMP_PREFIX + catalogKey
}

export const EXPIRY_PREFIX = 'X\0'
export const EXPIRY_END = 'X\x01'

function checkBucket(bucket: string): void {
  assert(bucket.length > 0, 'empty bucket name')
  assert(!bucket.includes('\0'), 'bucket name with NUL')
}

export function bucketKey(bucket: string): string {
  checkBucket(bucket)
  return BUCKET_PREFIX + bucket
}

/** The store-wide counters store shard `shard` keeps (runtime/store-shards.ts). */
export function countersKey(shard: number): string {
  return shard === 0 ? COUNTERS_KEY : COUNTERS_KEY + String(shard)
}

/** The counters of `bucket` kept by store shard `shard`, 1 and up (shard 0's are in B\0). */
export function bucketCountersKey(bucket: string, shard: number): string {
  assert(shard > 0, "shard 0's bucket counters are in its bucket record")
  return bucketCountersPrefix(bucket) + String(shard)
}

export function bucketCountersPrefix(bucket: string): string {
  checkBucket(bucket)
  return `K\0${bucket}\0`
}

export function bucketSettingKey(bucket: string, name: BucketSettingName): string {
  checkBucket(bucket)
  assert(isBucketSettingName(name), 'an unknown bucket setting')
  return BUCKET_SETTING_PREFIXES[name] + bucket
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

export const BLOB_PREFIX = 'H\0'
/** The first key after every blob record. */
export const BLOB_END = 'H\x01'

export function isSha256(text: string): boolean {
  return /^[0-9a-f]{64}$/.test(text)
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

/** The store shard whose temporary file `fileId` is: a shard's ids start with its hex digit
 * (STORE_SHARDS_MAX is 16), and an id drawn by a store of another shard count (any digit) is its
 * digit's shard modulo the count. */
export function fileShard(fileId: string, shards: number): number {
  return Number.parseInt(fileId.charAt(0), 16) % shards
}

export function fileKey(fileId: string): string {
  assert(isFileId(fileId), 'file key of a malformed file id')
  return 'F\0' + fileId
}

export function garbageKey(fileId: string): string {
  assert(isFileId(fileId), 'garbage key of a malformed file id')
  return GARBAGE_PREFIX + fileId
}

/** Upload ids are 32 hex characters: 12 of the initiation time in ms, then 20 random, so that one
 * key's uploads list in the order they were initiated. */
export function isUploadId(text: string): boolean {
  return /^[0-9a-f]{32}$/.test(text)
}

export function uploadPrefix(bucket: string): string {
  checkBucket(bucket)
  return `U\0${bucket}\0`
}

export function uploadEnd(bucket: string): string {
  checkBucket(bucket)
  return `U\0${bucket}\x01`
}

export function uploadKey(bucket: string, key: string, uploadId: string): string {
  assert(key.length > 0, 'empty object key')
  assert(isUploadId(uploadId), 'malformed upload id')
  return `${uploadPrefix(bucket)}${key}\0${uploadId}`
}

/** Splits the part of an upload key after its bucket prefix: the key, then the fixed-length id. */
export function splitUploadKey(rest: string): { key: string; uploadId: string } {
  const uploadId = rest.slice(-32)
  assert(isUploadId(uploadId) && rest.at(-33) === '\0', 'malformed upload key')
  return { key: rest.slice(0, -33), uploadId }
}

const PART_DIGITS = 5

export function partPrefix(uploadId: string): string {
  assert(isUploadId(uploadId), 'malformed upload id')
  return `P\0${uploadId}\0`
}

export function partEnd(uploadId: string): string {
  assert(isUploadId(uploadId), 'malformed upload id')
  return `P\0${uploadId}\x01`
}

export function partKey(uploadId: string, partNumber: number): string {
  assert(Number.isInteger(partNumber) && partNumber >= 1 && partNumber <= 99_999)
  return partPrefix(uploadId) + String(partNumber).padStart(PART_DIGITS, '0')
}

export function partNumberOf(storedKey: string): number {
  return Number(storedKey.slice(-PART_DIGITS))
}

export function completedUploadKey(uploadId: string): string {
  assert(isUploadId(uploadId), 'malformed upload id')
  return `M\0${uploadId}`
}

export function expiryKey(initiatedMs: number, uploadId: string): string {
  assert(Number.isSafeInteger(initiatedMs) && initiatedMs >= 0)
  assert(isUploadId(uploadId), 'malformed upload id')
  return EXPIRY_PREFIX + String(initiatedMs).padStart(15, '0') + uploadId
}

/** The first expiry key of uploads initiated at `ms` or later. */
export function expiryBound(ms: number): string {
  return EXPIRY_PREFIX + String(Math.max(0, Math.floor(ms))).padStart(15, '0')
}

/** Version tokens: 16 decimal digits counting down from the write's time in microseconds, then 8
 * random hex digits, so that within a key they sort newest first. A version's id is its token (or
 * `null`, see versions.ts). */
export const VERSION_TOKEN_LENGTH = 24
const VERSION_CLOCK_TOP = 9_999_999_999_999_999

export function isVersionToken(text: string): boolean {
  return /^[0-9]{16}[0-9a-f]{8}$/.test(text)
}

export function versionToken(micros: number, random: string): string {
  assert(Number.isSafeInteger(micros) && micros >= 0 && micros < VERSION_CLOCK_TOP)
  assert(/^[0-9a-f]{8}$/.test(random))
  return String(VERSION_CLOCK_TOP - micros).padStart(16, '0') + random
}

export { NULL_TOMBSTONE_TOKEN } from '../../protocol/anti-entropy.js'

/** The highest logical counter of a stamp that becomes a version token: the counter takes the
 * microseconds of the token's clock (the coordinator's clock caps it there). */
export const STAMP_LOGICAL_MAX = 999
const STAMP_NODE_TOP = 0xfffffffe

/** A stamp a change may carry: an hlcString whose counter fits a version token's clock, and whose
 * wall clock the token's count-down holds exactly as a double (years 2001 to 2286). */
export function isStamp(text: string): boolean {
  const hlc = parseHlc(text)
  if (hlc === null || hlc.logical > STAMP_LOGICAL_MAX) return false
  const countdown = VERSION_CLOCK_TOP - hlc.wallMs * 1000
  return Number.isSafeInteger(countdown) && countdown > STAMP_LOGICAL_MAX
}

/** The version token of a stamped change: its wall clock and counter as the microseconds, its node
 * tag (inverted, so that a higher tag sorts newer) as the random part. Token order, newest first,
 * is exactly stamp order, and every replica derives the same token. The top value ffffffff stays
 * free for objects written before versioning (versions.ts). */
export function stampToken(stamp: string): string {
  const hlc = parseHlc(stamp)
  assert(hlc !== null && isStamp(stamp), 'malformed stamp')
  const tag = STAMP_NODE_TOP - Math.min(hlc.node, STAMP_NODE_TOP)
  return versionToken(hlc.wallMs * 1000 + hlc.logical, tag.toString(16).padStart(8, '0'))
}

/** The wall clock of a stamp, in ms: the Last-Modified of what a stamped change writes. */
export function stampWallMs(stamp: string): number {
  const hlc = parseHlc(stamp)
  assert(hlc !== null, 'malformed stamp')
  return hlc.wallMs
}

export function keyStampKey(bucket: string, key: string): string {
  checkBucket(bucket)
  assert(key.length > 0, 'empty object key')
  return `Q\0${bucket}\0${key}`
}

export function keyStampPrefix(bucket: string): string {
  checkBucket(bucket)
  return `Q\0${bucket}\0`
}

export function keyStampEnd(bucket: string): string {
  checkBucket(bucket)
  return `Q\0${bucket}\x01`
}

export function deletedVersionKey(bucket: string, key: string, token: string): string {
  checkBucket(bucket)
  assert(key.length > 0, 'empty object key')
  assert(isVersionToken(token), 'malformed version token')
  return `W\0${bucket}\0${key}\0${token}`
}

export function deletedVersionPrefix(bucket: string): string {
  checkBucket(bucket)
  return `W\0${bucket}\0`
}

export function deletedVersionEnd(bucket: string): string {
  checkBucket(bucket)
  return `W\0${bucket}\x01`
}

/** Every version deleted by id of one object key starts with this. */
export function keyDeletedPrefix(bucket: string, key: string): string {
  assert(key.length > 0, 'empty object key')
  return `${deletedVersionPrefix(bucket)}${key}\0`
}

export function abortedUploadKey(uploadId: string): string {
  assert(isUploadId(uploadId), 'malformed upload id')
  return `A\0${uploadId}`
}

export function openUploadKey(uploadId: string): string {
  assert(isUploadId(uploadId), 'malformed upload id')
  return `I\0${uploadId}`
}

export function versionPrefix(bucket: string): string {
  checkBucket(bucket)
  return `V\0${bucket}\0`
}

export function versionEnd(bucket: string): string {
  checkBucket(bucket)
  return `V\0${bucket}\x01`
}

/** Every version key of one object key starts with this. */
export function keyVersionsPrefix(bucket: string, key: string): string {
  assert(key.length > 0, 'empty object key')
  return `${versionPrefix(bucket)}${key}\0`
}

export function versionKey(bucket: string, key: string, token: string): string {
  assert(isVersionToken(token), 'malformed version token')
  return keyVersionsPrefix(bucket, key) + token
}

/** Splits the part of a version key after its bucket prefix: the key, then the fixed token. */
export function splitVersionKey(rest: string): { key: string; token: string } {
  const token = rest.slice(-VERSION_TOKEN_LENGTH)
  assert(isVersionToken(token) && rest.at(-VERSION_TOKEN_LENGTH - 1) === '\0', 'bad version key')
  return { key: rest.slice(0, -VERSION_TOKEN_LENGTH - 1), token }
}

export function nullVersionKey(bucket: string, key: string): string {
  checkBucket(bucket)
  assert(key.length > 0, 'empty object key')
  return `N\0${bucket}\0${key}`
}

export function systemKey(name: string): string {
  assert(name.length > 0, 'empty system record name')
  return SYSTEM_PREFIX + name
}

export function localKey(name: string): string {
  assert(name.length > 0, 'empty local record name')
  return 'L\0' + name
}

/** Present once every key's digest is kept (digests.ts). */
export const DIGESTS_KEPT_KEY = localKey('replica-store.digests')

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

export const HINT_PREFIX = 'J\0'
export const HINT_END = 'J\x01'

export function hintKey(node: string, bucket: string, key: string): string {
  assert(node.length > 0 && !node.includes('\0'), 'malformed node id')
  checkBucket(bucket)
  assert(key.length > 0, 'empty object key')
  return `${HINT_PREFIX}${node}\0${bucket}\0${key}`
}

function hexByte(value: number): string {
  assert(Number.isInteger(value) && value >= 0 && value <= 255, 'not a byte')
  return value.toString(16).padStart(2, '0')
}

/** Every key digest of one leaf starts with this. */
export function leafKeysPrefix(partition: number, leaf: number): string {
  return `E\0${hexByte(partition)}\0${hexByte(leaf)}\0`
}

export function leafKeysEnd(partition: number, leaf: number): string {
  return `E\0${hexByte(partition)}\0${hexByte(leaf)}\x01`
}

/** Every key digest of one partition starts with this. */
export function partitionKeysPrefix(partition: number): string {
  return `E\0${hexByte(partition)}\0`
}

export function partitionKeysEnd(partition: number): string {
  return `E\0${hexByte(partition)}\x01`
}

export function keyDigestKey(partition: number, leaf: number, bucket: string, key: string): string {
  checkBucket(bucket)
  assert(key.length > 0, 'empty object key')
  return `${leafKeysPrefix(partition, leaf)}${bucket}\0${key}`
}

export function leafDigestKey(partition: number, leaf: number): string {
  return `Z\0${hexByte(partition)}\0${hexByte(leaf)}`
}

/** Every leaf digest of one partition starts with this. */
export function leafDigestPrefix(partition: number): string {
  return `Z\0${hexByte(partition)}\0`
}

export function leafDigestEnd(partition: number): string {
  return `Z\0${hexByte(partition)}\x01`
}

export function rootDigestKey(partition: number): string {
  return `Z\0${hexByte(partition)}`
}
