/** @module Mutation: one atomic change of the store, prepared synchronously and committed as ONE kv
 * batch. It reads through its own pending writes to the kv (which itself shows every batch handed
 * to commit, durable or not), so a mutation prepared right before `kv.commit`, with no await in
 * between, sees every earlier mutation: concurrent writes of one key or one blob's reference count
 * never lose an update, and the one that commits later wins.  Invariants kept here, for every
 * batch: a blob record's `refs` equals the number of object records and part records naming its
 * sha256 (a multipart object names one per part); counters (store-wide and per bucket) match the
 * records; a blob whose last reference goes is deleted with its inline bytes or file record, and a
 * file blob leaves a garbage record so its file is removed after the commit (or by recovery after a
 * crash). In cluster mode the batch also moves the digests of the keys whose replicated records it
 * changes (digests.ts). */
import assert from 'node:assert/strict'
import type { ClaimMode, KvOp, KvRange, KvReader, ShardLocks } from '../../protocol/actor.js'
import { BUCKET_SETTING_NAMES } from '../../protocol/bucket-settings.js'
import { ServiceError } from '../../protocol/errors.js'
import { STORE_SHARDS_MAX } from '../../protocol/limits.js'
import { digestOps, isDigested, keepsDigests } from './replication/digests.js'
import {
  blobKey,
  bucketKey,
  bucketSettingKey,
  BLOB_PREFIX,
  BUCKET_PREFIX,
  bucketCountersKey,
  bucketCountersPrefix,
  COUNTERS_END,
  COUNTERS_KEY,
  countersKey,
  fileKey,
  garbageKey,
  inlineKey,
  objectKey,
  nullVersionKey,
  partKey,
  versionKey,
} from './keys.js'
import {
  blobsOf,
  decodeBlob,
  decodeBucket,
  decodeBucketCounters,
  decodeCounters,
  decodeObject,
  decodePart,
  EMPTY_COUNTERS,
  encodeRecord,
  type BlobRecord,
  type BucketRecord,
  type Counters,
  type ObjectRecord,
  type PartRecord,
} from './records.js'

/** A blob this mutation may create, if no blob with its sha256 exists yet. */
export type NewBlob =
  | { size: number; crc32: number; inline: Uint8Array }
  | { size: number; crc32: number; file: string }

export class Mutation {
  private readonly writes = new Map<string, Uint8Array | null>()
  /** Values `prefetch` read ahead (undefined: absent); valid while no await intervenes. */
  private readonly fetched = new Map<string, Uint8Array | undefined>()
  private counterCache: Counters | null = null
  /** Bucket records read or written by this mutation; written out by `ops()`. */
  private readonly buckets = new Map<string, BucketRecord | null>()
  /** File ids whose blob lost its last reference: removed once the batch is durable. */
  readonly garbage: string[] = []
  /** Catalog keys this mutation changes as a client asked (a bucket created or deleted, its
   * settings): in cluster mode they get a stamp in the same batch and go to every node. A bucket
   * record written only for its counters is not among them. */
  readonly catalogKeys = new Set<string>()

  /** What this mutation claimed of the shard locks, released once its batch is durable. */
  private readonly claims = new Map<string, ClaimMode>()
  /** Whether commitMutation took the claims over; otherwise they go once the synchronous step
   * that prepared the mutation ends. */
  private handedOver = false
  private claimsReleased = false

  /** `owner`: the store shard that commits it (a mutation only read needs none). Its counters
   * are that shard's (keys.ts: C\0, K\0): the only records of every batch that keys of any
   * bucket share, each shard keeps its own. It claims (ShardLocks) every blob record it reads,
   * exclusively, and every bucket record, shared: what other shards also change. */
  constructor(
    private readonly kv: KvReader,
    private readonly owner?: ShardLocks,
  ) {}

  get(key: string): Uint8Array | undefined {
    const written = this.writes.get(key)
    if (written !== undefined) return written ?? undefined
    if (this.fetched.has(key)) return this.fetched.get(key)
    this.claimFor(key)
    return this.kv.get(key)
  }

  /** Claims the bucket's record for this shard alone (its delete, its versioning), or throws
   * ShardContention. */
  claimBucket(bucket: string): void {
    this.claim(bucketKey(bucket), 'exclusive')
  }

  /** Reads `keys` in one kv call for the `get`s that follow: each kv call costs more than a key
   * read within it. Like every read of a mutation, only valid until its next await. */
  prefetch(keys: readonly string[]): void {
    const wanted = keys.filter((key) => !this.writes.has(key) && !this.fetched.has(key))
    for (const key of wanted) this.claimFor(key)
    const values = this.kv.getMany(wanted)
    wanted.forEach((key, index) => this.fetched.set(key, values[index]))
  }

