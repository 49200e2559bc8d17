/** @module Tombstone purge (cluster mode), asked by this node's anti-entropy alone (`ae.purge`,
 * never through Replica.Op), for a partition whose other replicas hold what this one does (but
 * for tombstones past the grace some of them purged already): a tombstone older than the grace
 * (SVC_GC_GRACE_DAYS) has nothing left to override there. Two kinds go: a key's stamp (Q\0) when
 * the key holds no object (O\0), no version (V\0) and no delete by id any more (with its N\0
 * index, if one was left), and a version deleted by id (W\0); each when its change's wall clock
 * is before `beforeMs`. They are found through the partition's key digests (E\0pp\0...: exactly
 * its keys with a replicated record), not by a scan of the store: at most `limit` keys and
 * PURGE_RECORDS_MAX removals a call, removed in one Mutation so that the digests and counters
 * move with them. A key's hints (J\0) and claims stay: a hint is settled by its delivery, a claim
 * by its holder. */
import type { Context } from '../../../protocol/actor.js'
import {
  AE_PURGE_KEYS_MAX,
  type AntiEntropyMsg,
  type KeyCursor,
  type Purged,
} from '../../../protocol/anti-entropy.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { parseHlc } from '../../../protocol/hlc.js'
import { PARTITIONS } from '../../../protocol/placement.js'
import { MANIFEST_ENTRIES_MAX } from '../../../protocol/wire/bounds.js'
import { treePlace } from './digests.js'
import {
  keyDeletedPrefix,
  keyDigestKey,
  keyStampKey,
  keyVersionsPrefix,
  leafKeysPrefix,
  nullVersionKey,
  objectKey,
  partitionKeysEnd,
  partitionKeysPrefix,
  successor,
} from '../keys.js'
import { Mutation } from '../mutation.js'
import { commitMutation, type StoreState } from '../store-state.js'

type PurgeMsg = Extract<AntiEntropyMsg, { kind: 'ae.purge' }>

/** Records one call removes at most, beyond those of the key it is at (a key lists at most
 * MANIFEST_ENTRIES_MAX deletes by id): the batch stays small. */
export const PURGE_RECORDS_MAX = 4_096

export async function purgeTombstones(
  state: StoreState,
  msg: PurgeMsg,
  ctx: Context,
): Promise<Result<Purged>> {
  const { partition, beforeMs, after, limit } = msg
  if (!Number.isInteger(partition) || partition < 0 || partition >= PARTITIONS) {
    return fail('invalid_request', 'ae.purge: a partition of 0 to 255')
  }
  if (!Number.isFinite(beforeMs)) return fail('invalid_request', 'ae.purge: a time in ms')
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > AE_PURGE_KEYS_MAX) {
    return fail('invalid_request', `ae.purge: a limit of 1 to ${AE_PURGE_KEYS_MAX}`)
  }
  const from =
    after === null
      ? { gte: partitionKeysPrefix(partition) }
      : { gt: keyDigestKey(partition, treePlace(after.bucket, after.key).leaf, ...at(after)) }
  const rows = ctx.kv.scan({ ...from, lt: partitionKeysEnd(partition), limit })
  const mutation = new Mutation(ctx.kv, state.shard)
  let purged = 0
  let last: KeyCursor | null = null
  for (const [digestKey] of rows) {
    last = keyOf(digestKey)
    purged += purgeKey(ctx, mutation, last, beforeMs)
    if (purged >= PURGE_RECORDS_MAX) break
  }
  const walkedAll = rows.length < limit && purged < PURGE_RECORDS_MAX
  const next = walkedAll ? null : last
  if (purged > 0) await commitMutation(state, ctx, mutation)
  return ok({ purged, next })
}

function at(cursor: KeyCursor): [string, string] {
  return [cursor.bucket, cursor.key]
}

/** The bucket and key a key digest's record names (E\0pp\0ll\0bucket\0key). */
function keyOf(digestKey: string): KeyCursor {
  const rest = digestKey.slice(leafKeysPrefix(0, 0).length)
  const cut = rest.indexOf('\0')
  return { bucket: rest.slice(0, cut), key: rest.slice(cut + 1) }
}

/** Whether a stored stamp's change happened before `beforeMs` (a record that is no stamp is
 * kept: nothing can tell its age). */
function before(stored: Uint8Array, beforeMs: number): boolean {
  const hlc = parseHlc(Buffer.from(stored).toString('utf8'))
  return hlc !== null && hlc.wallMs < beforeMs
}

/** The records whose keys start with `prefix`, at most `limit`. */
function recordsUnder(ctx: Context, prefix: string, limit: number): [string, Uint8Array][] {
  const end = successor(prefix)
  return end === null ? [] : ctx.kv.scan({ gte: prefix, lt: end, limit })
}

/** Adds to `mutation` the removal of the key's tombstones older than `beforeMs`: how many. */
function purgeKey(ctx: Context, mutation: Mutation, cursor: KeyCursor, beforeMs: number): number {
  const [bucket, key] = at(cursor)
  let purged = 0
  const deletes = recordsUnder(ctx, keyDeletedPrefix(bucket, key), MANIFEST_ENTRIES_MAX + 1)
  let kept = deletes.length
  for (const [storedKey, stamp] of deletes.slice(0, MANIFEST_ENTRIES_MAX)) {
    if (!before(stamp, beforeMs)) continue
    mutation.del(storedKey)
    purged++
    kept--
  }
  const stamp = mutation.get(keyStampKey(bucket, key))
  if (stamp === undefined || kept > 0 || !before(stamp, beforeMs)) return purged
  if (mutation.get(objectKey(bucket, key)) !== undefined) return purged
  if (recordsUnder(ctx, keyVersionsPrefix(bucket, key), 1).length > 0) return purged
  mutation.del(keyStampKey(bucket, key))
  if (mutation.get(nullVersionKey(bucket, key)) !== undefined)
    mutation.del(nullVersionKey(bucket, key))
  return purged + 1
}
