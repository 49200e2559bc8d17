/** @module Object versioning, as Amazon S3 does it per bucket (its rules of which version id a
 * write or a delete gets: protocol/s3-rules/versioning.ts). A bucket never configured keeps one
 * object per key (O\0), as before. Once configured (Enabled or Suspended, never back):
 * - O\0 holds the key's newest version exactly when that version is not a delete marker, so S3
 *   listings and plain GETs read O\0 alone; every other version, markers included, is under V\0,
 *   keyed by a token that sorts newest first, and holds its own blob references and bytes.
 * - A write's current object moves to V\0; a Suspended bucket's `null` version it replaces goes
 *   (N\0 finds it when it is under V\0).
 * - Deleting a version by id removes it for good; when it was the newest, the next newest becomes
 *   current unless it is a marker (deleting a marker "undeletes" the key).
 * Objects written before versioning was configured are the `null` version. Every function here
 * prepares a Mutation with no await; the caller commits it. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { DELETE_OBJECTS_KEYS_MAX } from '../../../protocol/limits.js'
import { mayDeleteVersion, versionLockOf } from '../../../protocol/s3-rules/object-lock.js'
import {
  deleteWithoutId,
  newestIsCurrent,
  newVersionId,
  replacesNullVersion,
} from '../../../protocol/s3-rules/versioning.js'
import { decodeText, type ObjectRecord, type VersioningStatus } from '../records.js'
import {
  isVersionToken,
  keyVersionsPrefix,
  nullVersionKey,
  successor,
  versionToken,
} from '../keys.js'
import type { Mutation } from '../mutation.js'
import type { StoreState } from '../store-state.js'

/** What a delete did: the version it removed or the marker it added. */
export interface DeleteOutcome {
  versionId?: string
  deleteMarker: boolean
  /** A stamped delete this store held a newer change of the key than (stamps.ts). */
  stale?: true
}

/** What a stamped change writes with (stamps.ts): its stamp, the version token derived from it
 * and its wall clock, which is the Last-Modified of what it writes; and the bucket's versioning
 * its coordinator decided (null: never configured), absent when the store reads its own. */
export interface StampedChange {
  stamp: string
  token: string
  wallMs: number
  versioning?: VersioningStatus | null
}

/** A version found for a GET, HEAD or copy: an object, or a delete marker. */
export type FoundVersion =
  | { kind: 'object'; record: ObjectRecord; versioned: boolean }
  | { kind: 'marker'; versionId: string; lastModifiedMs: number; byId: boolean }

export function versioningOf(mutation: Mutation, bucket: string): VersioningStatus | undefined {
  return mutation.bucket(bucket)?.versioning
}

/** The versioning a write goes by: what its coordinator decided for every replica, else this
 * store's own (a single node, an unstamped change). */
export function versioningFor(
  mutation: Mutation,
  bucket: string,
  change?: Pick<StampedChange, 'versioning'>,
): VersioningStatus | undefined {
  if (change?.versioning === undefined) return versioningOf(mutation, bucket)
  return change.versioning ?? undefined
}

/** A new version token: the write's time in microseconds, strictly increasing in this store
 * incarnation (so two writes in one millisecond still sort), then random bits. */
export function newVersionToken(state: StoreState, ctx: Context): string {
  const micros = Math.max(Math.floor(ctx.now() * 1000), state.lastVersionMicros + 1)
  state.lastVersionMicros = micros
  // Below ffffffff, which is kept for objects written before versioning (see tokenOf).
  const random = Buffer.from(ctx.randomBytes(4)).readUInt32BE(0) % 0xffffffff
  return versionToken(micros, random.toString(16).padStart(8, '0'))
}

/** The token of a current object when it moves to V\0: its own, or (written before versioning
 * was configured) one made from its last-modified time. Its random part is the largest, so it
 * sorts older than a version written in the same microsecond, which can only have come later.
 * A key's digest (digests.ts) names a current object by this token too, so that archiving it
 * leaves the digest as it was. */
export function tokenOf(record: ObjectRecord): string {
  return record.versionToken ?? versionToken(record.lastModifiedMs * 1000, 'ffffffff')
}

/** Writes `record` as the key's new current object, its references already added, as the
 * bucket's versioning asks. Returns the version id, undefined for a never-versioned bucket. A
 * stamped change names its version token and may bring its versioning; otherwise a token is
 * drawn. */
