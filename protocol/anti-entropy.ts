/** @module Anti-entropy contracts (CLUSTER.md section 7): what the anti-entropy actor asks a store,
 * its own or a peer's (through Replica.Op), and what it answers.
 *
 * Each store keeps, in cluster mode and in the same batch as every change of a key's records, a
 * digest of each key's replicated state and a two-level hash tree over them per partition: 256
 * leaves (by the second byte of SHA-256(bucket\0key), the first being the partition) under one
 * root. A key's digest is the XOR of the SHA-256 of each of its items (its newest stamp, each
 * version, each version deleted by id), and a leaf's and a root's the XOR of SHA-256(bucket\0key\0
 * digest) over their keys, so that a change updates them in place, with no scan. Two replicas
 * holding the same records hold the same digests; a pair compares roots, then the leaves of a root
 * that differs, then the keys of a leaf that differs, and syncs each key that differs. Digests are
 * 64 hex digits; an empty key, leaf or root has none. Tombstones (a key's stamp once it holds no
 * object and no version, a version deleted by id) are purged SVC_GC_GRACE_DAYS after their change,
 * by each node from the partitions every other replica was found to hold alike (`ae.purge`). */
import type { z } from 'zod'
import type { Request } from './actor.js'
import { parseHlc } from './hlc.js'
import type { BootstrapSynced } from './messages.js'
import type { Fields } from './wire/fields.js'
import type * as answers from './wire/replica-answers.js'
import type {
  aeKeys,
  aeLeaves,
  aeRoots,
  keyCursor,
  keyManifest,
  keyRecords,
  recordsGet,
  recordsMerge,
} from './wire/anti-entropy.js'

export { AE_KEYS_PAGE_MAX } from './wire/bounds.js'

/** Where a leaf's keys are listed from: after this key (null: from the first). */
export type KeyCursor = z.infer<typeof keyCursor>

/* What a replica answers anti-entropy's questions: the schemas (wire/replica-answers.ts) say what
 * each field is. */
export type KeyDigest = z.infer<typeof answers.keyDigest>
export type VersionEntry = z.infer<typeof answers.aeVersionEntry>
export type KeyManifest = z.infer<typeof answers.keyManifest>

/** The token under which a key keeps its null tombstone
 * (actors/replica-store/replication/stamps.ts): the newest stamp of a change that removed its
 * `null` version for good. The clock's top, never a version's token (a write's is its time; one
 * written before versioning, archived, has its time and ffffffff). */
export const NULL_TOMBSTONE_TOKEN = '9999999999999999ffffffff'

/** The unit of replication: everything a replica keeps of one key that replicas must agree on,
 * whatever S3 operation wrote it. Each version is its stored record (its stamp, tags and their
 * stamp, a multipart object's parts), by its token (a current object's is the one archiving would
 * give it); versions deleted by id by token, with the delete's stamp; and the key's stamp. */
export type KeyRecords = z.infer<typeof keyRecords>

export type KeyMerged = z.infer<typeof answers.keyMerged>

/** Requests of the anti-entropy actor to a store (its own, or a peer's through Replica.Op: the
 * questions' schemas and what each asks are in wire/anti-entropy.ts). */
export type AntiEntropyMsg =
  | (Request & Fields<typeof aeRoots>)
  | (Request & Fields<typeof aeLeaves>)
  | (Request & Fields<typeof aeKeys>)
  | (Request & Fields<typeof keyManifest>)
  | (Request & Fields<typeof recordsGet>)
  | (Request & Fields<typeof recordsMerge>)
  /** This node's anti-entropy only (never a peer's): removes the partition's tombstones whose
   * stamps' wall clocks are before `beforeMs` (each key stamp of a key with no object and no
   * version left, each version deleted by id), walking at most `limit` (at most
   * AE_PURGE_KEYS_MAX) of its keys after `after`, in one batch. */
  | (Request & {
      kind: 'ae.purge'
      partition: number
      beforeMs: number
      after: KeyCursor | null
      limit: number
    })

