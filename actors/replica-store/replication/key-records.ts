/** @module records.get: a key's stamped records as this replica keeps them (KeyRecords of
 * protocol/anti-entropy.ts), the unit replicas exchange; and their reading back from another
 * replica, checked field by field since they come from another process. Every version is its
 * stored record: an object with its stamp, its attributes and their stamps, a multipart object's
 * parts, a delete marker. */
import type { Context } from '../../../protocol/actor.js'
import type { KeyRecords } from '../../../protocol/anti-entropy.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import {
  isStamp,
  isVersionToken,
  keyDeletedPrefix,
  keyStampKey,
  keyVersionsPrefix,
  objectKey,
} from '../keys.js'
import { recordsUnder } from './anti-entropy.js'
import { decodeObject, decodeText, type ObjectRecord } from '../records.js'
import { tokenOf } from '../engine/versions.js'

/** A key's records by token: what a merge compares and writes. */
export interface HeldRecords {
  stamp: string | null
  /** Every version, the current object among them (`current` names its token, if any). */
  versions: Map<string, ObjectRecord>
  current: string | null
  deleted: Map<string, string>
}

/** The key's records as the kv holds them now (read with no await: one consistent view). */
export function heldRecords(ctx: Context, bucket: string, key: string): Result<HeldRecords> {
  const [stamp, current] = ctx.kv.getMany([keyStampKey(bucket, key), objectKey(bucket, key)])
  const versions = recordsUnder(ctx, keyVersionsPrefix(bucket, key))
  if (!versions.ok) return versions
  const deleted = recordsUnder(ctx, keyDeletedPrefix(bucket, key))
  if (!deleted.ok) return deleted
  const held: HeldRecords = {
    stamp: stamp === undefined ? null : decodeText(stamp, 'key stamp'),
    versions: new Map(),
    current: null,
    deleted: new Map(
      deleted.value.map(([token, stored]) => [token, decodeText(stored, 'deleted version')]),
    ),
  }
  for (const [token, stored] of versions.value) held.versions.set(token, decodeObject(stored))
  if (current !== undefined) {
    const record = decodeObject(current)
    held.current = tokenOf(record)
    held.versions.set(held.current, record)
  }
  return ok(held)
}

export function keyRecords(msg: { bucket: string; key: string }, ctx: Context): Result<KeyRecords> {
  const held = heldRecords(ctx, msg.bucket, msg.key)
  if (!held.ok) return held
  return ok(toKeyRecords(held.value))
}

export function toKeyRecords(held: HeldRecords): KeyRecords {
  return {
    stamp: held.stamp,
    versions: [...held.versions].map(([token, record]) => ({
      token,
      record: record as unknown as Record<string, unknown>,
    })),
    deleted: [...held.deleted].map(([token, stamp]) => ({ token, stamp })),
  }
}

function isOptionalStamp(value: unknown): boolean {
  return value === undefined || (typeof value === 'string' && isStamp(value))
}

/** Another replica's records, checked: a record as decoding one from disk checks it, every token
 * and stamp well formed. */
export function receivedRecords(records: KeyRecords): Result<HeldRecords> {
  const { stamp, versions, deleted } = records
  if (stamp !== null && !isOptionalStamp(stamp)) return fail('invalid_request', 'a bad key stamp')
  const held: HeldRecords = { stamp, versions: new Map(), current: null, deleted: new Map() }
  for (const { token, record } of versions) {
    let decoded: ObjectRecord
    try {
      decoded = decodeObject(JSON.stringify(record))
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error
      return fail('invalid_request', error.message)
    }
    if (!isVersionToken(token) || held.versions.has(token)) {
      return fail('invalid_request', 'a bad or repeated version token')
    }
    const stamps = [decoded.stamp, ...Object.values(decoded.attributeStamps ?? {})]
    if (!stamps.every(isOptionalStamp)) {
      return fail('invalid_request', `version ${token}: a bad stamp`)
    }
    held.versions.set(token, decoded)
  }
  for (const one of deleted) {
    if (!isVersionToken(one.token) || !isStamp(one.stamp) || held.deleted.has(one.token)) {
      return fail('invalid_request', 'a bad deleted version')
    }
    held.deleted.set(one.token, one.stamp)
  }
  return ok(held)
}
