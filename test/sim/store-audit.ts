/** @module An audit of one replica-store's metadata: reads every record of its kv and says where
 * the records and what the store keeps about them disagree, one line per discrepancy (none: the
 * store is consistent). It checks what the store promises about itself (mutation.ts, put.ts,
 * records.ts, keys.ts):
 * - A blob record's `refs` is the number of records naming its sha256: current objects (O\0),
 *   versions that are not current (V\0; a delete marker names none) and parts of uploads in
 *   progress (P\0); a multipart object names one per part, `blobsOf` says which. Copies are object
 *   records like any other; completed uploads' records (M\0) name no blob. A blob whose last
 *   reference goes is deleted in that same batch (its file id becomes garbage, G\0), so no blob
 *   record has refs 0, and every reference names a blob that exists, of the reference's size.
 * - A blob of at most INLINE_BLOB_BYTES_MAX is inline: its bytes are under D\0 (that size, that
 *   CRC32 and SHA-256); a larger one has a file whose F\0 record names the blob back, and that no
 *   other blob and no garbage record (G\0) names. No D\0 or F\0 record outlives its blob.
 * - The counters (C\0) are what the records give: buckets (B\0 records), objects (O\0 records),
 *   bytes (the sizes of O\0, V\0 and P\0 records: a version and an upload's parts keep counting
 *   until they go), blobs (H\0 records) and refs (the references above); each bucket record's
 *   `objects` and `bytes` are the same figures for its own records. A part belongs to an upload
 *   in progress (U\0): the batch that ends an upload removes its parts.
 * - Cluster mode, once its digests are complete (DIGESTS_KEPT_KEY, digests.ts): each key's digest
 *   (E\0) is the XOR of the items of its O\0, V\0, Q\0 and W\0 records, each leaf's and root's
 *   (Z\0) the XOR over their keys' digests; a key, leaf or root without items has no digest.
 * It is a pure function of the kv, as the deterministic simulator needs: no clock, no randomness,
 * no I/O. The kv shows every batch handed to commit, and each batch keeps every rule above, so an
 * audit between any two requests (or of what a crash leaves) finds nothing. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { KvStore } from '../../protocol/actor.js'
import { crc32Update } from '../../protocol/checksums.js'
import { ServiceError } from '../../protocol/errors.js'
import { INLINE_BLOB_BYTES_MAX } from '../../protocol/limits.js'
import {
  DIGESTED_PREFIXES,
  isZero,
  recordItem,
  treeItem,
  treePlace,
  xorInto,
} from '../../actors/replica-store/replication/digests.js'
import {
  BUCKET_PREFIX,
  COUNTERS_KEY,
  DIGESTS_KEPT_KEY,
  fileKey,
  GARBAGE_PREFIX,
  garbageKey,
  inlineKey,
  isFileId,
  isUploadId,
  keyDigestKey,
  leafDigestKey,
  rootDigestKey,
} from '../../actors/replica-store/keys.js'
import {
  blobsOf,
  decodeBlob,
  decodeBucket,
  decodeCounters,
  decodeObject,
  decodePart,
  decodeText,
  EMPTY_COUNTERS,
  type BlobRecord,
  type BucketRecord,
  type Counters,
} from '../../actors/replica-store/records.js'

/** Rows one scan reads. */
const PAGE_ROWS = 1000
/** Pages one key range may take before the audit gives up: ten million rows, far beyond any
 * store a simulation or a test builds. */
const RANGE_PAGES_MAX = 10_000
const SHA256_HEX = /^[0-9a-f]{64}$/

interface BlobReferences {
  count: number
  /** The first record naming the blob and the size it gives, for the reports. */
  firstKey: string
  /** Sizes the references give the blob other than the first's (each the same, if consistent). */
  sizes: Set<number>
}

