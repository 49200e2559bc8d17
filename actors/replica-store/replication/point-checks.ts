/** @module The point checks of cluster mode, with which a coordinator merging several replicas'
 * listing pages tells a key or version deleted on one replica from one another never received:
 * object.heads (each key's newest change and current object), object.versions-deleted (each
 * version's tombstone)
 * and upload.states (uploads.ts). Each reads its records in one kv call; the lists are bounded. */
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { KeyHead, ObjectMsg } from '../../../protocol/messages.js'
import { deletedVersionKey, isVersionToken, keyStampKey, objectKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { contentTypeOf, writeStamp } from '../engine/list.js'
import { decodeObject, decodeText } from '../records.js'

type Msg<K extends ObjectMsg['kind']> = Extract<ObjectMsg, { kind: K }>

/** Keys, versions or uploads one point check names at most (a listing page's worth). */
export const POINT_CHECK_ITEMS_MAX = 1000

/** A list a point check may take: at most POINT_CHECK_ITEMS_MAX items. */
export function checkPointList(items: readonly unknown[], what: string): Result<null> {
  if (items.length > POINT_CHECK_ITEMS_MAX) {
    return fail('invalid_request', `more than ${POINT_CHECK_ITEMS_MAX} ${what} in one check`)
  }
  return ok(null)
}

function bucketExists(ctx: Context, bucket: string): Result<null> {
  if (new Mutation(ctx.kv).bucket(bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${bucket} does not exist`)
  }
  return ok(null)
}

export function objectStamps(msg: Msg<'object.stamps'>, ctx: Context): Result<(string | null)[]> {
  const listed = checkPointList(msg.keys, 'keys')
  if (!listed.ok) return listed
  const exists = bucketExists(ctx, msg.bucket)
  if (!exists.ok) return exists
  if (msg.keys.some((key) => key.length === 0)) return fail('invalid_request', 'an empty key')
  return ok(keyStamps(ctx, msg.bucket, msg.keys))
}

function keyStamps(ctx: Context, bucket: string, keys: readonly string[]): (string | null)[] {
  const stored = ctx.kv.getMany(keys.map((key) => keyStampKey(bucket, key)))
  return stored.map((value) => (value === undefined ? null : decodeText(value, 'key stamp')))
}

/** Each key's newest change here and its current object: a listing that met the key elsewhere
 * learns whether this replica deleted it, or holds a newer write than the one listed. */
export function objectHeads(msg: Msg<'object.heads'>, ctx: Context): Result<KeyHead[]> {
  const listed = checkPointList(msg.keys, 'keys')
  if (!listed.ok) return listed
  const exists = bucketExists(ctx, msg.bucket)
  if (!exists.ok) return exists
  if (msg.keys.some((key) => key.length === 0)) return fail('invalid_request', 'an empty key')
  const stamps = keyStamps(ctx, msg.bucket, msg.keys)
  const records = ctx.kv.getMany(msg.keys.map((key) => objectKey(msg.bucket, key)))
  return ok(
    msg.keys.map((key, index) => {
      const stored = records[index]
      const stamp = stamps[index] ?? null
      if (stored === undefined) return { stamp, object: null }
      const record = decodeObject(stored)
      const { size, etag, lastModifiedMs } = record
      const summary = { key, size, etag, lastModifiedMs, contentType: contentTypeOf(record) }
      return { stamp, object: { ...summary, stamp: writeStamp(record) } }
    }),
  )
}

/** A version named `null`, or by anything that is not a token, was never deleted by id here. */
export function versionsDeleted(
  msg: Msg<'object.versions-deleted'>,
  ctx: Context,
): Result<boolean[]> {
  const listed = checkPointList(msg.versions, 'versions')
  if (!listed.ok) return listed
  const exists = bucketExists(ctx, msg.bucket)
  if (!exists.ok) return exists
  if (msg.versions.some(({ key }) => key.length === 0)) {
    return fail('invalid_request', 'an empty key')
  }
  const named = msg.versions.filter(({ versionId }) => isVersionToken(versionId))
  const stored = ctx.kv.getMany(
    named.map(({ key, versionId }) => deletedVersionKey(msg.bucket, key, versionId)),
  )
  const deleted = new Set(named.filter((_, index) => stored[index] !== undefined))
  return ok(msg.versions.map((version) => deleted.has(version)))
}
