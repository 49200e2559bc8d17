/** @module Store shards: a single node runs SVC_STORE_SHARDS replica-store threads on one metadata
 * database, each owning the keys that hash to it, so that no one thread serialises the node's
 * writes. A request that names a key goes to the key's shard; every other request (buckets and
 * their settings, listings, which read the shared database, system records, the scrubber's blob
 * requests, stats) goes to shard 0, which owns the catalog and the system records. A delete of
 * many keys is split by shard. What several shards change (blob records, a bucket's record) they
 * change under ShardLocks (runtime/shard-locks.ts); counters are kept per shard and summed. The
 * hash decides only where a request runs, never where anything is stored, so the shard count may
 * change between starts. A cluster node's SVC_COORDINATORS threads take their requests by the
 * same rule, so that a key's quorum paths (its stamps, a GET's two requests, a held key) stay on
 * one thread. */
import type { StoreMsg } from '../protocol/messages.js'
import type { DeleteManyResult } from '../protocol/messages.js'
import { fail, ok, type Result } from '../protocol/errors.js'
import { keyShard } from '../protocol/key-shard.js'
import { createVolumeMemory } from './data-volume.js'
import { createShardLockMemory } from './shard-locks.js'

/** What the main thread makes once for the store's shards, which outlives any shard's thread. */
export interface StoreMemory {
  locks: SharedArrayBuffer
  written: SharedArrayBuffer
}

export function createStoreMemory(shards: number): StoreMemory {
  return { locks: createShardLockMemory(shards), written: createVolumeMemory() }
}

/** What every shard must hear, each holding the copies found damaged in memory (blobs/damaged.ts):
 * a copy a reader found damaged, and the scrubber's verdict on it (a copy marked corrupt is then
 * so in its record, which every shard reads; one found sound again is no shard's damage). Each
 * answers null. */
export const EVERY_SHARD_KINDS: ReadonlySet<string> = new Set(['blob.damaged', 'blob.mark'])

/** The shard a request runs on (a delete of many keys is split first: splitDeleteMany). */
export function storeShardOf(msg: StoreMsg, shards: number): number {
  if (shards === 1) return 0
  if (msg.kind === 'object.copy') return keyShard(msg.target.bucket, msg.target.key, shards)
  if ('key' in msg && typeof msg.key === 'string' && 'bucket' in msg) {
    return keyShard(msg.bucket, msg.key, shards)
  }
  return 0
}

/** A shard's instance name, as the supervisor names the instances of a role that runs several. */
export function shardInstance(role: string, shard: number, shards: number): string {
  return shards === 1 ? role : `${role}-${shard + 1}`
}

/** The shard an instance of the store is (its name as shardInstance makes it). */
export function shardOfInstance(instance: string): number {
  const match = /-(\d+)$/.exec(instance)
  return match === null ? 0 : Number(match[1]) - 1
}

export type DeleteManyMsg = Extract<StoreMsg, { kind: 'object.delete-many' }>

/** Splits a delete of many keys into one request per shard that owns some of them. */
export function splitDeleteMany(msg: DeleteManyMsg, shards: number): [number, DeleteManyMsg][] {
  const parts = new Map<number, DeleteManyMsg>()
  for (const target of msg.objects) {
    const shard = keyShard(msg.bucket, target.key, shards)
    const part = parts.get(shard) ?? { ...msg, objects: [] }
    part.objects.push(target)
    parts.set(shard, part)
  }
  return [...parts]
}

/** The answers of a split delete as one. A part that failed as a whole fails each of its keys
 * (the other parts' deletes happened); when every part failed alike (no such bucket), so does the
 * whole, as one request to one store would have. */
export function joinDeleteMany(
  parts: readonly DeleteManyMsg[],
  answers: readonly Result<DeleteManyResult>[],
): Result<DeleteManyResult> {
  const failed = answers.filter((answer) => !answer.ok)
  const first = failed[0]
  if (first !== undefined && failed.length === answers.length) {
    if (failed.every((answer) => answer.code === first.code)) return fail(first.code, first.detail)
  }
  const joined: DeleteManyResult = { deleted: [], errors: [] }
  answers.forEach((answer, index) => {
    if (answer.ok) {
      joined.deleted.push(...answer.value.deleted)
      joined.errors.push(...answer.value.errors)
      return
    }
    for (const { key } of parts[index]?.objects ?? []) {
      joined.errors.push({ key, code: answer.code, detail: answer.detail })
    }
  })
  return ok(joined)
}
