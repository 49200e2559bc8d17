/** @module The stamp rule: what two replicas' records of one key merge to, whatever S3 operations
 * made them and in whatever order they came. A pure function of the two, the same on every replica
 * (commutative, and idempotent: merged again with either side it stays), so that replicas that
 * exchange records end alike.
 * - The key's stamp is the newer of the two; a version deleted by id keeps the newer delete.
 * - Versions are the union by token, less those a delete by id removed (its stamp not older than
 *   the version's; a `null` version's is the key's null tombstone, stamps.ts). A token both hold
 *   is one write: each of its attributes (protocol/object-attributes.ts) is the one changed last.
 * - A key has at most one `null` version (written before versioning was configured, or while it
 *   was suspended): the newest by stamp.
 * - In a bucket without versioning, the object one replica holds and the other does not goes when
 *   the other's stamp is newer than the object's last change (it deleted it, or wrote the newer
 *   object that wins anyway): a store that kept no null tombstone (written before they were)
 *   converges too.
 * - Two different records with one stamp (never written by one change: the same stamp sent with
 *   two states) are ordered by the bytes of their canonical encoding, the larger wins.
 * The current version is the newest (tokens sort newest first) unless it is a delete marker; in a
 * bucket without versioning, the key's one object. */
import {
  ATTRIBUTE_NAMES,
  changeStampOf,
  type AttributeStamps,
  type ObjectAttributes,
} from '../../../protocol/object-attributes.js'
import { NULL_TOMBSTONE_TOKEN } from '../keys.js'
import type { ObjectRecord } from '../records.js'
import type { HeldRecords } from './key-records.js'

/** The encoding two replicas' copies of a record compare by: its fields sorted, without the
 * version token (a current object written before versioning has none until it is archived). */
export function canonical(record: ObjectRecord): string {
  const { versionToken: _token, ...fields } = record
  return JSON.stringify(sorted(fields))
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted)
  if (typeof value !== 'object' || value === null) return value
  const entries = Object.entries(value as Record<string, unknown>)
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return Object.fromEntries(entries.map(([name, field]) => [name, sorted(field)]))
}

/** Whether `a` wins over `b`: the newer write, then the newer change of an attribute, then the
 * larger encoding. */
export function wins(a: ObjectRecord, b: ObjectRecord): boolean {
  const written = compare(a.stamp ?? '', b.stamp ?? '')
  if (written !== 0) return written > 0
  const changed = compare(changeStampOf(a), changeStampOf(b))
  if (changed !== 0) return changed > 0
  return compare(canonical(a), canonical(b)) > 0
}

/** Two replicas' records of one version (one token). Of two writes the newer is the version
 * whole; of one write each attribute is the side's whose change of it is newer (the larger value
 * of one stamp), and the rest the larger encoding's: a choice per field, so the merge is
 * commutative and idempotent whatever mix of changes each side saw. */
export function mergeVersion(a: ObjectRecord, b: ObjectRecord): ObjectRecord {
  if ((a.stamp ?? '') !== (b.stamp ?? '')) return wins(a, b) ? a : b
  const { attributes: _a, attributeStamps: _aStamps, ...aRest } = a
  const { attributes: _b, attributeStamps: _bStamps, ...bRest } = b
  const base = compare(canonical(aRest), canonical(bRest)) >= 0 ? aRest : bRest
  const attributes: Record<string, unknown> = {}
  const stamps: AttributeStamps = {}
  for (const name of ATTRIBUTE_NAMES) {
    const [aStamp, bStamp] = [a.attributeStamps?.[name], b.attributeStamps?.[name]]
    const [aValue, bValue] = [a.attributes?.[name], b.attributes?.[name]]
    const order =
      compare(aStamp ?? '', bStamp ?? '') ||
      compare(JSON.stringify(sorted(aValue ?? null)), JSON.stringify(sorted(bValue ?? null)))
    const [value, stamp] = order >= 0 ? [aValue, aStamp] : [bValue, bStamp]
    if (value !== undefined) attributes[name] = value
    if (stamp !== undefined) stamps[name] = stamp
  }
  const merged: ObjectRecord = { ...base }
  if (Object.keys(attributes).length > 0) merged.attributes = attributes as ObjectAttributes
  if (Object.keys(stamps).length > 0) merged.attributeStamps = stamps
  // The same record when it is one side's, so that a caller sees nothing changed.
  if (canonical(merged) === canonical(a)) return a
  return canonical(merged) === canonical(b) ? b : merged
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

export function isNullVersion(record: ObjectRecord): boolean {
  return (record.versionId ?? 'null') === 'null'
}

function newer(a: string | null, b: string | null): string | null {
  if (a === null) return b
  if (b === null) return a
  return a > b ? a : b
}

/** What `mine` and `theirs` merge to; `versioned`: the bucket has versioning configured. */
export function mergeRecords(
  mine: HeldRecords,
  theirs: HeldRecords,
  versioned: boolean,
): HeldRecords {
  const deleted = new Map(mine.deleted)
  for (const [token, stamp] of theirs.deleted) {
    const held = deleted.get(token)
    if (held === undefined || stamp > held) deleted.set(token, stamp)
  }
  const versions = new Map<string, ObjectRecord>()
  for (const [side, other] of [
    [mine, theirs],
    [theirs, mine],
  ] as const) {
    for (const [token, record] of side.versions) {
      const removedAt = deleted.get(isNullVersion(record) ? NULL_TOMBSTONE_TOKEN : token)
      // A null marker of the tombstone's own stamp is that delete, as a replica that held
      // versions with ids made it (stamps.ts, onceVersioned): it stays, and the key reads deleted.
      const sameDelete = record.deleteMarker === true && removedAt === record.stamp
      if (removedAt !== undefined && removedAt >= (record.stamp ?? '') && !sameDelete) continue
      const otherHolds = other.versions.has(token)
      if (!versioned && !otherHolds && other.stamp !== null) {
        // Without versioning the other replica's newer stamp is this object's deletion, whatever
        // change of its attributes came after its write.
        if (other.stamp > (record.stamp ?? '')) continue
      }
      const kept = versions.get(token)
      versions.set(token, kept === undefined ? record : mergeVersion(record, kept))
    }
  }
  let nullToken: string | null = null
  for (const [token, record] of versions) {
    if (!isNullVersion(record)) continue
    const kept = nullToken === null ? undefined : versions.get(nullToken)
    const alike = kept !== undefined && !wins(kept, record) && token < (nullToken as string)
    if (kept === undefined || wins(record, kept) || alike) nullToken = token
  }
  for (const [token, record] of [...versions]) {
    if (isNullVersion(record) && token !== nullToken) versions.delete(token)
  }
  return {
    stamp: newer(mine.stamp, theirs.stamp),
    versions,
    current: currentOf(versions),
    deleted,
  }
}

/** The token of the current version: the newest, unless it is a delete marker. */
export function currentOf(versions: ReadonlyMap<string, ObjectRecord>): string | null {
  let newest: string | null = null
  for (const token of versions.keys()) if (newest === null || token < newest) newest = token
  if (newest === null) return null
  return versions.get(newest)?.deleteMarker === true ? null : newest
}