  put(key: string, value: Uint8Array): void {
    this.writes.set(key, value)
  }

  del(key: string): void {
    this.writes.set(key, null)
  }

  /** A record other shards also change is claimed before it is read. */
  private claimFor(key: string): void {
    if (this.owner === undefined) return
    if (key.startsWith(BLOB_PREFIX)) this.claim(key, 'exclusive')
    else if (key.startsWith(BUCKET_PREFIX)) this.claim(key, 'shared')
  }

  /** A store of one shard claims nothing of its locks, but keeps the same account, so that a
   * mutation prepared across an await fails its tests as it would fail a sharded store. */
  private claim(name: string, mode: ClaimMode): void {
    const owner = this.owner
    if (owner === undefined) return
    const held = this.claims.get(name)
    if (held === mode || held === 'exclusive') return
    assert(!this.claimsReleased, 'a mutation read after the step that prepared it')
    if (owner.shards > 1) {
      const seen = owner.version(name)
      if (!owner.claim(name, mode)) throw new ShardContention(name, seen)
      if (held === 'shared') owner.release(name, 'shared')
    }
    if (this.claims.size === 0) queueMicrotask(() => this.releaseUnlessHandedOver())
    this.claims.set(name, mode)
  }

  private releaseUnlessHandedOver(): void {
    if (!this.handedOver) this.releaseClaims()
  }

  /** commitMutation takes the claims over, to release them once the batch is durable. */
  handOverClaims(): void {
    assert(!this.claimsReleased, 'a mutation prepared across an await')
    this.handedOver = true
  }

  releaseClaims(): void {
    if (this.claimsReleased) return
    this.claimsReleased = true
    if (this.owner === undefined || this.owner.shards === 1) return
    for (const [name, mode] of this.claims) this.owner.release(name, mode)
  }

  /** This mutation's shard's counters, which it changes (totals: totalCounters). */
  counters(): Counters {
    if (this.counterCache === null) {
      const stored = this.kv.get(countersKey(this.shard()))
      this.counterCache = stored === undefined ? { ...EMPTY_COUNTERS } : decodeCounters(stored)
    }
    return this.counterCache
  }

  /** The bucket's record, with the counters this mutation's shard keeps of it (totals:
   * bucketTotals). */
  bucket(name: string): BucketRecord | undefined {
    if (!this.buckets.has(name)) {
      const stored = this.get(bucketKey(name))
      const record = stored === undefined ? null : decodeBucket(stored)
      const shard = this.owner?.shard ?? 0
      if (record !== null && shard > 0) {
        const kept = this.get(bucketCountersKey(name, shard))
        Object.assign(
          record,
          kept === undefined ? { objects: 0, bytes: 0 } : decodeBucketCounters(kept),
        )
      }
      this.buckets.set(name, record)
    }
    return this.buckets.get(name) ?? undefined
  }

  private shard(): number {
    assert(this.owner !== undefined, 'a mutation that writes counters names its shard')
    return this.owner.shard
  }

  createBucket(name: string, createdMs: number, owner: string | undefined, pool?: string): void {
    assert.equal(this.shard(), 0, 'buckets are made by store shard 0')
    assert(this.bucket(name) === undefined)
    const ownedBy = owner === undefined ? {} : { owner }
    const inPool = pool === undefined ? {} : { pool }
    this.buckets.set(name, { createdMs, ...ownedBy, ...inPool, objects: 0, bytes: 0 })
    this.counters().buckets++
    this.catalogKeys.add(bucketKey(name))
  }

  deleteBucket(name: string): void {
    assert.equal(this.shard(), 0, 'buckets are deleted by store shard 0')
    const record = this.bucket(name)
    assert(record !== undefined)
    assert.equal(bucketTotals(this.kv, name, record).objects, 0)
    for (const [key] of this.kv.scan(bucketCountersRange(name))) this.del(key)
    this.buckets.set(name, null)
    this.counters().buckets--
    this.catalogKeys.add(bucketKey(name))
    // Every setting goes with its bucket, so a new bucket of the same name starts without any.
    for (const setting of BUCKET_SETTING_NAMES) {
      this.del(bucketSettingKey(name, setting))
      this.catalogKeys.add(bucketSettingKey(name, setting))
    }
  }

  object(bucket: string, key: string): ObjectRecord | undefined {
    const stored = this.get(objectKey(bucket, key))
    return stored === undefined ? undefined : decodeObject(stored)
  }

