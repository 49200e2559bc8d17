/** @module Tombstone purge after a round (CLUSTER.md section 4, "GC"). A tombstone (a deleted
 * key's stamp, a version deleted by id) keeps a replica still holding what it deleted, or a late
 * copy of that, from bringing it back. Once every replica of its partition holds it, only such a
 * copy could, arriving later than the grace (SVC_GC_GRACE_DAYS, longer than a node may be away and
 * rejoin with its data). So after a round, each partition this node replicates whose every other
 * replica was compared in that round and found alike has its tombstones older than now - grace
 * purged by the local store (`ae.purge`, a bounded batch a call). Alike: equal roots, or keys
 * that differ only by tombstones past the grace that one side purged already (key.sync found
 * nothing to replay either way; on the node of the pair that leaves the sync to the other, both
 * replicas' manifests of those keys say so). Each node purges its own replicas after its own
 * round; a pair where one has purged and the other not yet is alike by the same rule, so the
 * other purges next. A partition's keys are walked at most once per WALK_EVERY_GRACE of the grace
 * (a walk reads each of its keys): a tombstone lives at most that much longer than the grace. */
import type { Context } from '../../protocol/actor.js'
import {
  AE_PURGE_KEYS_MAX,
  gcGraceMs,
  unpurged,
  type AntiEntropyMsg,
  type KeyCursor,
  type KeyManifest,
  type Purged,
} from '../../protocol/anti-entropy.js'
import type { Result } from '../../protocol/errors.js'
import type { AntiEntropyState } from './anti-entropy.js'

/** A partition is walked again after this fraction of the grace at the soonest. */
const WALK_EVERY_GRACE = 1 / 16
/** ae.purge calls one partition's walk makes at most (each walks AE_PURGE_KEYS_MAX keys). */
const PURGE_CALLS_MAX = 100_000
const CALL_MS = 10_000

export interface TombstoneGc {
  graceMs: number
  /** Partitions found alike with each peer in the round in progress. */
  alike: Map<string, Set<number>>
  /** When each partition's keys were last walked. */
  walkedAtMs: Map<number, number>
}

export function startGc(ctx: Context): TombstoneGc {
  return { graceMs: gcGraceMs(ctx.config), alike: new Map(), walkedAtMs: new Map() }
}

/** A round starts: only what it finds counts. */
export function beginGcRound(state: AntiEntropyState): void {
  state.gc.alike.clear()
}

/** Notes that `peer` holds `partition` as this node does, in the round in progress. */
export function markAlike(state: AntiEntropyState, peer: string, partition: number): void {
  const partitions = state.gc.alike.get(peer) ?? new Set<number>()
  partitions.add(partition)
  state.gc.alike.set(peer, partitions)
}

/** Keys whose manifests purgedApart reads at most; a partition with more differing keys waits
 * for a round with fewer. */
const APART_KEYS_MAX = 1_000

/** For the node of a pair that only compares (the other syncs it): whether every key found
 * different differs only by tombstones past the grace, which one replica purged and the other not
 * yet, by both replicas' manifests (`manifests` asks this node's store and the peer's). */
export async function purgedApart(
  state: AntiEntropyState,
  ctx: Context,
  keys: readonly KeyCursor[],
  manifests: (msg: AntiEntropyMsg) => Promise<[Result<KeyManifest>, Result<KeyManifest>]>,
): Promise<boolean> {
  if (keys.length > APART_KEYS_MAX) return false
  for (const key of keys) {
    if (state.stopped) return false
    const [mine, theirs] = await manifests({
      kind: 'key.manifest',
      bucket: key.bucket,
      key: key.key,
      requestId: 'anti-entropy',
      deadlineMs: ctx.now() + CALL_MS,
    })
    if (!mine.ok || !theirs.ok) return false
    const [nowMs, graceMs] = [ctx.now(), state.gc.graceMs]
    const held = JSON.stringify(unpurged(mine.value, nowMs, graceMs))
    if (held !== JSON.stringify(unpurged(theirs.value, nowMs, graceMs))) return false
  }
  return true
}

/** Run at the end of a round: purges the old tombstones of each partition every other replica of
 * which was found alike in it. */
export async function purgeAlike(state: AntiEntropyState, ctx: Context): Promise<void> {
  const replicas = new Map<number, string[]>()
  for (const [peer, partitions] of state.shared) {
    for (const partition of partitions) {
      replicas.set(partition, [...(replicas.get(partition) ?? []), peer])
    }
  }
  const alike = (peer: string, partition: number): boolean =>
    state.gc.alike.get(peer)?.has(partition) === true
  const walkEveryMs = state.gc.graceMs * WALK_EVERY_GRACE
  for (const [partition, peers] of [...replicas].sort(([a], [b]) => a - b)) {
    if (state.stopped) return
    if (!peers.every((peer) => alike(peer, partition))) continue
    const nowMs = ctx.now()
    const walkedAtMs = state.gc.walkedAtMs.get(partition)
    if (walkedAtMs !== undefined && nowMs - walkedAtMs < walkEveryMs) continue
    if (await purgePartition(state, ctx, partition, nowMs - state.gc.graceMs)) {
      state.gc.walkedAtMs.set(partition, nowMs)
    }
  }
}

/** Walks one partition's keys through the local store, counting what it purged: whether it got
 * to the end (else the next round tries again). */
async function purgePartition(
  state: AntiEntropyState,
  ctx: Context,
  partition: number,
  beforeMs: number,
): Promise<boolean> {
  let after: KeyCursor | null = null
  for (let calls = 0; calls < PURGE_CALLS_MAX && !state.stopped; calls++) {
    const answer: Result<Purged> = await ctx.call('replica-store', {
      kind: 'ae.purge',
      partition,
      beforeMs,
      after,
      limit: AE_PURGE_KEYS_MAX,
      requestId: 'anti-entropy',
      deadlineMs: ctx.now() + CALL_MS,
    })
    if (!answer.ok) {
      ctx.log.warn({ partition, detail: answer.detail }, 'anti-entropy: tombstones not purged')
      return false
    }
    state.status.tombstonesPurged += answer.value.purged
    if (answer.value.next === null) return true
    after = answer.value.next
  }
  return false
}
