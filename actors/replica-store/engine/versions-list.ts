/** @module object.list-versions: one page of ListObjectVersions. Keys come in S3 order, each with
 * its versions newest first: the current object (O\0) if there is one, then its other versions
 * and delete markers (V\0, whose tokens sort newest first). The newest of them is the latest. A
 * page resumes after (key-marker, version-id-marker); with a delimiter, keys fold into common
 * prefixes and the scan seeks past each. Reads are range scans, bounded by the page size. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { LIST_KEYS_MAX } from '../../../protocol/limits.js'
import type { ObjectMsg, VersionEntry, VersionListing } from '../../../protocol/messages.js'
import {
  isVersionToken,
  keyVersionsPrefix,
  nullVersionKey,
  objectEnd,
  splitVersionKey,
  objectPrefix,
  successor,
  versionEnd,
  versionKey,
  versionPrefix,
} from '../keys.js'
import { compareUtf8 } from '../../../protocol/key-order.js'
import { Mutation } from '../mutation.js'
import { decodeObject, decodeText, type ObjectRecord } from '../records.js'

type ListVersionsMsg = Extract<ObjectMsg, { kind: 'object.list-versions' }>
type Cursor = { gte: string } | { gt: string }

export function listVersions(msg: ListVersionsMsg, ctx: Context): Result<VersionListing> {
  assert(Number.isInteger(msg.maxKeys) && msg.maxKeys >= 0)
  const view = new Mutation(ctx.kv)
  if (view.bucket(msg.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
  }
  const listing: VersionListing = {
    versions: [],
    commonPrefixes: [],
    truncated: false,
    nextKeyMarker: null,
    nextVersionIdMarker: null,
  }
  const maxKeys = Math.min(msg.maxKeys, LIST_KEYS_MAX)
  if (maxKeys === 0) return ok(listing)
  const pager = new Pager(listing, maxKeys)
  const resume = msg.keyMarker !== '' && compareUtf8(msg.keyMarker, msg.prefix) >= 0
  let cursor: Cursor = resume ? { gt: msg.keyMarker } : { gte: msg.prefix }
  if (resume && msg.versionIdMarker !== '') {
    // The rest of the marker's own versions first, then the keys after it.
    for (const entry of versionsOf(
      ctx,
      view,
      msg.bucket,
      msg.keyMarker,
      msg.versionIdMarker,
      pager.wanted(),
    )) {
      if (!pager.add(entry)) return ok(listing)
    }
  }
  const prefixEnd = msg.prefix === '' ? null : successor(msg.prefix)
  for (let keys = 0; ; keys++) {
    assert(keys <= 4 * maxKeys + 8, 'version listing did not converge')
    const key = nextKey(ctx, msg.bucket, cursor, prefixEnd)
    if (key === null) return ok(listing)
    const fold = msg.delimiter === '' ? -1 : key.indexOf(msg.delimiter, msg.prefix.length)
    if (fold >= 0) {
      const common = key.slice(0, fold + msg.delimiter.length)
      if (!resume || compareUtf8(common, msg.keyMarker) > 0) {
        if (!pager.addPrefix(common)) return ok(listing)
      }
      const past = successor(common)
      if (past === null) return ok(listing)
      cursor = { gte: past }
      continue
    }
    for (const entry of versionsOf(ctx, view, msg.bucket, key, '', pager.wanted())) {
      if (!pager.add(entry)) return ok(listing)
    }
    cursor = { gt: key }
  }
}

/** Fills a page; `add` returns false once the page is full and one more entry exists. */
class Pager {
  constructor(
    private readonly listing: VersionListing,
    private readonly maxKeys: number,
  ) {}

  /** Entries that would fill the page and tell whether it is truncated. */
  wanted(): number {
    return this.maxKeys - this.listing.versions.length - this.listing.commonPrefixes.length + 1
  }