interface Audit {
  readonly kv: KvStore
  readonly problems: string[]
  /** Bucket records by name. */
  readonly buckets: Map<string, BucketRecord>
  /** Objects and bytes that each bucket's records add up to. */
  readonly bucketFigures: Map<string, { objects: number; bytes: number }>
  /** Blob references by sha256. */
  readonly references: Map<string, BlobReferences>
  /** Uploads in progress: upload id -> bucket. */
  readonly uploads: Map<string, string>
  /** Blob records by sha256. */
  readonly blobs: Map<string, BlobRecord>
  /** What the counters record should say. */
  readonly counted: Counters
}

/** Every discrepancy between the records of a replica-store's kv and what it keeps about them;
 * empty when the store is consistent. */
export function auditStore(kv: KvStore): string[] {
  const audit: Audit = {
    kv,
    problems: [],
    buckets: new Map(),
    bucketFigures: new Map(),
    references: new Map(),
    uploads: new Map(),
    blobs: new Map(),
    counted: { ...EMPTY_COUNTERS },
  }
  // Records that hold references and bytes first, then the blobs they name.
  auditBuckets(audit)
  auditObjects(audit)
  auditVersions(audit)
  auditUploads(audit)
  auditParts(audit)
  auditBlobs(audit)
  auditInlineBytes(audit)
  auditFileRecords(audit)
  auditGarbage(audit)
  auditCounters(audit)
  auditBucketFigures(audit)
  auditDigests(audit)
  return audit.problems
}

/** Every row of the range of a one-letter prefix (`X\0`), a page at a time. */
function* rowsOf(kv: KvStore, prefix: string): Generator<[string, Uint8Array]> {
  assert(prefix.length === 2 && prefix.endsWith('\0'), 'a record kind prefix')
  const end = `${prefix[0]}\x01`
  let from: { gte: string } | { gt: string } = { gte: prefix }
  for (let pages = 0; pages < RANGE_PAGES_MAX; pages++) {
    const rows = kv.scan({ ...from, lt: end, limit: PAGE_ROWS })
    yield* rows
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < PAGE_ROWS) return
    from = { gt: last[0] }
  }
  assert.fail(`more than ${RANGE_PAGES_MAX * PAGE_ROWS} records under ${show(prefix)}`)
}

/** A key as a report shows it: its NULs written `\0`. */
function show(key: string): string {
  return key.replaceAll('\0', '\\0')
}

/** Decodes a record, or reports it as the store's own decoding would refuse it. */
function decoded<T>(audit: Audit, key: string, decode: () => T): T | undefined {
  try {
    return decode()
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error
    audit.problems.push(`${show(key)}: ${error.message}`)
    return undefined
  }
}

/** The bucket a key of `O\0`, `V\0` or `U\0` names (bucket names hold no NUL), or undefined. */
function bucketOfKey(audit: Audit, key: string): string | undefined {
  const end = key.indexOf('\0', 2)
  if (end > 2) return key.slice(2, end)
  audit.problems.push(`${show(key)}: malformed key, no bucket`)
  return undefined
}

function figuresOf(audit: Audit, bucket: string): { objects: number; bytes: number } {
  let figures = audit.bucketFigures.get(bucket)
  if (figures === undefined) {
    figures = { objects: 0, bytes: 0 }
    audit.bucketFigures.set(bucket, figures)
  }
  return figures
}

function addReference(audit: Audit, sha256: string, size: number, key: string): void {
  const found = audit.references.get(sha256)
  if (found === undefined) {
    audit.references.set(sha256, { count: 1, firstKey: key, sizes: new Set([size]) })
    return
  }
  found.count++
  found.sizes.add(size)
}

function auditBuckets(audit: Audit): void {
  for (const [key, value] of rowsOf(audit.kv, BUCKET_PREFIX)) {
    audit.counted.buckets++
    const record = decoded(audit, key, () => decodeBucket(value))
    if (record !== undefined) audit.buckets.set(key.slice(BUCKET_PREFIX.length), record)
  }
}

/** Current objects: each is one object, its size and its blobs' references. A current object
 * keeps its bucket's record: a bucket is deleted only once it counts no object, here and when a
 * deletion arrives from another node (catalog.ts applyOps). */
