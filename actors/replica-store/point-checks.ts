/** @module The point checks of cluster mode, with which a coordinator merging several replicas'
 * listing pages tells a key or version deleted on one replica from one another never received:
 * object.stamps (each key's stamp, stamps.ts), object.versions-deleted (each version's tombstone)
 * and upload.states (uploads.ts). Each reads its records in one kv call; the lists are bounded. */
import type { Context } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { ObjectMsg } from '../../protocol/messages.js'
import { deletedVersionKey, isVersionToken, keyStampKey } from './keys.js'
import { Mutation } from './mutation.js'
import { decodeText } from './records.js'

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
  const stored = ctx.kv.getMany(msg.keys.map((key) => keyStampKey(msg.bucket, key)))
  return ok(stored.map((value) => (value === undefined ? null : decodeText(value, 'key stamp'))))
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
