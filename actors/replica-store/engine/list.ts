/** @module object.list: one page of ListObjects as a range scan of the bucket's object keys, from
 * max(prefix, after) to the end of the prefix. With a delimiter, keys that contain it after the
 * prefix fold into a common prefix, and the scan then seeks past every key that starts with that
 * common prefix in one step: a page costs O(page) reads whatever the bucket holds. Scans fetch a
 * few rows at first and more while they find no common prefix, so folding does not read rows it
 * skips. Nothing returned is <= `after`; `truncated` is set only if another entry exists. With
 * `withContentType` (the admin listing) each summary also carries the object's Content-Type; the
 * S3 listing does not set it, and its summaries stay as they were. With `withStamps` (cluster mode)
 * the page also carries each object's write stamp. */
import assert from 'node:assert/strict'
import type { Context, KvStore } from '../../../protocol/actor.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import { hlcString } from '../../../protocol/hlc.js'
import { compareUtf8 } from '../../../protocol/key-order.js'
import { LIST_KEYS_MAX } from '../../../protocol/limits.js'
import type { ObjectMsg } from '../../../protocol/messages.js'
import type { ListPage, ObjectSummary } from '../../../protocol/objects.js'
import { addObject, objectColumns } from '../../../protocol/object-columns.js'
import { objectEnd, objectPrefix, successor } from '../keys.js'
import { Mutation } from '../mutation.js'
import { decodeObject, type ObjectRecord } from '../records.js'

export type ListMsg = Extract<ObjectMsg, { kind: 'object.list' }>

/** Rows per scan while folding common prefixes; doubles while none turns up. */
const FOLDING_ROWS_MIN = 4

type Cursor = { gte: string } | { gt: string }

export function listObjects(msg: ListMsg, ctx: Context): Result<ListPage> {
  assert(Number.isInteger(msg.maxKeys) && msg.maxKeys >= 0, 'maxKeys must be a count')
  if (new Mutation(ctx.kv).bucket(msg.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
  }
  const page: ListPage = {
    objects: objectColumns([], msg.withContentType === true),
    commonPrefixes: [],
    truncated: false,
    lastReturned: '',
  }
  if (msg.withStamps === true) page.objects.stamps = []
  // S3 caps max-keys at 1000 and answers max-keys=0 with an empty page, IsTruncated false.
  const maxKeys = Math.min(msg.maxKeys, LIST_KEYS_MAX)
  if (maxKeys === 0) return ok(page)
  const base = objectPrefix(msg.bucket)
  const prefixEnd = msg.prefix === '' ? null : successor(msg.prefix)
  const end = prefixEnd === null ? objectEnd(msg.bucket) : base + prefixEnd
  let cursor: Cursor | null =
    compareUtf8(msg.after, msg.prefix) >= 0 ? { gt: base + msg.after } : { gte: base + msg.prefix }
  let rows = msg.delimiter === '' ? maxKeys + 1 : FOLDING_ROWS_MIN
  // Each scan returns an entry, skips a common prefix (only one can be <= after) or grows `rows`.
  for (let scans = 0; cursor !== null; scans++) {
    assert(scans <= 2 * maxKeys + 32, 'list page did not converge')
    const count = page.objects.keys.length + page.commonPrefixes.length
    const limit = Math.min(rows, maxKeys + 1 - count)
    const found = ctx.kv.scanText({ ...cursor, lt: end, limit })
    const step = takeRows(found, msg, base, maxKeys, page)
    if (step.kind === 'full') {
      page.truncated = true
      cursor = null
    } else if (step.kind === 'folded') {
      cursor = step.next
      rows = FOLDING_ROWS_MIN
    } else {
      // Fewer rows than asked for: the range is exhausted.
      cursor = found.length < limit ? null : { gt: lastKey(found) }
      rows *= 2
    }
  }
  return ok(page)
}

/** How a batch of rows ended: the page filled up with rows to spare, a common prefix was folded
 * (go on at `next`, or stop if null), or every row was taken as an object. */
type Step = { kind: 'full' } | { kind: 'folded'; next: Cursor | null } | { kind: 'taken' }

function lastKey(rows: [string, string][]): string {
  const last = rows[rows.length - 1]
  assert(last !== undefined)
  return last[0]
}

/** Adds rows to the page until it is full or a common prefix turns up; says where to go on. */
function takeRows(
  rows: [string, string][],
  msg: ListMsg,
  base: string,
  maxKeys: number,
  page: ListPage,
): Step {
  for (const [storedKey, value] of rows) {
    if (page.objects.keys.length + page.commonPrefixes.length === maxKeys) return { kind: 'full' }
    assert(storedKey.startsWith(base))
    const key = storedKey.slice(base.length)
    const at = msg.delimiter === '' ? -1 : key.indexOf(msg.delimiter, msg.prefix.length)
    if (at >= 0) {
      const common = key.slice(0, at + msg.delimiter.length)
      if (compareUtf8(common, msg.after) > 0) {
        page.commonPrefixes.push(common)
        page.lastReturned = common
      }
      const past = successor(common)
      // No successor: nothing can follow this common prefix, the listing is complete.
      return { kind: 'folded', next: past === null ? null : { gte: base + past } }
    }
    const record = decodeObject(value)
    const { size, etag, lastModifiedMs } = record
    const summary: ObjectSummary = { key, size, etag, lastModifiedMs }
    if (msg.withContentType === true) summary.contentType = contentTypeOf(record)
    addObject(page.objects, summary)
    page.objects.stamps?.push(writeStamp(record))
    page.lastReturned = key
  }
  return { kind: 'taken' }
}

/** The stamp of the write that made an object: its own, or for one written unstamped (before the
 * cluster, or on a single node) its Last-Modified as a stamp older than any stamped one of it. */
export function writeStamp(record: ObjectRecord): string {
  if (typeof record.stamp === 'string') return record.stamp
  return hlcString({ wallMs: Math.max(0, Math.floor(record.lastModifiedMs)), logical: 0, node: 0 })
}

/** The record decoder checks that `http` is an object; its Content-Type is checked here, where it
 * is read, since only the admin listing reads it from a summary. */
export function contentTypeOf(record: ObjectRecord): string {
  const contentType: unknown = record.http.contentType
  if (typeof contentType !== 'string') throw new ServiceError('corrupt', 'object: bad contentType')
  return contentType
}

/** The first `limit` object keys of a bucket, ascending (bucket.delete's emptiness check and its
 * forced batches). */
export function firstKeys(kv: KvStore, bucket: string, limit: number): string[] {
  const base = objectPrefix(bucket)
  const rows = kv.scanText({ gte: base, lt: objectEnd(bucket), limit })
  return rows.map(([storedKey]) => storedKey.slice(base.length))
}