  blob(sha256: string): BlobRecord | undefined {
    const stored = this.get(blobKey(sha256))
    return stored === undefined ? undefined : decodeBlob(stored)
  }

  /** Adds a reference to blob `sha256`, creating it from `created` if it does not exist. Returns
   * whether it created the blob (if not, the caller's copy of the bytes is surplus). */
  addReference(sha256: string, created?: NewBlob): boolean {
    const counters = this.counters()
    counters.refs++
    const existing = this.blob(sha256)
    if (existing !== undefined) {
      assert(existing.refs > 0)
      this.put(blobKey(sha256), encodeRecord({ ...existing, refs: existing.refs + 1 }))
      return false
    }
    assert(created !== undefined, 'reference to a blob that does not exist')
    counters.blobs++
    const record: BlobRecord = { size: created.size, crc32: created.crc32, refs: 1 }
    if ('file' in created) {
      record.file = created.file
      this.put(fileKey(created.file), new TextEncoder().encode(sha256))
    } else {
      assert.equal(created.inline.byteLength, created.size)
      this.put(inlineKey(sha256), created.inline)
    }
    this.put(blobKey(sha256), encodeRecord(record))
    return true
  }

  /** Adds a reference to a blob a copy's source names. The source may be another store shard's
   * key, changed since it was read: a blob gone meanwhile sends the request round again
   * (ShardContention, at once), and the next round reads the source anew. */
  referenceCopied(sha256: string): void {
    if (this.blob(sha256) === undefined) throw new ShardContention(blobKey(sha256), NOT_A_VERSION)
    this.addReference(sha256)
  }

  dropReference(sha256: string): void {
    const existing = this.blob(sha256)
    if (existing === undefined) {
      throw new ServiceError('corrupt', `object names blob ${sha256}, which has no record`)
    }
    const counters = this.counters()
    counters.refs--
    if (existing.refs > 1) {
      this.put(blobKey(sha256), encodeRecord({ ...existing, refs: existing.refs - 1 }))
      return
    }
    counters.blobs--
    this.del(blobKey(sha256))
    if (existing.file === undefined) {
      this.del(inlineKey(sha256))
    } else {
      this.del(fileKey(existing.file))
      this.put(garbageKey(existing.file), new Uint8Array(0))
      this.garbage.push(existing.file)
    }
  }

  /** Replaces the bytes of blob `sha256` with a verified copy, whose corrupt mark goes with the
   * old bytes: new inline bytes, or a new file (the old file becomes garbage, removed once the
   * batch is durable, as a deleted blob's is). Nothing changes, and it answers false, when the
   * blob is gone or its copy is no longer `expectedFile` (replaced or made again meanwhile). */
  replaceBlob(
    sha256: string,
    expectedFile: string | undefined,
    copy: { file: string } | { inline: Uint8Array },
  ): boolean {
    const existing = this.blob(sha256)
    if (existing === undefined || existing.file !== expectedFile) return false
    const { corrupt: _corrupt, file: oldFile, ...kept } = existing
    if ('inline' in copy) {
      assert(oldFile === undefined && copy.inline.byteLength === existing.size)
      this.put(inlineKey(sha256), copy.inline)
      this.put(blobKey(sha256), encodeRecord(kept))
      return true
    }
    assert(oldFile !== undefined && oldFile !== copy.file)
    this.put(fileKey(copy.file), new TextEncoder().encode(sha256))
    this.del(fileKey(oldFile))
    this.put(garbageKey(oldFile), new Uint8Array(0))
    this.garbage.push(oldFile)
    this.put(blobKey(sha256), encodeRecord({ ...kept, file: copy.file }))
    return true
  }

  /** Sets or clears the scrubber's corrupt mark of blob `sha256`; false when there is no such
   * blob (gone meanwhile). */
  markBlob(sha256: string, corrupt: boolean): boolean {
    const existing = this.blob(sha256)
    if (existing === undefined) return false
    const { corrupt: _corrupt, ...kept } = existing
    this.put(blobKey(sha256), encodeRecord(corrupt ? { ...kept, corrupt: true } : kept))
    return true
  }

  /** Writes an object record; the caller has already added the references to its blobs (adding
   * before dropping keeps a blob alive when an object is overwritten with itself). */
  putObject(bucket: string, key: string, record: ObjectRecord): void {
    const bucketRecord = this.bucket(bucket)
    assert(bucketRecord !== undefined)
    const counters = this.counters()
    const previous = this.object(bucket, key)
    if (previous !== undefined) {
      for (const blob of blobsOf(previous)) this.dropReference(blob.sha256)
      bucketRecord.bytes -= previous.size
      counters.bytes -= previous.size
    } else {
      bucketRecord.objects++
      counters.objects++
    }
    bucketRecord.bytes += record.size
    counters.bytes += record.size
    this.put(objectKey(bucket, key), encodeRecord(record))
  }

