/** @module Tags: object.tagging.put/get (a bucket's tags are a bucket setting, bucket-settings.ts).
 * An object version's tags are a field of its record (O\0 when current, V\0 otherwise), so each
 * version keeps its own and a change rewrites that one record in place: no blob reference, counter
 * or byte moves, and the version keeps its last-modified time, as in S3. Each change
 * is prepared synchronously right before its commit, like every mutation. The ingress validated
 * the tags (protocol/tagging.ts); here they are asserted. A stamped change of an object's tags
 * raises its key's stamp (stamps.ts) and is kept with the tags (`tagsStamp`): one older than it
 * leaves them, so replicas end with the newest tags whatever order the changes came in. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { ObjectMsg, TaggingResult } from '../../../protocol/messages.js'
import { markerHasNoTags } from '../../../protocol/s3-rules/versioning.js'
import { validateTags, type Tag } from '../../../protocol/tagging.js'
import { objectKey, versionKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { encodeRecord, withTags, type ObjectRecord } from '../records.js'
import { raiseKeyStamp } from '../replication/stamps.js'
import { commitMutation, type StoreState } from '../store-state.js'
import { findVersion } from './versions.js'

type Msg<K extends ObjectMsg['kind']> = Extract<ObjectMsg, { kind: K }>

function noSuchBucket<T>(bucket: string): Result<T> {
  return fail('no_such_bucket', `bucket ${bucket} does not exist`)
}

/** The version a tagging request names and the key its record is stored under. */
interface Located {
  storedKey: string
  record: ObjectRecord
  versioned: boolean
}

function locate(
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string; versionId?: string },
): Result<Located> {
  if (mutation.bucket(at.bucket) === undefined) return noSuchBucket(at.bucket)
  const found = findVersion(ctx, mutation, at, at.versionId)
  if (!found.ok) return found
  if (found.value.kind === 'marker') return markerHasNoTags(at, found.value)
  const { record, versioned } = found.value
  const current = mutation.object(at.bucket, at.key)
  const isCurrent =
    current !== undefined &&
    (at.versionId === undefined || (current.versionId ?? 'null') === at.versionId)
  if (isCurrent) return ok({ storedKey: objectKey(at.bucket, at.key), record, versioned })
  assert(record.versionToken !== undefined, 'a version under V\\0 without its token')
  const storedKey = versionKey(at.bucket, at.key, record.versionToken)
  return ok({ storedKey, record, versioned })
}

function answer(tags: Tag[], located: Located): TaggingResult {
  if (!located.versioned) return { tags }
  return { tags, versionId: located.record.versionId ?? 'null' }
}

export async function putObjectTagging(
  state: StoreState,
  msg: Msg<'object.tagging.put'>,
  ctx: Context,
): Promise<Result<TaggingResult>> {
  assert(validateTags(msg.tags, 'object').ok, 'object.tagging.put with invalid tags')
  const mutation = new Mutation(ctx.kv)
  const located = locate(ctx, mutation, msg)
  if (!located.ok) return located
  const { tags: _previous, tagsStamp, ...untagged } = located.value.record
  // A stamped change older than the tags' own (one sent again, or late) leaves them.
  const newer = msg.stamp === undefined || tagsStamp === undefined || msg.stamp > tagsStamp
  if (newer) {
    const retagged = msg.stamp === undefined ? {} : { tagsStamp: msg.stamp }
    const record = { ...untagged, ...withTags(msg.tags), ...retagged }
    mutation.put(located.value.storedKey, encodeRecord(record))
  }
  if (msg.stamp !== undefined) raiseKeyStamp(mutation, msg, msg.stamp)
  await commitMutation(state, ctx, mutation)
  return ok(answer(msg.tags, located.value))
}

export function getObjectTagging(
  msg: Msg<'object.tagging.get'>,
  ctx: Context,
): Result<TaggingResult> {
  const located = locate(ctx, new Mutation(ctx.kv), msg)
  if (!located.ok) return located
  return ok(answer(located.value.record.tags ?? [], located.value))
}