function auditObjects(audit: Audit): void {
  for (const [key, value] of rowsOf(audit.kv, 'O\0')) {
    const bucket = bucketOfKey(audit, key)
    const record = decoded(audit, key, () => decodeObject(value))
    if (bucket === undefined || record === undefined) continue
    for (const blob of blobsOf(record)) addReference(audit, blob.sha256, blob.size, key)
    audit.counted.objects++
    audit.counted.bytes += record.size
    if (!audit.buckets.has(bucket)) audit.problems.push(`${show(key)}: its bucket has no record`)
    const figures = figuresOf(audit, bucket)
    figures.objects++
    figures.bytes += record.size
  }
}

/** Versions that are not current (older versions, delete markers): their bytes and references
 * count until they go, but they are no objects. Versions of a bucket without a record are no
 * discrepancy: in cluster mode a node applies a bucket's deletion from another node once its
 * record counts no current object (catalog.ts applyOps), and what it still holds of the bucket
 * stays, counted store-wide. */
function auditVersions(audit: Audit): void {
  for (const [key, value] of rowsOf(audit.kv, 'V\0')) {
    const bucket = bucketOfKey(audit, key)
    const record = decoded(audit, key, () => decodeObject(value))
    if (bucket === undefined || record === undefined) continue
    for (const blob of blobsOf(record)) addReference(audit, blob.sha256, blob.size, key)
    audit.counted.bytes += record.size
    figuresOf(audit, bucket).bytes += record.size
  }
}

/** Uploads in progress, by id: their parts' bytes count in their bucket. As with versions, an
 * upload may outlive its bucket's record in cluster mode. */
function auditUploads(audit: Audit): void {
  for (const [key] of rowsOf(audit.kv, 'U\0')) {
    const bucket = bucketOfKey(audit, key)
    const uploadId = key.slice(-32)
    if (!isUploadId(uploadId) || key.at(-33) !== '\0') {
      audit.problems.push(`${show(key)}: malformed upload key`)
      continue
    }
    if (bucket !== undefined) audit.uploads.set(uploadId, bucket)
  }
}

/** Parts (P\0<upload id>\0<part number>): each holds a reference to its blob and counts its bytes
 * until its upload completes (the object takes the reference over) or ends. */
function auditParts(audit: Audit): void {
  for (const [key, value] of rowsOf(audit.kv, 'P\0')) {
    const record = decoded(audit, key, () => decodePart(value))
    if (record === undefined) continue
    addReference(audit, record.sha256, record.size, key)
    audit.counted.bytes += record.size
    const bucket = audit.uploads.get(key.slice(2, 34))
    if (bucket === undefined) {
      audit.problems.push(`${show(key)}: a part of no upload in progress`)
      continue
    }
    figuresOf(audit, bucket).bytes += record.size
  }
}

/** Blob records against the references found, and each blob's own promises. */
function auditBlobs(audit: Audit): void {
  const files = new Map<string, string>()
  for (const [key, value] of rowsOf(audit.kv, 'H\0')) {
    audit.counted.blobs++
    const sha256 = key.slice(2)
    if (!SHA256_HEX.test(sha256)) {
      audit.problems.push(`${show(key)}: malformed key, not a SHA-256`)
      continue
    }
    const record = decoded(audit, key, () => decodeBlob(value))
    if (record === undefined) continue
    audit.blobs.set(sha256, record)
    checkReferences(audit, key, record, audit.references.get(sha256))
    if (record.file === undefined) {
      if (record.size > INLINE_BLOB_BYTES_MAX) {
        audit.problems.push(`${show(key)}: inline, but ${record.size} bytes`)
      }
      continue
    }
    checkFile(audit, key, sha256, record.file)
    const twin = files.get(record.file)
    if (twin !== undefined) {
      audit.problems.push(`${show(key)}: file ${record.file} is also blob ${twin}'s`)
    }
    files.set(record.file, sha256)
    if (record.size <= INLINE_BLOB_BYTES_MAX) {
      audit.problems.push(`${show(key)}: a file, but only ${record.size} bytes`)
    }
  }
  for (const [sha256, found] of audit.references) {
    audit.counted.refs += found.count
    if (!audit.blobs.has(sha256)) {
      audit.problems.push(`${show(found.firstKey)}: names blob ${sha256}, which has no record`)
    }
  }
}