  /** Removes an object record; false if there was none. */
  deleteObject(bucket: string, key: string): boolean {
    const previous = this.object(bucket, key)
    if (previous === undefined) return false
    const bucketRecord = this.bucket(bucket)
    assert(bucketRecord !== undefined)
    for (const blob of blobsOf(previous)) this.dropReference(blob.sha256)
    bucketRecord.objects--
    bucketRecord.bytes -= previous.size
    const counters = this.counters()
    counters.objects--
    counters.bytes -= previous.size
    this.del(objectKey(bucket, key))
    return true
  }

  version(bucket: string, key: string, token: string): ObjectRecord | undefined {
    const stored = this.get(versionKey(bucket, key, token))
    return stored === undefined ? undefined : decodeObject(stored)
  }

  /** Moves the current object to the versions, keeping its references and bytes: it stops being
   * current (one object less), and a `null` version is indexed under N\0. */
  archiveCurrent(bucket: string, key: string, token: string): void {
    const current = this.object(bucket, key)
    assert(current !== undefined)
    const bucketRecord = this.bucket(bucket)
    assert(bucketRecord !== undefined)
    bucketRecord.objects--
    this.counters().objects--
    this.del(objectKey(bucket, key))
    this.put(versionKey(bucket, key, token), encodeRecord({ ...current, versionToken: token }))
    if ((current.versionId ?? 'null') === 'null') {
      this.put(nullVersionKey(bucket, key), new TextEncoder().encode(token))
    }
  }

  /** Writes the current object when there is none (the caller archived or removed it), its
   * references already added. */
  setCurrent(bucket: string, key: string, record: ObjectRecord): void {
    assert(this.object(bucket, key) === undefined)
    assert(record.deleteMarker !== true)
    const bucketRecord = this.bucket(bucket)
    assert(bucketRecord !== undefined)
    bucketRecord.objects++
    this.counters().objects++
    this.addBytes(bucket, record.size)
    this.put(objectKey(bucket, key), encodeRecord(record))
  }

  /** Adds a version that is not current (a delete marker), its references already added. */
  putVersion(bucket: string, key: string, token: string, record: ObjectRecord): void {
    this.addBytes(bucket, record.size)
    this.put(versionKey(bucket, key, token), encodeRecord({ ...record, versionToken: token }))
    if ((record.versionId ?? 'null') === 'null') {
      this.put(nullVersionKey(bucket, key), new TextEncoder().encode(token))
    }
  }

  /** Removes a version that is not current, with its references and bytes. */
  deleteVersion(bucket: string, key: string, token: string): void {
    const previous = this.version(bucket, key, token)
    assert(previous !== undefined)
    for (const blob of blobsOf(previous)) this.dropReference(blob.sha256)
    this.addBytes(bucket, -previous.size)
    this.del(versionKey(bucket, key, token))
    if ((previous.versionId ?? 'null') === 'null') this.del(nullVersionKey(bucket, key))
  }

  /** Makes a version current again (the newer ones were deleted): it counts as an object. */
  promoteVersion(bucket: string, key: string, token: string): void {
    const version = this.version(bucket, key, token)
    assert(version !== undefined && version.deleteMarker !== true)
    assert(this.object(bucket, key) === undefined)
    const bucketRecord = this.bucket(bucket)
    assert(bucketRecord !== undefined)
    bucketRecord.objects++
    this.counters().objects++
    this.del(versionKey(bucket, key, token))
    if ((version.versionId ?? 'null') === 'null') this.del(nullVersionKey(bucket, key))
    this.put(objectKey(bucket, key), encodeRecord(version))
  }

  part(uploadId: string, partNumber: number): PartRecord | undefined {
    const stored = this.get(partKey(uploadId, partNumber))
    return stored === undefined ? undefined : decodePart(stored)
  }

  /** Writes a part record of an upload in `bucket`; the caller has already added the reference to
   * its blob. A part's bytes count in the bucket's storage until the upload ends. */
  putPart(bucket: string, uploadId: string, partNumber: number, record: PartRecord): void {
    const previous = this.part(uploadId, partNumber)
    if (previous !== undefined) this.deletePart(bucket, uploadId, partNumber)
    this.addBytes(bucket, record.size)
    this.put(partKey(uploadId, partNumber), encodeRecord(record))
  }

