/** @module Digests of each key's replicated records and the hash tree over them (cluster mode; what
 * they are: protocol/anti-entropy.ts). A key's items are its current object (O\0), its other
 * versions (V\0), its stamp (Q\0) and its versions deleted by id (W\0), each hashed from the fields
 * every replica writes alike, whatever path the write took (a client's request, a replay by
 * repair):
 *   an object or version   v\0<token>\0<stamp or ''>\0<etag>\0<delete marker 0/1><attributes>
 *                          (as each attribute's rule names it and its change after the
 *                          write, protocol/object-attributes.ts: \0<tags count>[\0<their stamp>])
 *                          [\0id\0<version id>, when it is not the `null` version]
 *   a key stamp            q\0<stamp>
 *   a version deleted      w\0<token>\0<stamp of the delete>
 * A current object is named by the token archiving would give it (versions.ts tokenOf), so that
 * moving it to V\0 leaves its key's digest as it was. Every Mutation of a kv that keeps digests
 * (`startDigests`, at the store's init in cluster mode) adds to its batch the new digests of the
 * keys it changes, of their leaves and of their partitions' roots (`digestOps`): each is the XOR
 * of hashes, so a change moves them in place, reading only the records it writes and the digests
 * above them. Single mode keeps none and pays nothing. A kv that holds cluster-mode records but
 * no complete digests (a node upgraded from a version without them, or run in single mode since)
 * gets them rebuilt from its records at init, before the first request. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { Context, KvOp, KvReader, KvStore } from '../../../protocol/actor.js'
import { ServiceError } from '../../../protocol/errors.js'
import { attributesDigest } from '../../../protocol/object-attributes.js'
import {
  DIGESTS_KEPT_KEY,
  keyDigestKey,
  leafDigestKey,
  rootDigestKey,
  splitVersionKey,
} from '../keys.js'
import { decodeObject, decodeText, type ObjectRecord } from '../records.js'
import { tokenOf } from '../engine/versions.js'
import { isNullVersion } from './record-merge.js'

/** The kv instances whose mutations keep digests: registered by each init in cluster mode (a
 * simulated node's kv is replaced after a crash, and several nodes share one thread). */
const keeping = new WeakSet<KvReader>()

export function keepsDigests(kv: KvReader): boolean {
  return keeping.has(kv)
}

export const DIGEST_BYTES = 32
/** The form of the items below, kept as the mark of complete digests: a store whose digests are
 * of another form rebuilds them at init. Form 2 hashes version ids; the first left its mark
 * empty. */
const DIGEST_FORM = '2'
/** The record kinds that make up a key's digest. */
export const DIGESTED_PREFIXES = ['O\0', 'V\0', 'Q\0', 'W\0'] as const

export function isDigested(storedKey: string): boolean {
  return DIGESTED_PREFIXES.some((prefix) => storedKey.startsWith(prefix))
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}

export function xorInto(target: Uint8Array, source: Uint8Array): void {
  for (let index = 0; index < DIGEST_BYTES; index++) {
    target[index] = (target[index] as number) ^ (source[index] as number)
  }
}

export function isZero(digest: Uint8Array): boolean {
  return digest.every((byte) => byte === 0)
}

/** One item of a key: the key and its hash. */
export interface KeyItem {
  bucket: string
  key: string
  hash: Buffer
}

function objectItem(record: ObjectRecord, token: string): string {
  const marker = record.deleteMarker === true ? 1 : 0
  // Its attributes, and the stamps of their changes after the write, as each one's rule names
  // them (protocol/object-attributes.ts): a record without any hashes as it always did.
  const attributes = attributesDigest(record.attributes, record.attributeStamps)
  // Its version id too: one stamp written as a version and as `null` are two records, which a
  // key sync settles (record-merge.ts). A `null` version (or one before versioning) hashes as
  // it always did, so that archiving it, which names it, leaves the digest as it was.
  const named = isNullVersion(record) ? '' : `\0id\0${record.versionId as string}`
  return `v\0${token}\0${record.stamp ?? ''}\0${record.etag}\0${marker}${attributes}${named}`
}

