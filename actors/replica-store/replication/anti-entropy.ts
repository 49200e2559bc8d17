/** @module The store's answers to anti-entropy (protocol/anti-entropy.ts), asked by its own node or
 * by a peer through Replica.Op (replica-calls.ts checks a peer's fields): the digests digests.ts
 * keeps, a root's leaves, a leaf's keys, and what this replica holds of one key. Each reads a
 * bounded range. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import {
  AE_KEYS_PAGE_MAX,
  type AntiEntropyMsg,
  type KeyDigest,
  type KeyManifest,
  type VersionEntry,
} from '../../../protocol/anti-entropy.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { summaryOf } from '../../../protocol/object-attributes.js'
import { MANIFEST_ENTRIES_MAX } from '../../../protocol/wire/bounds.js'
import { treePlace } from './digests.js'
import {
  keyDeletedPrefix,
  keyDigestKey,
  keyStampKey,
  keyVersionsPrefix,
  leafDigestEnd,
  leafDigestPrefix,
  leafKeysEnd,
  leafKeysPrefix,
  objectKey,
  rootDigestKey,
  successor,
} from '../keys.js'
import { Mutation } from '../mutation.js'
import { decodeObject, decodeText, type ObjectRecord } from '../records.js'

type Msg<K extends AntiEntropyMsg['kind']> = Extract<AntiEntropyMsg, { kind: K }>

const LEAVES = 256

function hex(digest: Uint8Array): string {
  return Buffer.from(digest).toString('hex')
}

export function rootDigests(msg: Msg<'ae.roots'>, ctx: Context): Result<(string | null)[]> {
  const stored = ctx.kv.getMany(msg.partitions.map(rootDigestKey))
  return ok(stored.map((digest) => (digest === undefined ? null : hex(digest))))
}

export function leafDigests(
  msg: Msg<'ae.leaves'>,
  ctx: Context,
): Result<{ leaf: number; digest: string }[]> {
  const prefix = leafDigestPrefix(msg.partition)
  const rows = ctx.kv.scan({ gte: prefix, lt: leafDigestEnd(msg.partition), limit: LEAVES })
  return ok(
    rows.map(([key, digest]) => ({ leaf: parseInt(key.slice(-2), 16), digest: hex(digest) })),
  )
}

export function keyDigests(msg: Msg<'ae.keys'>, ctx: Context): Result<KeyDigest[]> {
  if (!Number.isSafeInteger(msg.limit) || msg.limit < 1 || msg.limit > AE_KEYS_PAGE_MAX) {
    return fail('invalid_request', `ae.keys: a limit of 1 to ${AE_KEYS_PAGE_MAX}`)
  }
  const { partition, leaf, after } = msg
  const prefix = leafKeysPrefix(partition, leaf)
  const from =
    after === null
      ? { gte: prefix }
      : { gt: keyDigestKey(partition, leaf, after.bucket, after.key) }
  const rows = ctx.kv.scan({ ...from, lt: leafKeysEnd(partition, leaf), limit: msg.limit })
  return ok(
    rows.map(([storedKey, digest]) => {
      const rest = storedKey.slice(prefix.length)
      const cut = rest.indexOf('\0')
      return { bucket: rest.slice(0, cut), key: rest.slice(cut + 1), digest: hex(digest) }
    }),
  )
}

/** Every record of a range that starts with `prefix`, at most MANIFEST_ENTRIES_MAX. */
export function recordsUnder(ctx: Context, prefix: string): Result<[string, Uint8Array][]> {
  const end = successor(prefix)
  assert(end !== null)
  const rows = ctx.kv.scan({ gte: prefix, lt: end, limit: MANIFEST_ENTRIES_MAX + 1 })
  if (rows.length > MANIFEST_ENTRIES_MAX) {
    return fail('internal', `more than ${MANIFEST_ENTRIES_MAX} records under one key`)
  }
  return ok(rows.map(([key, value]) => [key.slice(prefix.length), value]))
}

export function keyManifest(msg: Msg<'key.manifest'>, ctx: Context): Result<KeyManifest> {
  const { bucket, key } = msg
  const { partition, leaf } = treePlace(bucket, key)
  const [stamp, current, digest] = ctx.kv.getMany([
    keyStampKey(bucket, key),
    objectKey(bucket, key),
    keyDigestKey(partition, leaf, bucket, key),
  ])
  const versions = recordsUnder(ctx, keyVersionsPrefix(bucket, key))
  if (!versions.ok) return versions
  const deleted = recordsUnder(ctx, keyDeletedPrefix(bucket, key))
  if (!deleted.ok) return deleted
  const versioned = new Mutation(ctx.kv).bucket(bucket)?.versioning !== undefined
  const entries: VersionEntry[] = []
  if (current !== undefined) {
    const record = decodeObject(current)
    entries.push(versionEntry(record, record.versionToken ?? null, versioned, true))
  }
  for (const [token, stored] of versions.value) {
    entries.push(versionEntry(decodeObject(stored), token, true, false))
  }
  return ok({
    stamp: stamp === undefined ? null : decodeText(stamp, 'key stamp'),
    versions: entries,
    deleted: deleted.value.map(([token, stored]) => ({
      token,
      stamp: decodeText(stored, 'deleted version'),
    })),
    digest: digest === undefined ? null : hex(digest),
  })
}

/** `versioned`: the version has an id (its bucket has versioning configured, or it is not
 * current). */
function versionEntry(
  record: ObjectRecord,
  token: string | null,
  versioned: boolean,
  current: boolean,
): VersionEntry {
  const entry: VersionEntry = {
    token,
    etag: record.etag,
    size: record.size,
    marker: record.deleteMarker === true,
    parts: record.parts?.length ?? 0,
    current,
  }
  const attributes = summaryOf(record.attributes)
  if (attributes !== undefined) entry.attributes = attributes
  if (versioned) entry.versionId = record.versionId ?? 'null'
  if (record.stamp !== undefined) entry.stamp = record.stamp
  return entry
}