export function writeCurrent(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
  record: ObjectRecord,
  change?: StampedChange,
): string | undefined {
  const status = versioningFor(mutation, at.bucket, change)
  if (status === undefined) {
    mutation.putObject(at.bucket, at.key, record)
    return undefined
  }
  const token = change?.token ?? newVersionToken(state, ctx)
  const versionId = newVersionId(status, token)
  if (replacesNullVersion(status)) removeNullVersion(mutation, at)
  const current = mutation.object(at.bucket, at.key)
  if (current !== undefined) mutation.archiveCurrent(at.bucket, at.key, tokenOf(current))
  mutation.setCurrent(at.bucket, at.key, { ...record, versionId, versionToken: token })
  return versionId
}

/** Removes the key's `null` version, current or not (a Suspended bucket's write replaces it). */
function removeNullVersion(mutation: Mutation, at: { bucket: string; key: string }): void {
  const current = mutation.object(at.bucket, at.key)
  if (current !== undefined && (current.versionId ?? 'null') === 'null') {
    mutation.deleteObject(at.bucket, at.key)
    return
  }
  const token = nullToken(mutation, at)
  if (token !== undefined) mutation.deleteVersion(at.bucket, at.key, token)
}

function nullToken(mutation: Mutation, at: { bucket: string; key: string }): string | undefined {
  const stored = mutation.get(nullVersionKey(at.bucket, at.key))
  return stored === undefined ? undefined : decodeText(stored, 'null version')
}

/** DeleteObject without a version id; a stamped one's marker takes the stamp's token and time. */
export function deleteCurrent(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
  change?: StampedChange,
): DeleteOutcome {
  const status = versioningFor(mutation, at.bucket, change)
  const outcome = deleteWithoutId(status, () => change?.token ?? newVersionToken(state, ctx))
  if (!outcome.marker) {
    mutation.deleteObject(at.bucket, at.key)
    return { deleteMarker: false }
  }
  if (replacesNullVersion(status)) removeNullVersion(mutation, at)
  const current = mutation.object(at.bucket, at.key)
  if (current !== undefined) mutation.archiveCurrent(at.bucket, at.key, tokenOf(current))
  const marker = markerRecord(change?.wallMs ?? ctx.now(), outcome.versionId)
  if (change !== undefined) marker.stamp = change.stamp
  mutation.putVersion(at.bucket, at.key, outcome.token, marker)
  return { versionId: outcome.versionId, deleteMarker: true }
}

export function markerRecord(nowMs: number, versionId: string): ObjectRecord {
  return {
    size: 0,
    etag: '',
    lastModifiedMs: nowMs,
    http: { contentType: '' },
    userMeta: {},
    checksums: {},
    versionId,
    deleteMarker: true,
  }
}

/** Whether the key holds a version with this token, current or not. */
export function holdsVersion(
  mutation: Mutation,
  at: { bucket: string; key: string },
  token: string,
): boolean {
  if (mutation.object(at.bucket, at.key)?.versionToken === token) return true
  return mutation.version(at.bucket, at.key, token) !== undefined
}

/** Inserts a version that arrived after a newer change of its key (a stale stamped write), its
 * references already added: under V\0 with its token, in its place by age. The current object
 * stays; but where the key has none and this version is now its newest and not a marker, it
 * becomes current, since O\0 holds the newest version exactly when that is not a marker. */
export function insertOlder(
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
  token: string,
  record: ObjectRecord,
): void {
  assert(!holdsVersion(mutation, at, token), 'a version inserted twice')
  const newestBefore = newestToken(ctx, mutation, at)
  mutation.putVersion(at.bucket, at.key, token, { ...record, versionToken: token })
  if (mutation.object(at.bucket, at.key) !== undefined || !newestIsCurrent(record)) return
  if (newestBefore === undefined || token < newestBefore) {
    mutation.promoteVersion(at.bucket, at.key, token)
  }
}

/** A version id from a request: `null` or a token; anything else is S3's InvalidArgument. */
export function checkVersionId(versionId: string): Result<string> {
  if (versionId === 'null' || isVersionToken(versionId)) return ok(versionId)
  return fail('invalid_argument', 'Invalid version id specified')
}

/** How a delete by id answers to object lock: judged here, now (a single node), or already judged
 * by the coordinator that stamped it against the cluster's time (every replica removes the version
 * alike, whatever its own clock says). */
export type LockJudgement = { bypassGovernance: boolean } | 'judged'

/** Whether object lock lets a version go for good (protocol/s3-rules/object-lock.ts). */
function lockAllows(ctx: Context, record: ObjectRecord, lock: LockJudgement): Result<null> {
  if (lock === 'judged') return ok(null)
  return mayDeleteVersion(versionLockOf(record.attributes), ctx.now(), lock.bypassGovernance)
}

/** DeleteObject with a version id: removes that version for good, unless object lock protects
 * it. */
