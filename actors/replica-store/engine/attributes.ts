/** @module object.attributes.put/get: the attributes of one object version
 * (protocol/object-attributes.ts) are fields of its record (O\0 when current, V\0 otherwise), so
 * each version keeps its own and a change rewrites that one record in place: no blob reference,
 * counter or byte moves, and the version keeps its last-modified time, as in S3. The change is
 * prepared synchronously right before its commit, like every mutation. The ingress validated the
 * attributes; here they are asserted. A stamped change is kept per attribute (`attributeStamps`):
 * a change older than an attribute's own stamp leaves that attribute, so replicas end with the
 * newest of each whatever order the changes came in. It leaves the key's stamp, which orders
 * versions and deletions (stamps.ts): a change of an older version's tags stamped above a
 * concurrent write (clocks differ) must not make that write stale. A coordinator names the
 * version by its write's stamp (`versionStamp`); a replica where that is not the version asked
 * for missed a write, and leaves its own. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { AttributesResult, ObjectMsg } from '../../../protocol/messages.js'
import {
  ATTRIBUTE_NAMES,
  validateAttributes,
  withAttributes,
  type AttributeStamps,
  type ObjectAttributes,
} from '../../../protocol/object-attributes.js'
import { markerHasNoAttributes } from '../../../protocol/s3-rules/versioning.js'
import { objectKey, versionKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { encodeRecord, type ObjectRecord } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'
import { findVersion } from './versions.js'

type Msg<K extends ObjectMsg['kind']> = Extract<ObjectMsg, { kind: K }>

/** The version a request names and the key its record is stored under. */
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
  if (mutation.bucket(at.bucket) === undefined) {
    return fail('no_such_bucket', `bucket ${at.bucket} does not exist`)
  }
  const found = findVersion(ctx, mutation, at, at.versionId)
  if (!found.ok) return found
  if (found.value.kind === 'marker') return markerHasNoAttributes(at, found.value)
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

function answer(record: ObjectRecord, located: Located): AttributesResult {
  const attributes = record.attributes ?? {}
  if (!located.versioned) return { attributes }
  return { attributes, versionId: located.record.versionId ?? 'null' }
}

/** The record with each attribute `msg` names set, unless a stamped change of it is older than the
 * one it holds (one sent again, or late); null when nothing changes. */
function changed(
  record: ObjectRecord,
  attributes: ObjectAttributes,
  stamp: string | undefined,
): ObjectRecord | null {
  const values: Record<string, unknown> = { ...record.attributes }
  const stamps: AttributeStamps = { ...record.attributeStamps }
  let changes = 0
  for (const name of ATTRIBUTE_NAMES) {
    const value = attributes[name]
    if (value === undefined) continue
    const held = stamps[name]
    if (stamp !== undefined && held !== undefined && stamp <= held) continue
    values[name] = value
    if (stamp !== undefined) stamps[name] = stamp
    changes++
  }
  if (changes === 0) return null
  const { attributes: _values, attributeStamps: _stamps, ...rest } = record
  const kept = withAttributes(values as ObjectAttributes)
  return {
    ...rest,
    ...kept,
    ...(Object.keys(stamps).length === 0 ? {} : { attributeStamps: stamps }),
  }
}

export async function putObjectAttributes(
  state: StoreState,
  msg: Msg<'object.attributes.put'>,
  ctx: Context,
): Promise<Result<AttributesResult>> {
  assert(validateAttributes(msg.attributes).ok, 'object.attributes.put with invalid attributes')
  const mutation = new Mutation(ctx.kv, state.shard)
  const located = locate(ctx, mutation, msg)
  if (!located.ok) return located
  if (msg.versionStamp !== undefined && located.value.record.stamp !== msg.versionStamp) {
    // It missed the write a read quorum found: the coordinator hints it the change.
    return fail('unavailable', 'this replica does not hold the version the change is of')
  }
  const record = changed(located.value.record, msg.attributes, msg.stamp)
  if (record !== null) mutation.put(located.value.storedKey, encodeRecord(record))
  await commitMutation(state, ctx, mutation)
  return ok(answer(record ?? located.value.record, located.value))
}

export function getObjectAttributes(
  msg: Msg<'object.attributes.get'>,
  ctx: Context,
): Result<AttributesResult> {
  const located = locate(ctx, new Mutation(ctx.kv), msg)
  if (!located.ok) return located
  return ok(answer(located.value.record, located.value))
}