function checkReferences(
  audit: Audit,
  key: string,
  record: BlobRecord,
  found: BlobReferences | undefined,
): void {
  const count = found?.count ?? 0
  if (record.refs === 0) {
    audit.problems.push(`${show(key)}: refs 0 (a blob goes with its last reference)`)
  }
  if (record.refs !== count) {
    audit.problems.push(`${show(key)}: refs ${record.refs}, but ${count} records name it`)
  }
  for (const size of found?.sizes ?? []) {
    if (size !== record.size) {
      audit.problems.push(`${show(key)}: ${record.size} bytes, but a record gives it ${size}`)
    }
  }
}

/** A file blob's file id is well formed, its F\0 record names the blob, and it is no garbage. */
function checkFile(audit: Audit, key: string, sha256: string, file: string): void {
  if (!isFileId(file)) {
    audit.problems.push(`${show(key)}: malformed file id ${JSON.stringify(file)}`)
    return
  }
  const named = audit.kv.get(fileKey(file))
  const text =
    named === undefined ? undefined : decoded(audit, fileKey(file), () => decodeText(named, 'file'))
  if (text !== sha256) {
    const what = named === undefined ? 'no file record' : `its file record names ${text}`
    audit.problems.push(`${show(key)}: file ${file} has ${what}`)
  }
  if (audit.kv.get(garbageKey(file)) !== undefined) {
    audit.problems.push(`${show(key)}: its file ${file} is marked garbage`)
  }
}

/** Inline bytes: each belongs to an inline blob and holds exactly its bytes; every inline blob
 * has them. */
function auditInlineBytes(audit: Audit): void {
  const seen = new Set<string>()
  for (const [key, bytes] of rowsOf(audit.kv, 'D\0')) {
    const sha256 = key.slice(2)
    seen.add(sha256)
    const blob = audit.blobs.get(sha256)
    if (blob === undefined || blob.file !== undefined) {
      audit.problems.push(`${show(key)}: inline bytes of no inline blob`)
      continue
    }
    const wrong = inlineFault(bytes, blob, sha256)
    if (wrong !== null) audit.problems.push(`${show(key)}: ${wrong}`)
  }
  for (const [sha256, blob] of audit.blobs) {
    if (blob.file === undefined && !seen.has(sha256)) {
      audit.problems.push(`${show(inlineKey(sha256))}: missing, its blob is inline`)
    }
  }
}

/** What is wrong with an inline blob's bytes, or null. */
function inlineFault(bytes: Uint8Array, blob: BlobRecord, sha256: string): string | null {
  if (bytes.byteLength !== blob.size) return `${bytes.byteLength} bytes, its blob has ${blob.size}`
  if (crc32Update(0, bytes) !== blob.crc32) return 'not the CRC32 of its blob'
  if (createHash('sha256').update(bytes).digest('hex') !== sha256) return 'not its SHA-256'
  return null
}

/** File records: each names a blob whose file it is (the blob's own check covers the converse). */
function auditFileRecords(audit: Audit): void {
  for (const [key, value] of rowsOf(audit.kv, 'F\0')) {
    const sha256 = decoded(audit, key, () => decodeText(value, 'file'))
    if (sha256 === undefined) continue
    if (audit.blobs.get(sha256)?.file !== key.slice(2)) {
      audit.problems.push(`${show(key)}: names blob ${sha256}, whose file it is not`)
    }
  }
}

/** Garbage records name files whose blob went: no blob and no file record names them. A garbage
 * record stays until its file is removed after the commit (or by recovery), so one is no
 * discrepancy by itself. */
