/** @module Stamped changes of object keys (cluster mode; protocol/messages.ts, "Stamps"). Each key
 * keeps under Q\0 the stamp of the newest change this store applied or refused as stale, deletions
 * included, and each version deleted by id a tombstone under W\0. A change newer than Q applies as
 * an unstamped one would, with the stamp's version token and wall clock; one that is not is stale:
 * in a bucket with versioning Enabled it becomes an older version in its place by age (unless it
 * was deleted by id), and elsewhere nothing is written. Equal stamps are one change sent again,
 * answered as applied and written once. Every function prepares a Mutation with no await. */
import type { Context } from '../../protocol/actor.js'
import {
  deleteWithoutId,
  keepsOlderChanges,
  newVersionId,
} from '../../protocol/s3-rules/versioning.js'
import { deletedVersionKey, isVersionToken, keyStampKey, stampToken, stampWallMs } from './keys.js'
import type { Mutation } from './mutation.js'
import { decodeText, encodeRecord, type ObjectRecord } from './records.js'
import type { StoreState } from './store-state.js'
import {
  deleteCurrent,
  holdsVersion,
  insertOlder,
  markerRecord,
  versioningOf,
  writeCurrent,
  type DeleteOutcome,
  type StampedChange,
} from './versions.js'

interface At {
  bucket: string
  key: string
}

/** A stamp the dispatcher validated (keys.ts isStamp), with what derives from it. */
export function stampedChange(stamp: string): StampedChange {
  return { stamp, token: stampToken(stamp), wallMs: stampWallMs(stamp) }
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

/** A stamped delete by id: the version's tombstone (a `null` version has none: a stamped write
 * never makes one where it is stale) and the key's stamp. */
export function recordDeleteById(
  mutation: Mutation,
  at: At,
  versionId: string,
  stamp: string,
): void {
  if (isVersionToken(versionId)) {
    mutation.put(deletedVersionKey(at.bucket, at.key, versionId), encoder.encode(stamp))
  }
  raiseKeyStamp(mutation, at, stamp)
}

/** Where a stamped write goes: current (newer than the key's stamp), an older version (stale in
 * an Enabled bucket), or nowhere; with the answer's version id and staleness. */
export interface Placement {
  where: 'current' | 'older' | 'nowhere'
  versionId?: string
  stale: boolean
}

export function placeStamped(mutation: Mutation, at: At, change: StampedChange): Placement {
  const status = versioningOf(mutation, at.bucket)
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
    writeCurrent(state, ctx, mutation, at, stamped, change.token)
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
  change: StampedChange,
): DeleteOutcome {
  const placement = placeStamped(mutation, at, change)
  const outcome = deleteWithoutId(versioningOf(mutation, at.bucket), () => change.token)
  const answer: DeleteOutcome = outcome.marker
    ? { versionId: outcome.versionId, deleteMarker: true }
    : { deleteMarker: false }
  if (placement.stale) answer.stale = true
  if (placement.where === 'current') {
    deleteCurrent(state, ctx, mutation, at, change)
  } else if (placement.where === 'older') {
    const marker = { ...markerRecord(change.wallMs, change.token), stamp: change.stamp }
    insertOlder(ctx, mutation, at, change.token, marker)
  }
  raiseKeyStamp(mutation, at, change.stamp)
  return answer
}