/** The item a record of O\0, V\0, Q\0 or W\0 is, or null for a record of any other kind. */
export function recordItem(storedKey: string, value: Uint8Array | string): KeyItem | null {
  if (!isDigested(storedKey)) return null
  const rest = storedKey.slice(2)
  const cut = rest.indexOf('\0')
  assert(cut > 0, 'a record key without its bucket')
  const bucket = rest.slice(0, cut)
  const tail = rest.slice(cut + 1)
  const text = (): string =>
    typeof value === 'string' ? value : decodeText(value, 'key stamp or deleted version')
  switch (storedKey[0]) {
    case 'O': {
      const record = decodeObject(value)
      return { bucket, key: tail, hash: sha256(objectItem(record, tokenOf(record))) }
    }
    case 'V': {
      const { key, token } = splitVersionKey(tail)
      return { bucket, key, hash: sha256(objectItem(decodeObject(value), token)) }
    }
    case 'Q':
      return { bucket, key: tail, hash: sha256(`q\0${text()}`) }
    default: {
      const { key, token } = splitVersionKey(tail)
      return { bucket, key, hash: sha256(`w\0${token}\0${text()}`) }
    }
  }
}

/** Where a key's digest sits: its partition (placement.ts partitionOf) and its leaf, the first
 * two bytes of the same hash. */
export function treePlace(bucket: string, key: string): { partition: number; leaf: number } {
  const hash = sha256(`${bucket}\0${key}`)
  return { partition: hash[0] as number, leaf: hash[1] as number }
}

/** What a key with this digest adds to its leaf's and its root's digests. */
export function treeItem(bucket: string, key: string, digest: Uint8Array): Buffer {
  return sha256(`${bucket}\0${key}\0${Buffer.from(digest).toString('hex')}`)
}

/** A stored digest, checked: bytes from disk. */
function storedDigest(stored: Uint8Array | undefined, key: string): Uint8Array | undefined {
  if (stored === undefined || stored.byteLength === DIGEST_BYTES) return stored
  throw new ServiceError('corrupt', `digest record ${key.replaceAll('\0', '\\0')}: not 32 bytes`)
}

/** A record's value before and after a batch (undefined: absent). */
export interface RecordChange {
  key: string
  before: Uint8Array | undefined
  after: Uint8Array | undefined
}

/** The ops that move the digests of the keys `changes` touch, of their leaves and of their roots,
 * as the kv holds them now (before the batch `changes` belong to). A digest that becomes all
 * zeros is deleted. */
export function digestOps(kv: KvReader, changes: readonly RecordChange[]): KvOp[] {
  const keys = new Map<string, KeyItem>()
  for (const change of changes) {
    for (const value of [change.before, change.after]) {
      const item = value === undefined ? null : recordItem(change.key, value)
      if (item === null) continue
      const id = `${item.bucket}\0${item.key}`
      const moved = keys.get(id) ?? { ...item, hash: Buffer.alloc(DIGEST_BYTES) }
      xorInto(moved.hash, item.hash)
      keys.set(id, moved)
    }
  }
  const moved = [...keys.values()]
    .filter((item) => !isZero(item.hash))
    .map((item) => ({ ...item, ...treePlace(item.bucket, item.key) }))
  if (moved.length === 0) return []
  const ops: KvOp[] = []
  const treeMoves = new Map<string, Buffer>()
  const digestKeys = moved.map((m) => keyDigestKey(m.partition, m.leaf, m.bucket, m.key))
  const held = kv.getMany(digestKeys)
  moved.forEach((m, index) => {
    const storedKey = digestKeys[index] as string
    const before = storedDigest(held[index], storedKey)
    const after = new Uint8Array(DIGEST_BYTES)
    const treeMove = Buffer.alloc(DIGEST_BYTES)
    if (before !== undefined) {
      after.set(before)
      xorInto(treeMove, treeItem(m.bucket, m.key, before))
    }
    xorInto(after, m.hash)
    ops.push(putOrDelete(storedKey, after))
    if (!isZero(after)) xorInto(treeMove, treeItem(m.bucket, m.key, after))
    for (const treeKey of [leafDigestKey(m.partition, m.leaf), rootDigestKey(m.partition)]) {
      const sum = treeMoves.get(treeKey) ?? Buffer.alloc(DIGEST_BYTES)
      xorInto(sum, treeMove)
      treeMoves.set(treeKey, sum)
    }
  })
  const treeKeys = [...treeMoves.keys()]
  kv.getMany(treeKeys).forEach((stored, index) => {
    const treeKey = treeKeys[index] as string
    const after = new Uint8Array(DIGEST_BYTES)
    after.set(storedDigest(stored, treeKey) ?? after)
    xorInto(after, treeMoves.get(treeKey) as Buffer)
    ops.push(putOrDelete(treeKey, after))
  })
  return ops
}

