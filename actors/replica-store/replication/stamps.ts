/** @module Stamped changes of object keys (cluster mode; protocol/messages.ts, "Stamps"). Each key
 * keeps under Q\0 the stamp of the newest change this store applied or refused as stale, deletions
 * included, each version deleted by id a tombstone under W\0, and the newest removal of its `null`
 * version (a delete without versioning, a delete by id of `null`) the key's null tombstone. A
 * change newer than Q applies as an unstamped one would, with the stamp's version token and wall
 * clock; one that is not is stale: in a bucket with versioning Enabled it becomes an older version
 * in its place by age (unless it was deleted by id), and elsewhere nothing is written. Equal
 * stamps are one change sent again, answered as applied and written once. Which versioning a
 * change goes by is its coordinator's (StampedChange.versioning), decided once for every replica,
 * and this store's own only when none came. Every function prepares a Mutation with no await. */
import type { Context } from '../../../protocol/actor.js'
import {
  deleteWithoutId,
  keepsOlderChanges,
  newVersionId,
} from '../../../protocol/s3-rules/versioning.js'
import type { Result } from '../../../protocol/errors.js'
import {
  deletedVersionKey,
  isVersionToken,
  keyStampKey,
  keyVersionsPrefix,
  NULL_TOMBSTONE_TOKEN,
  stampToken,
  stampWallMs,
  successor,
} from '../keys.js'
import type { Mutation } from '../mutation.js'
import { decodeText, encodeRecord, type ObjectRecord } from '../records.js'
import type { StoreState } from '../store-state.js'
import {
  deleteById,
  deleteCurrent,
  holdsVersion,
  insertOlder,
  markerRecord,
  versioningFor,
  writeCurrent,
  type DeleteOutcome,
  type StampedChange,
} from '../engine/versions.js'

interface At {
  bucket: string
  key: string
}

/** A stamp the dispatcher validated (keys.ts isStamp), with what derives from it, and the
 * versioning its coordinator decided, when it sent one. */
export function stampedChange(
  stamp: string,
  versioning?: StampedChange['versioning'],
): StampedChange {
  const change: StampedChange = { stamp, token: stampToken(stamp), wallMs: stampWallMs(stamp) }
  if (versioning !== undefined) change.versioning = versioning
  return change
}

const encoder = new TextEncoder()

/** The stamp of the newest change of the key this store holds (Q\0), or null. */
export function keyStampOf(mutation: Mutation, at: At): string | null {
  const stored = mutation.get(keyStampKey(at.bucket, at.key))
  return stored === undefined ? null : decodeText(stored, 'key stamp')
}

/** Q = max(Q, stamp). Stamps are fixed-width lowercase hex: string order is stamp order. */
export function raiseKeyStamp(mutation: Mutation, at: At, stamp: string): void {
  const held = keyStampOf(mutation, at)
  if (held === null || stamp > held) {
    mutation.put(keyStampKey(at.bucket, at.key), encoder.encode(stamp))
  }
}

/** A change compared with the newest this store holds of its key. */
function orderOf(mutation: Mutation, at: At, stamp: string): 'newer' | 'same' | 'older' {
  const held = keyStampOf(mutation, at)
  if (held === null || stamp > held) return 'newer'
  return stamp === held ? 'same' : 'older'
}

export function isVersionDeleted(mutation: Mutation, at: At, versionId: string): boolean {
  if (!isVersionToken(versionId)) return false
  return mutation.get(deletedVersionKey(at.bucket, at.key, versionId)) !== undefined
}

/** A stamped delete by id (deleteById of versions.ts, then its tombstone and the key's stamp),
 * which its coordinator judged against object lock.
 * The `null` version's tombstone is the key's null tombstone (`raiseNullTombstone`). */
export function deleteByIdStamped(
  ctx: Context,
  mutation: Mutation,
  at: At,
  versionId: string,
  stamp: string,
): Result<DeleteOutcome> {
  const removed = deleteById(ctx, mutation, at, versionId, 'judged')
  if (!removed.ok) return removed
  if (versionId === 'null') raiseNullTombstone(mutation, at, stamp)
  else if (isVersionToken(versionId)) {
    mutation.put(deletedVersionKey(at.bucket, at.key, versionId), encoder.encode(stamp))
  }
  raiseKeyStamp(mutation, at, stamp)
  return removed
}