export function deleteById(
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
  versionId: string,
  lock: LockJudgement,
): Result<DeleteOutcome> {
  const checked = checkVersionId(versionId)
  if (!checked.ok) return checked
  const current = mutation.object(at.bucket, at.key)
  if (current !== undefined && (current.versionId ?? 'null') === versionId) {
    const allowed = lockAllows(ctx, current, lock)
    if (!allowed.ok) return allowed
    mutation.deleteObject(at.bucket, at.key)
    promoteNewest(ctx, mutation, at)
    return ok({ versionId, deleteMarker: false })
  }
  const token = versionId === 'null' ? nullToken(mutation, at) : versionId
  const record = token === undefined ? undefined : mutation.version(at.bucket, at.key, token)
  if (token === undefined || record === undefined) return ok({ versionId, deleteMarker: false })
  const allowed = lockAllows(ctx, record, lock)
  if (!allowed.ok) return allowed
  const wasNewest = current === undefined && newestToken(ctx, mutation, at) === token
  mutation.deleteVersion(at.bucket, at.key, token)
  if (wasNewest) promoteNewest(ctx, mutation, at)
  return ok({ versionId, deleteMarker: record.deleteMarker === true })
}

/** Rows read per scan while looking for the newest version a mutation has not deleted. */
const NEWEST_SCAN_ROWS = 8

/** The newest token under V\0 for the key that this mutation has not deleted. The kv does not see
 * the mutation's own deletes, so deleted rows are skipped page by page; one batch deletes at most
 * DELETE_OBJECTS_KEYS_MAX versions (a delete-many), which bounds the pages. */
function newestToken(
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
): string | undefined {
  const prefix = keyVersionsPrefix(at.bucket, at.key)
  const end = successor(prefix)
  if (end === null) return undefined
  let from: { gte: string } | { gt: string } = { gte: prefix }
  for (let pages = 0; pages <= DELETE_OBJECTS_KEYS_MAX / NEWEST_SCAN_ROWS + 1; pages++) {
    const rows = ctx.kv.scan({ ...from, lt: end, limit: NEWEST_SCAN_ROWS })
    for (const [storedKey] of rows) {
      const token = storedKey.slice(prefix.length)
      if (mutation.version(at.bucket, at.key, token) !== undefined) return token
    }
    const last = rows[rows.length - 1]
    if (last === undefined || rows.length < NEWEST_SCAN_ROWS) return undefined
    from = { gt: last[0] }
  }
  assert.fail('more versions deleted in one batch than a batch can delete')
}

/** After the current version went: the newest remaining one becomes current, unless it is a
 * marker (then the key stays deleted) or there is none. */
function promoteNewest(
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
): void {
  const token = newestToken(ctx, mutation, at)
  if (token === undefined) return
  const version = mutation.version(at.bucket, at.key, token)
  if (version !== undefined && newestIsCurrent(version)) {
    mutation.promoteVersion(at.bucket, at.key, token)
  }
}

/** The version a GET, HEAD or copy names: the current one without an id. */
export function findVersion(
  ctx: Context,
  mutation: Mutation,
  at: { bucket: string; key: string },
  versionId: string | undefined,
): Result<FoundVersion> {
  const versioned = versioningOf(mutation, at.bucket) !== undefined
  const current = mutation.object(at.bucket, at.key)
  if (versionId === undefined) {
    if (current !== undefined) return ok({ kind: 'object', record: current, versioned })
    const token = versioned ? newestToken(ctx, mutation, at) : undefined
    const newest = token === undefined ? undefined : mutation.version(at.bucket, at.key, token)
    if (newest?.deleteMarker === true) {
      const { lastModifiedMs } = newest
      return ok({
        kind: 'marker',
        versionId: newest.versionId ?? 'null',
        lastModifiedMs,
        byId: false,
      })
    }
    return fail('no_such_key', `no key ${at.key} in ${at.bucket}`)
  }
  const checked = checkVersionId(versionId)
  if (!checked.ok) return checked
  if (current !== undefined && (current.versionId ?? 'null') === versionId) {
    return ok({ kind: 'object', record: current, versioned })
  }
  const token = versionId === 'null' ? nullToken(mutation, at) : versionId
  const record = token === undefined ? undefined : mutation.version(at.bucket, at.key, token)
  if (record === undefined) {
    return fail('no_such_version', `no version ${versionId} of ${at.key}`)
  }
  if (record.deleteMarker === true) {
    return ok({ kind: 'marker', versionId, lastModifiedMs: record.lastModifiedMs, byId: true })
  }
  return ok({ kind: 'object', record, versioned })
}