/** Keys one ae.purge walks at most. */
export const AE_PURGE_KEYS_MAX = 1_000

const DAY_MS = 86_400_000

/** SVC_GC_GRACE_DAYS (validated by the runtime's cluster config; 7 when unset) in ms. */
export function gcGraceMs(config: Readonly<Record<string, string>>): number {
  const days = Number(config['SVC_GC_GRACE_DAYS'] ?? '7')
  return Number.isFinite(days) && days > 0 ? days * DAY_MS : 7 * DAY_MS
}

/** Whether a tombstone's stamp is past the grace at `nowMs`: its change's wall clock is before
 * nowMs - graceMs. Such a tombstone may be purged on a replica, so one replica holding it and
 * another holding nothing of it are alike. */
export function pastGrace(stamp: string, nowMs: number, graceMs: number): boolean {
  const hlc = parseHlc(stamp)
  return hlc !== null && hlc.wallMs < nowMs - graceMs
}

/** What two replicas of a key must agree on: a manifest but for the tombstones past the grace,
 * which one may have purged and the other not yet (actors/replica-store/replication/purge.ts): each
 * version deleted by id, and the key's stamp once no version and no such delete is left. */
export function unpurged(
  manifest: KeyManifest,
  nowMs: number,
  graceMs: number,
): Omit<KeyManifest, 'digest'> {
  const deleted = manifest.deleted.filter((one) => !pastGrace(one.stamp, nowMs, graceMs))
  const bare = manifest.versions.length === 0 && deleted.length === 0
  const purged = manifest.stamp !== null && bare && pastGrace(manifest.stamp, nowMs, graceMs)
  return { stamp: purged ? null : manifest.stamp, versions: manifest.versions, deleted }
}

/** What an ae.purge removed (key stamps and deletes by id), and where the next one goes on from
 * (null: the partition's last key was walked). */
export interface Purged {
  purged: number
  next: KeyCursor | null
}

export interface AntiEntropyReply {
  'ae.roots': (string | null)[]
  'ae.leaves': { leaf: number; digest: string }[]
  'ae.keys': KeyDigest[]
  'key.manifest': KeyManifest
  'records.get': KeyRecords
  'records.merge': KeyMerged
  'ae.purge': Purged
}

/** What a node's anti-entropy did, for repair-status and /metrics. */
export interface AntiEntropyStatus {
  /** Rounds ended since the actor started, and when the last one ended (null: none yet). */
  rounds: number
  lastRoundAtMs: number | null
  /** Changes replayed to either replica of a pair. */
  itemsRepaired: number
  /** Tombstones (key stamps and deletes by id) purged, SVC_GC_GRACE_DAYS after their change,
   * from partitions every replica held alike. */
  tombstonesPurged: number
  throttle: { itemsPerSecond: number; bytesPerSecond: number }
  peers: AntiEntropyPeer[]
}

export interface AntiEntropyPeer {
  node: string
  /** When a comparison with it last ended with nothing left to sync (null: never). */
  lastFullSyncMs: number | null
  /** Keys found different in the last comparison. */
  diverged: number
  /** SHA-256 over this node's roots of the partitions both replicate, at the last comparison:
   * equal on both sides of a pair in sync. */
  rootsDigest: string | null
  /** Why the last comparison stopped early, if it did. */
  error?: string
}

/** Requests to the anti-entropy actor: its status, and a bootstrap's round (every shared
 * partition with every serving peer, whatever this node's own phase; BootstrapSynced). */
export type AntiEntropyActorMsg =
  (Request & { kind: 'anti-entropy.status' }) | (Request & { kind: 'anti-entropy.bootstrap' })

export type AntiEntropyActorReply = {
  'anti-entropy.status': AntiEntropyStatus
  'anti-entropy.bootstrap': BootstrapSynced
}