function auditGarbage(audit: Audit): void {
  for (const [key] of rowsOf(audit.kv, GARBAGE_PREFIX)) {
    const file = key.slice(GARBAGE_PREFIX.length)
    if (!isFileId(file)) {
      audit.problems.push(`${show(key)}: malformed file id`)
      continue
    }
    if (audit.kv.get(fileKey(file)) !== undefined) {
      audit.problems.push(`${show(key)}: garbage, but its file record is still there`)
    }
  }
}

/** The store-wide counters. A store without a counters record reads as all zeros, as a mutation
 * reads it (mutation.ts counters(); init writes zeros to a new store before any request). */
function auditCounters(audit: Audit): void {
  const stored = audit.kv.get(COUNTERS_KEY)
  const counters =
    stored === undefined
      ? { ...EMPTY_COUNTERS }
      : decoded(audit, COUNTERS_KEY, () => decodeCounters(stored))
  if (counters === undefined) return
  for (const name of Object.keys(EMPTY_COUNTERS) as (keyof Counters)[]) {
    if (counters[name] !== audit.counted[name]) {
      const held = counters[name]
      const counted = audit.counted[name]
      audit.problems.push(`${show(COUNTERS_KEY)}: ${name} ${held}, the records give ${counted}`)
    }
  }
}

/** Each bucket record's counters. A bucket's records without a bucket record were reported (an
 * object) or are allowed (cluster mode: see auditVersions). */
function auditBucketFigures(audit: Audit): void {
  for (const [name, record] of audit.buckets) {
    const figures = audit.bucketFigures.get(name) ?? { objects: 0, bytes: 0 }
    for (const field of ['objects', 'bytes'] as const) {
      if (record[field] !== figures[field]) {
        const key = show(BUCKET_PREFIX + name)
        audit.problems.push(`${key}: ${field} ${record[field]}, the records give ${figures[field]}`)
      }
    }
  }
}

/** The digests against those the records give (a store that keeps none, or has not completed
 * them, has nothing to check). */
function auditDigests(audit: Audit): void {
  if (audit.kv.get(DIGESTS_KEPT_KEY) === undefined) return
  const keys = new Map<string, { bucket: string; key: string; digest: Buffer }>()
  for (const prefix of DIGESTED_PREFIXES) {
    for (const [storedKey, value] of rowsOf(audit.kv, prefix)) {
      const item = decoded(audit, storedKey, () => recordItem(storedKey, value))
      if (item === undefined || item === null) continue
      const id = `${item.bucket}\0${item.key}`
      const found = keys.get(id) ?? { bucket: item.bucket, key: item.key, digest: Buffer.alloc(32) }
      xorInto(found.digest, item.hash)
      keys.set(id, found)
    }
  }
  const expected = new Map<string, Buffer>()
  const addTo = (storedKey: string, hash: Buffer): void => {
    const sum = expected.get(storedKey) ?? Buffer.alloc(32)
    xorInto(sum, hash)
    expected.set(storedKey, sum)
  }
  for (const { bucket, key, digest } of keys.values()) {
    if (isZero(digest)) continue
    const { partition, leaf } = treePlace(bucket, key)
    expected.set(keyDigestKey(partition, leaf, bucket, key), digest)
    addTo(leafDigestKey(partition, leaf), treeItem(bucket, key, digest))
    addTo(rootDigestKey(partition), treeItem(bucket, key, digest))
  }
  const stored = new Set<string>()
  for (const prefix of ['E\0', 'Z\0']) {
    for (const [storedKey, value] of rowsOf(audit.kv, prefix)) {
      stored.add(storedKey)
      const digest = expected.get(storedKey)
      if (digest === undefined || isZero(digest)) {
        audit.problems.push(`${show(storedKey)}: a digest of nothing the records hold`)
      } else if (!digest.equals(value)) {
        audit.problems.push(`${show(storedKey)}: not the digest its records give`)
      }
    }
  }
  for (const [storedKey, digest] of expected) {
    if (!stored.has(storedKey) && !isZero(digest)) {
      audit.problems.push(`${show(storedKey)}: missing, its records give a digest`)
    }
  }
}