  private full(): boolean {
    const count = this.listing.versions.length + this.listing.commonPrefixes.length
    if (count < this.maxKeys) return false
    this.listing.truncated = true
    return true
  }

  add(entry: VersionEntry): boolean {
    if (this.full()) return false
    this.listing.versions.push(entry)
    this.listing.nextKeyMarker = entry.key
    this.listing.nextVersionIdMarker = entry.versionId
    return true
  }

  addPrefix(common: string): boolean {
    if (this.full()) return false
    this.listing.commonPrefixes.push(common)
    this.listing.nextKeyMarker = common
    this.listing.nextVersionIdMarker = null
    return true
  }
}

/** The smallest key after `cursor` (within the prefix) that has a current object or a version. */
function nextKey(
  ctx: Context,
  bucket: string,
  cursor: Cursor,
  prefixEnd: string | null,
): string | null {
  const objects = objectPrefix(bucket)
  const versions = versionPrefix(bucket)
  // A version key is `<key>\0<token>`: every version of `key` sorts below `<key>\x01`.
  const objectFrom = 'gte' in cursor ? { gte: objects + cursor.gte } : { gt: objects + cursor.gt }
  const versionFrom =
    'gte' in cursor ? { gte: versions + cursor.gte } : { gte: versions + cursor.gt + '\x01' }
  const objectRow = ctx.kv.scan({
    ...objectFrom,
    lt: prefixEnd === null ? objectEnd(bucket) : objects + prefixEnd,
    limit: 1,
  })[0]
  const versionRow = ctx.kv.scan({
    ...versionFrom,
    lt: prefixEnd === null ? versionEnd(bucket) : versions + prefixEnd,
    limit: 1,
  })[0]
  const candidates: string[] = []
  if (objectRow !== undefined) candidates.push(objectRow[0].slice(objects.length))
  if (versionRow !== undefined) {
    candidates.push(splitVersionKey(versionRow[0].slice(versions.length)).key)
  }
  return candidates.sort(compareUtf8)[0] ?? null
}

/** The versions of one key, newest first, after the version `afterVersionId` if it is set; at
 * most `limit` of them, all the page can take. */
function versionsOf(
  ctx: Context,
  view: Mutation,
  bucket: string,
  key: string,
  afterVersionId: string,
  limit: number,
): VersionEntry[] {
  assert(limit >= 1 && limit <= LIST_KEYS_MAX + 1)
  const entries: VersionEntry[] = []
  const current = view.object(bucket, key)
  const currentId = current === undefined ? null : (current.versionId ?? 'null')
  const prefix = keyVersionsPrefix(bucket, key)
  let from: Cursor = { gte: prefix }
  if (afterVersionId === '') {
    if (current !== undefined) entries.push(entry(key, current, true))
  } else if (afterVersionId !== currentId) {
    const token = afterVersionId === 'null' ? nullToken(view, bucket, key) : afterVersionId
    if (token === undefined || !isVersionToken(token)) return entries
    from = { gt: versionKey(bucket, key, token) }
  }
  const end = successor(prefix)
  if (end === null) return entries
  const rows = ctx.kv.scanText({ ...from, lt: end, limit })
  for (const [index, [, value]] of rows.entries()) {
    const latest = current === undefined && index === 0 && afterVersionId === ''
    entries.push(entry(key, decodeObject(value), latest))
  }
  return entries
}

function nullToken(view: Mutation, bucket: string, key: string): string | undefined {
  const stored = view.get(nullVersionKey(bucket, key))
  return stored === undefined ? undefined : decodeText(stored, 'null version')
}

function entry(key: string, record: ObjectRecord, isLatest: boolean): VersionEntry {
  return {
    key,
    versionId: record.versionId ?? 'null',
    isLatest,
    deleteMarker: record.deleteMarker === true,
    size: record.size,
    etag: record.etag,
    lastModifiedMs: record.lastModifiedMs,
  }
}
