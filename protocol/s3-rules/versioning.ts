/** @module S3's versioning rules for writes and deletes, decided here for every path that writes a
 * version (a put, a copy, a completed upload, a delete marker; unstamped on a single node, stamped
 * on a cluster's replicas):
 * - a bucket never configured keeps one object per key: a write replaces it, gets no version id,
 *   and a delete without a version id removes it;
 * - Enabled: a write or a delete marker is a new version, named by its own token;
 * - Suspended: a write or a delete marker gets the id `null` and replaces the key's `null`
 *   version, current or not; other versions stay;
 * - an object written before versioning was configured is the `null` version;
 * - the key's newest version is what a GET without a version id reads, unless it is a delete
 *   marker (the key is then deleted): deleting the current version by id makes the next newest
 *   current, and deleting a marker by id undeletes the key;
 * - only Enabled keeps history: a change that arrives after a newer one of its key is kept as an
 *   older version there, and dropped elsewhere (a `null` version is always the newest change);
 * - a delete marker has no attributes (tags ...): 405 MethodNotAllowed named by version id, 404
 *   NoSuchKey as the key's current version (a copy's source: copy-source.ts). */
import { fail, type Result } from '../errors.js'

/** A bucket's versioning: undefined when never configured (a bucket never goes back). */
export type Versioning = 'Enabled' | 'Suspended' | undefined

/** The version id of a new version whose token is `token`. */
export function newVersionId(status: 'Enabled' | 'Suspended', token: string): string
export function newVersionId(status: Versioning, token: string): string | undefined
export function newVersionId(status: Versioning, token: string): string | undefined {
  if (status === undefined) return undefined
  return status === 'Enabled' ? token : 'null'
}

/** Whether a new version replaces the key's `null` version. */
export function replacesNullVersion(status: Versioning): boolean {
  return status === 'Suspended'
}

/** What DeleteObject without a version id does: removes the object, or adds a delete marker
 * (whose token `drawToken` gives: a new version draws one only when there is one to name). */
export type DeleteWithoutId = { marker: false } | { marker: true; token: string; versionId: string }

export function deleteWithoutId(status: Versioning, drawToken: () => string): DeleteWithoutId {
  if (status === undefined) return { marker: false }
  const token = drawToken()
  return { marker: true, token, versionId: newVersionId(status, token) }
}

/** Whether the key's newest version is its current object. */
export function newestIsCurrent(newest: { deleteMarker?: boolean | undefined }): boolean {
  return newest.deleteMarker !== true
}

/** Whether a change older than the key's newest is kept, as an older version. */
export function keepsOlderChanges(status: Versioning): boolean {
  return status === 'Enabled'
}

/** The version id an answer names for a stored version (`versionId` its own, absent for one
 * written before versioning): none in a never-versioned bucket. */
export function shownVersionId(
  versioned: boolean,
  versionId: string | undefined,
): string | undefined {
  return versioned ? (versionId ?? 'null') : undefined
}

/** What a request of a version's attributes answers when that version is a delete marker. */
export function markerHasNoAttributes(
  at: { bucket: string; key: string },
  marker: { byId: boolean },
): Result<never> {
  if (marker.byId) return fail('method_not_allowed', 'a delete marker has no attributes')
  return fail('no_such_key', `no key ${at.key} in ${at.bucket}`)
}