function putOrDelete(key: string, digest: Uint8Array): KvOp {
  return isZero(digest) ? { type: 'del', key } : { type: 'put', key, value: digest }
}

/** Rows read, and digests moved, per batch of a rebuild. */
const REBUILD_ROWS = 256
/** Batches one range may take in a rebuild: four billion rows, beyond any store. */
const REBUILD_BATCHES_MAX = 2 ** 24

/** Run by the store's init: in cluster mode, its kv keeps digests from now on, rebuilt first if
 * they are not complete; in single mode, none are kept, and the mark of complete ones goes (a
 * later start in cluster mode rebuilds them). Answers how many records a rebuild read, or null. */
export async function startDigests(ctx: Context): Promise<number | null> {
  const kv = ctx.kv
  const mark = kv.get(DIGESTS_KEPT_KEY)
  if (ctx.config['SVC_MODE'] !== 'cluster') {
    if (mark !== undefined) await kv.commit([{ type: 'del', key: DIGESTS_KEPT_KEY }])
    return null
  }
  keeping.add(kv)
  if (mark !== undefined && Buffer.from(mark).toString('utf8') === DIGEST_FORM) return null
  for (const kind of ['E', 'Z']) await clearRange(kv, `${kind}\0`, `${kind}\x01`)
  let records = 0
  for (const prefix of DIGESTED_PREFIXES) records += await digestRange(kv, prefix)
  await kv.commit([{ type: 'put', key: DIGESTS_KEPT_KEY, value: Buffer.from(DIGEST_FORM) }])
  return records
}

/** Deletes every record of a range, a batch at a time. */
async function clearRange(kv: KvStore, from: string, to: string): Promise<void> {
  for (let batches = 0; ; batches++) {
    assert(batches < REBUILD_BATCHES_MAX, 'a digest range too large to clear')
    const rows = kv.scan({ gte: from, lt: to, limit: REBUILD_ROWS })
    if (rows.length === 0) return
    await kv.commit(rows.map(([key]) => ({ type: 'del', key })))
  }
}

/** Adds every record of one digested kind to the digests, a batch at a time. */
async function digestRange(kv: KvStore, prefix: string): Promise<number> {
  const end = `${prefix[0]}\x01`
  let from: { gte: string } | { gt: string } = { gte: prefix }
  let records = 0
  for (let batches = 0; ; batches++) {
    assert(batches < REBUILD_BATCHES_MAX, 'a record range too large to digest')
    const rows = kv.scan({ ...from, lt: end, limit: REBUILD_ROWS })
    const changes = rows.map(([key, value]) => ({ key, before: undefined, after: value }))
    if (changes.length > 0) await kv.commit(digestOps(kv, changes))
    records += rows.length
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < REBUILD_ROWS) return records
    from = { gt: last[0] }
  }
}
