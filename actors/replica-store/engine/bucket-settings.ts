/** @module Bucket settings: bucket.setting.put, bucket.setting.get, bucket.setting.delete, for
 * every setting of protocol/bucket-settings.ts (CORS rules, tags). A setting is a record of its own
 * under bucketSettingKey (keys.ts) rather than a field of the bucket record: every object mutation
 * reads and rewrites the bucket record, and a setting may take tens of KiB. Mutation.deleteBucket
 * deletes every setting in the bucket's own batch, so a new bucket of the same name starts without
 * any. Each change is prepared synchronously right before its commit, like every mutation, so a put
 * racing a bucket delete either lands before the delete (and goes with it) or finds no bucket. The
 * ingress validated the value; here it is asserted. A record read back from disk is checked again
 * and is `corrupt` if bad. In a cluster each change is a catalog record (mutation.catalogKeys). */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import {
  settingAbsent,
  settingRules,
  type BucketSettingName,
  type BucketSettingValue,
} from '../../../protocol/bucket-settings.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import type { ObjectMsg } from '../../../protocol/messages.js'
import { bucketSettingKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { decodeText, encodeRecord } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'

type Msg<K extends ObjectMsg['kind']> = Extract<ObjectMsg, { kind: K }>

function noSuchBucket<T>(bucket: string): Result<T> {
  return fail('no_such_bucket', `bucket ${bucket} does not exist`)
}

/** A put of an empty value deletes a setting whose rules say so (S3's empty TagSet). */
export async function putSetting(
  state: StoreState,
  msg: Msg<'bucket.setting.put'>,
  ctx: Context,
): Promise<Result<null>> {
  const rules = settingRules(msg.name)
  assert(rules.validate(msg.value).ok, `bucket.setting.put of an invalid ${msg.name}`)
  if (rules.isEmpty(msg.value)) return deleteSetting(state, msg, ctx)
  const record = encodeRecord(msg.value)
  assert(record.byteLength <= rules.recordBytesMax, `${msg.name} record larger than its bound`)
  const mutation = new Mutation(ctx.kv, state.shard)
  if (mutation.bucket(msg.bucket) === undefined) return noSuchBucket(msg.bucket)
  const storedKey = bucketSettingKey(msg.bucket, msg.name)
  mutation.put(storedKey, record)
  mutation.catalogKeys.add(storedKey)
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

export function getSetting(
  msg: Msg<'bucket.setting.get'>,
  ctx: Context,
): Result<BucketSettingValue> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(msg.bucket) === undefined) return noSuchBucket(msg.bucket)
  const stored = mutation.get(bucketSettingKey(msg.bucket, msg.name))
  if (stored === undefined) return settingAbsent(msg.name)
  return ok(decodeSetting(msg.name, stored))
}

/** Deleting a setting a bucket does not have succeeds, as in S3 (204 either way). */
export async function deleteSetting(
  state: StoreState,
  msg: { bucket: string; name: BucketSettingName },
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv, state.shard)
  if (mutation.bucket(msg.bucket) === undefined) return noSuchBucket(msg.bucket)
  const storedKey = bucketSettingKey(msg.bucket, msg.name)
  if (mutation.get(storedKey) === undefined) return ok(null)
  mutation.del(storedKey)
  mutation.catalogKeys.add(storedKey)
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

function decodeSetting(name: BucketSettingName, bytes: Uint8Array): BucketSettingValue {
  const rules = settingRules(name)
  if (bytes.byteLength > rules.recordBytesMax) {
    throw new ServiceError('corrupt', `${name} record larger than its bound`)
  }
  let value: unknown
  try {
    value = JSON.parse(decodeText(bytes, name))
  } catch (error) {
    if (error instanceof ServiceError) throw error
    throw new ServiceError('corrupt', `${name} record is not JSON`)
  }
  if (!rules.isValue(value)) throw new ServiceError('corrupt', `${name} record: a bad shape`)
  const valid = rules.validate(value)
  if (!valid.ok) throw new ServiceError('corrupt', `${name} record: ${valid.detail}`)
  return value
}
