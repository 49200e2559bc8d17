/** @module records.merge: another replica's records of a key, merged into this replica's by the
 * stamp rule (record-merge.ts), whatever S3 operations made either. Read repair, a hint's delivery,
 * anti-entropy's key sync and a bootstrap all come here. The blobs the merged records name and this
 * store lacks are fetched first, from the replica that sent them (fetch-blob.ts); then ONE batch
 * writes the merged records where they belong (the current object under O\0, the other versions
 * under V\0, the deletes by id, the key's stamp) with the blob references, counters and digests
 * every batch keeps, as a client's write would. The batch is prepared with no await before its
 * commit, from the records as they are then: a client's change that came while the blobs were
 * fetched is merged too, never lost. Records are rewritten only where they differ. */
import type { Context } from '../../../protocol/actor.js'
import type { AntiEntropyMsg, KeyMerged } from '../../../protocol/anti-entropy.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { deletedVersionKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { blobsOf, type BlobRef, type ObjectRecord } from '../records.js'
import { raiseKeyStamp } from './stamps.js'
import { commitMutation, promoteInBackground, type StoreState } from '../store-state.js'
import { fetchBlob, type FetchedBlob } from './fetch-blob.js'
import { heldRecords, receivedRecords, type HeldRecords } from './key-records.js'
import { canonical, mergeRecords } from './record-merge.js'

type MergeMsg = Extract<AntiEntropyMsg, { kind: 'records.merge' }>

/** Rounds of fetching: a round fetches what the records named when it began; one more is left for
 * blobs that a client's change made necessary meanwhile. */
const FETCH_ROUNDS_MAX = 3
const encoder = new TextEncoder()

export async function mergeKey(
  state: StoreState,
  msg: MergeMsg,
  ctx: Context,
): Promise<Result<KeyMerged>> {
  const theirs = receivedRecords(msg.records)
  if (!theirs.ok) return theirs
  const at = { bucket: msg.bucket, key: msg.key }
  const fetched = new Map<string, FetchedBlob>()
  let bytes = 0
  try {
    for (let round = 0; round < FETCH_ROUNDS_MAX; round++) {
      const mutation = new Mutation(ctx.kv, state.shard)
      const bucket = mutation.bucket(at.bucket)
      if (bucket === undefined) return fail('no_such_bucket', `bucket ${at.bucket} does not exist`)
      const mine = heldRecords(ctx, at.bucket, at.key)
      if (!mine.ok) return mine
      const versioned = bucket.versioning !== undefined
      if (
        !versioned &&
        [...theirs.value.versions.values()].some((r) => r.versionId !== undefined)
      ) {
        // Versioning is configured for good: this node's catalog has not caught up yet.
        return fail('unavailable', `${at.bucket}: versioning not configured here yet`)
      }
      const merged = mergeRecords(mine.value, theirs.value, versioned)
      const changes = changesOf(mine.value, merged)
      const missing = changes.added
        .flatMap(({ record }) => blobsOf(record))
        .filter((blob) => !fetched.has(blob.sha256) && mutation.blob(blob.sha256) === undefined)
      if (missing.length === 0) {
        if (!changes.any) return ok({ changed: false, bytes })
        const created = writeMerged(mutation, at, merged, changes, fetched)
        await commitMutation(state, ctx, mutation)
        for (const sha256 of created) {
          const copy = fetched.get(sha256)
          state.damaged.delete(sha256)
          if (copy !== undefined && 'file' in copy) {
            promoteInBackground(state, ctx, copy.file)
            fetched.delete(sha256)
          }
        }
        return ok({ changed: true, bytes })
      }
      for (const blob of distinct(missing)) {
        const copy = await fetchBlob(ctx, msg.from, blob, msg.deadlineMs)
        if (!copy.ok) return copy
        fetched.set(blob.sha256, copy.value)
        bytes += blob.size
      }
    }
    return fail('unavailable', `${at.key}: its records kept changing while blobs were fetched`)
  } finally {
    // Copies no blob was made from: their temporary files go.
    for (const copy of fetched.values()) {
      if ('file' in copy) await ctx.blobs.removeTemporary(copy.file)
    }
  }
}

function distinct(blobs: BlobRef[]): BlobRef[] {
  return [...new Map(blobs.map((blob) => [blob.sha256, blob])).values()]
}

/** A record where it is stored: O\0 (current) or V\0. */
interface Placed {
  token: string
  record: ObjectRecord
  current: boolean
}

interface Changes {
  added: Placed[]
  removed: Placed[]
  /** Deletes by id this replica lacks (or holds with an older stamp). */
  deleted: [string, string][]
  /** Anything to write: a record, a delete by id, the key's stamp. */
  any: boolean
}

function placed(held: HeldRecords): Map<string, Placed> {
  const all = new Map<string, Placed>()
  for (const [token, record] of held.versions) {
    all.set(token, { token, record, current: token === held.current })
  }
  return all
}

function samePlace(a: Placed, b: Placed): boolean {
  return a.current === b.current && canonical(a.record) === canonical(b.record)
}

/** The records to remove and to write to go from `mine` to `merged`. */
function changesOf(mine: HeldRecords, merged: HeldRecords): Changes {
  const before = placed(mine)
  const after = placed(merged)
  const added: Placed[] = []
  const removed: Placed[] = []
  for (const [token, was] of before) {
    const now = after.get(token)
    if (now === undefined || !samePlace(was, now)) removed.push(was)
  }
  for (const [token, now] of after) {
    const was = before.get(token)
    if (was === undefined || !samePlace(was, now)) added.push(now)
  }
  const deleted = [...merged.deleted].filter(([token, stamp]) => mine.deleted.get(token) !== stamp)
  const stamp = merged.stamp !== mine.stamp
  const any = added.length > 0 || removed.length > 0 || deleted.length > 0 || stamp
  return { added, removed, deleted, any }
}

/** Prepares the batch: references first (a blob kept by a record that moves stays alive), then the
 * removals, then the writes. Answers the blobs it created from fetched copies. */
function writeMerged(
  mutation: Mutation,
  at: { bucket: string; key: string },
  merged: HeldRecords,
  changes: Changes,
  fetched: ReadonlyMap<string, FetchedBlob>,
): string[] {
  const created: string[] = []
  for (const { record } of changes.added) {
    for (const blob of blobsOf(record)) {
      if (mutation.addReference(blob.sha256, fetched.get(blob.sha256))) created.push(blob.sha256)
    }
  }
  for (const { token, current } of changes.removed) {
    if (current) mutation.deleteObject(at.bucket, at.key)
    else mutation.deleteVersion(at.bucket, at.key, token)
  }
  for (const { token, record, current } of changes.added) {
    if (current) mutation.setCurrent(at.bucket, at.key, record)
    else mutation.putVersion(at.bucket, at.key, token, record)
  }
  for (const [token, stamp] of changes.deleted) {
    mutation.put(deletedVersionKey(at.bucket, at.key, token), encoder.encode(stamp))
  }
  if (merged.stamp !== null) raiseKeyStamp(mutation, at, merged.stamp)
  return created
}