  /** Removes a part record and its blob reference (abort, or a part left out of a complete). */
  deletePart(bucket: string, uploadId: string, partNumber: number): void {
    const previous = this.part(uploadId, partNumber)
    assert(previous !== undefined)
    this.dropReference(previous.sha256)
    this.addBytes(bucket, -previous.size)
    this.del(partKey(uploadId, partNumber))
  }

  /** Removes a part record whose blob reference moves to an object (a complete): no reference
   * changes, and its bytes are counted again by the object's record. */
  releasePart(bucket: string, uploadId: string, partNumber: number): PartRecord {
    const previous = this.part(uploadId, partNumber)
    assert(previous !== undefined)
    this.addBytes(bucket, -previous.size)
    this.del(partKey(uploadId, partNumber))
    return previous
  }

  addBytes(bucket: string, bytes: number): void {
    const bucketRecord = this.bucket(bucket)
    assert(bucketRecord !== undefined)
    bucketRecord.bytes += bytes
    this.counters().bytes += bytes
  }

  /** Whether anything was changed (a record written or deleted, a counter moved). */
  hasWrites(): boolean {
    return this.writes.size > 0 || this.counterCache !== null
  }

  /** The batch: every write, plus the bucket records and counters this mutation touched. */
  ops(): KvOp[] {
    const shard = this.buckets.size > 0 || this.counterCache !== null ? this.shard() : 0
    for (const [name, record] of this.buckets) {
      if (shard === 0) {
        this.writes.set(bucketKey(name), record === null ? null : encodeRecord(record))
      } else if (record !== null) {
        const kept = { objects: record.objects, bytes: record.bytes }
        this.writes.set(bucketCountersKey(name, shard), encodeRecord(kept))
      }
    }
    if (this.counterCache !== null) {
      // One shard's counters alone may be negative (a blob it freed that another made); a store
      // of one shard folded every shard's into its own at start (foldShardCounters).
      assert(
        this.owner?.shards !== 1 || Object.values(this.counterCache).every((count) => count >= 0),
        'negative counter',
      )
      this.writes.set(countersKey(shard), encodeRecord(this.counterCache))
    }
    const ops: KvOp[] = []
    for (const [key, value] of this.writes) {
      ops.push(value === null ? { type: 'del', key } : { type: 'put', key, value })
    }
    if (keepsDigests(this.kv)) ops.push(...this.digestOps())
    return ops
  }

  /** Cluster mode: the digests of the keys whose replicated records this batch changes, from
   * those records as the kv holds them before it (digests.ts). */
  private digestOps(): KvOp[] {
    const keys = [...this.writes.keys()].filter(isDigested)
    const unread = keys.filter((key) => !this.fetched.has(key))
    const read = new Map(this.kv.getMany(unread).map((value, index) => [unread[index], value]))
    const changes = keys.map((key) => ({
      key,
      before: this.fetched.has(key) ? this.fetched.get(key) : read.get(key),
      after: this.writes.get(key) ?? undefined,
    }))
    return digestOps(this.kv, changes)
  }
}

/** No stripe's version: a ShardContention that names it is tried again at once. */
const NOT_A_VERSION = -1

/** A record another store shard holds: the request waits for it (retryingClaims) or answers
 * `busy`. */
export class ShardContention extends ServiceError {
  constructor(
    readonly claimName: string,
    /** The stripe's version when the claim failed: a change from it is worth another try. */
    readonly seen: number,
  ) {
    super('busy', 'another store shard is changing a record this request needs')
  }
}

function bucketCountersRange(bucket: string): KvRange {
  const prefix = bucketCountersPrefix(bucket)
  return { gte: prefix, lt: prefix.slice(0, -1) + '\x01', limit: STORE_SHARDS_MAX }
}

/** A bucket's objects and bytes: its record's (shard 0's) and every other shard's. */
export function bucketTotals(
  kv: KvReader,
  bucket: string,
  record: BucketRecord,
): { objects: number; bytes: number } {
  const totals = { objects: record.objects, bytes: record.bytes }
  for (const [, value] of kv.scan(bucketCountersRange(bucket))) {
    const kept = decodeBucketCounters(value)
    totals.objects += kept.objects
    totals.bytes += kept.bytes
  }
  return totals
}

/** The store's counters: the sum of every shard's. */
export function totalCounters(kv: KvReader): Counters {
  const totals = { ...EMPTY_COUNTERS }
  for (const [, value] of kv.scan({
    gte: COUNTERS_KEY,
    lt: COUNTERS_END,
    limit: STORE_SHARDS_MAX,
  })) {
    const counters = decodeCounters(value)
    for (const name of Object.keys(totals) as (keyof Counters)[]) totals[name] += counters[name]
  }
  return totals
}