/** A delete its coordinator sent as without versioning, to a key that holds versions with ids:
 * versioning was configured for the bucket where they were written (a change of it still
 * spreading, or a failed one that took effect there), and a bucket never goes back to having none.
 * It deletes as a Suspended bucket does (a `null` delete marker, the older versions kept), so that
 * the key reads as deleted whichever view of the bucket a replica or a later merge holds; removing
 * the current version alone would let an older one, or a replica that missed this delete, give
 * the key back. */
function onceVersioned(
  ctx: Context,
  mutation: Mutation,
  at: At,
  change: StampedChange,
): StampedChange {
  if (versioningFor(mutation, at.bucket, change) !== undefined) return change
  const current = mutation.object(at.bucket, at.key)?.versionToken
  const prefix = keyVersionsPrefix(at.bucket, at.key)
  const end = successor(prefix)
  const older = end === null ? [] : ctx.kv.scan({ gte: prefix, lt: end, limit: 1 })
  const withIds = (current !== undefined && isVersionToken(current)) || older.length > 0
  return withIds ? { ...change, versioning: 'Suspended' } : change
}

/** The key's null tombstone (W\0 under NULL_TOMBSTONE_TOKEN) becomes the newest stamp of a change
 * that removed its `null` version for good (a delete without versioning, a delete by id of
 * `null`), whether or not this store held that version or the change was stale here: every null
 * version written at or before it is deleted. Without it, a replica that missed such a delete
 * would give the version back in a merge (replication/record-merge.ts), even once versioning is
 * configured; taken as the newest, it is the same whatever order the changes came in. */
export function raiseNullTombstone(mutation: Mutation, at: At, stamp: string): void {
  const storedKey = deletedVersionKey(at.bucket, at.key, NULL_TOMBSTONE_TOKEN)
  const held = mutation.get(storedKey)
  if (held === undefined || stamp > decodeText(held, 'null tombstone')) {
    mutation.put(storedKey, encoder.encode(stamp))
  }
}

/** Where a stamped write goes: current (newer than the key's stamp), an older version (stale in
 * an Enabled bucket), or nowhere; with the answer's version id and staleness. */
export interface Placement {
  where: 'current' | 'older' | 'nowhere'
  versionId?: string
  stale: boolean
}

export function placeStamped(mutation: Mutation, at: At, change: StampedChange): Placement {
  const status = versioningFor(mutation, at.bucket, change)
  const versionId = newVersionId(status, change.token)
  const named = versionId === undefined ? {} : { versionId }
  if (isVersionDeleted(mutation, at, change.token))
    return { where: 'nowhere', ...named, stale: true }
  const order = orderOf(mutation, at, change.stamp)
  if (order === 'newer') return { where: 'current', ...named, stale: false }
  if (order === 'same') return { where: 'nowhere', ...named, stale: false }
  if (keepsOlderChanges(status) && !holdsVersion(mutation, at, change.token)) {
    return { where: 'older', ...named, stale: true }
  }
  return { where: 'nowhere', ...named, stale: true }
}

/** Writes `record` where `placement` says (its references already added, unless nowhere) and
 * raises the key's stamp. */
export function writeStamped(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
  at: At,
  record: ObjectRecord,
  change: StampedChange,
  placement: Placement,
): void {
  const stamped = { ...record, lastModifiedMs: change.wallMs, stamp: change.stamp }
  if (placement.where === 'current') {
    writeCurrent(state, ctx, mutation, at, stamped, change)
  } else if (placement.where === 'older') {
    const versionId = placement.versionId ?? change.token
    insertOlder(ctx, mutation, at, change.token, { ...stamped, versionId })
  }
  raiseKeyStamp(mutation, at, change.stamp)
}

/** A stamped DeleteObject without a version id (a delete, or a marker). */
export function deleteStamped(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
  at: At,
  stamped: StampedChange,
): DeleteOutcome {
  const change = onceVersioned(ctx, mutation, at, stamped)
  const placement = placeStamped(mutation, at, change)
  const outcome = deleteWithoutId(versioningFor(mutation, at.bucket, change), () => change.token)
  const answer: DeleteOutcome = outcome.marker
    ? { versionId: outcome.versionId, deleteMarker: true }
    : { deleteMarker: false }
  if (placement.stale) answer.stale = true
  // Without versioning the object goes for good, stale here or not.
  if (placement.versionId === undefined) raiseNullTombstone(mutation, at, change.stamp)
  if (placement.where === 'current') {
    deleteCurrent(state, ctx, mutation, at, change)
  } else if (placement.where === 'older') {
    const marker = { ...markerRecord(change.wallMs, change.token), stamp: change.stamp }
    insertOlder(ctx, mutation, at, change.token, marker)
  }
  raiseKeyStamp(mutation, at, change.stamp)
  return answer
}
