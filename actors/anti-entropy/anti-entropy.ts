/** @module Anti-entropy (cluster mode, CLUSTER.md section 7): every SVC_ANTI_ENTROPY_INTERVAL_SECS
 * (±10%) a round compares this node's replicas with each Alive peer of its pool, over the
 * partitions both replicate, through the digests every store keeps in the batch of each change
 * (protocol/anti-entropy.ts): the roots of all shared partitions in one call each side, then the
 * leaves of a partition whose roots differ, then the keys of a leaf whose digests differ. Each key
 * found different is synced both ways by the coordinator (`key.sync`), by the node of the pair
 * with the lower id (the other compares only: one side's work is enough), so a pair converges in
 * one round, at most THROTTLE.itemsPerSecond keys and THROTTLE.bytesPerSecond copied bytes a
 * second. Where a round is (peer, partition) is saved in a local record after each partition it
 * had to repair, and a restarted actor goes on from there. Hints bring most misses within
 * seconds; this finds what they could not (expired hints, a lost store, states repair does not
 * replay). After a round, the partitions every other replica held alike have their tombstones
 * past SVC_GC_GRACE_DAYS purged (tombstone-gc.ts). */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { Actor, Context } from '../../protocol/actor.js'
import {
  AE_KEYS_PAGE_MAX,
  type AntiEntropyActorMsg,
  type AntiEntropyMsg,
  type AntiEntropyPeer,
  type AntiEntropyStatus,
  type KeyCursor,
  type KeyDigest,
  type KeyManifest,
} from '../../protocol/anti-entropy.js'
import { ok, unreachable, type Result } from '../../protocol/errors.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { BootstrapSynced, KeySynced } from '../../protocol/messages.js'
import { parsePoolNodes, partitionTable } from '../../protocol/placement.js'
import type { PeerTarget } from '../../protocol/cluster.js'
import {
  beginGcRound,
  markAlike,
  purgeAlike,
  purgedApart,
  startGc,
  type TombstoneGc,
} from './tombstone-gc.js'

export const THROTTLE = { itemsPerSecond: 200, bytesPerSecond: 32 * 1024 * 1024 }
/** Pages of one leaf's keys read at most (each AE_KEYS_PAGE_MAX keys). */
const KEY_PAGES_MAX = 100
/** A call that moves no bytes; a key's sync, which may copy objects, gets longer. */
const CALL_MS = 10_000
const SYNC_MS = 60_000
/** The local record of where a round is. */
export const ROUND_RECORD = 'anti-entropy.round'

interface RoundCursor {
  peer: string
  partition: number
}

export interface AntiEntropyState {
  self: string
  intervalMs: number
  /** Partitions each peer of the pool replicates with this node, in order. */
  shared: Map<string, number[]>
  status: AntiEntropyStatus
  peers: Map<string, AntiEntropyPeer>
  /** Where the round in progress (or the one a restart interrupted) goes on from. */
  cursor: RoundCursor | null
  stopped: boolean
  cancelRound: () => void
  /** What the purge of old tombstones after each round needs (tombstone-gc.ts). */
  gc: TombstoneGc
}

export const antiEntropy: Actor<AntiEntropyState, 'anti-entropy'> = {
  name: 'anti-entropy',
  async init(ctx) {
    const self = ctx.config['SVC_NODE_ID']
    const seconds = Number(ctx.config['SVC_ANTI_ENTROPY_INTERVAL_SECS'] ?? '600')
    const pool = parsePoolNodes(ctx.config['SVC_POOL_NODES'] ?? '')
    assert(self !== undefined && typeof pool !== 'string', 'anti-entropy needs a pool')
    assert(Number.isFinite(seconds) && seconds > 0, 'SVC_ANTI_ENTROPY_INTERVAL_SECS')
    const ids = pool.map((node) => node.id)
    const rf = Number(ctx.config['SVC_REPLICATION_FACTOR'] ?? '3')
    const state: AntiEntropyState = {
      self,
      intervalMs: seconds * 1000,
      shared: sharedPartitions(self, ids, partitionTable(ids, Math.min(rf, ids.length))),
      status: {
        rounds: 0,
        lastRoundAtMs: null,
        itemsRepaired: 0,
        tombstonesPurged: 0,
        throttle: { ...THROTTLE },
        peers: [],
      },
      peers: new Map(),
      cursor: await loadCursor(ctx),
      stopped: false,
      cancelRound: () => undefined,
      gc: startGc(ctx),
    }
    scheduleRound(state, ctx)
    return state
  },
  handlers: {
    'anti-entropy.status': (state) => ok({ ...state.status, peers: [...state.peers.values()] }),
    'anti-entropy.bootstrap': (state, _msg, ctx) => bootstrapRound(state, ctx),
  },
  stop(state) {
    state.stopped = true
    state.cancelRound()
  },
}

function sharedPartitions(self: string, ids: readonly string[], table: readonly string[][]) {
  const shared = new Map<string, number[]>()
  for (const peer of ids) {
    if (peer === self) continue
    const both = table.flatMap((replicas, p) =>
      replicas.includes(self) && replicas.includes(peer) ? [p] : [],
    )
    if (both.length > 0) shared.set(peer, both)
  }
  return shared
}

/** The next round, after the interval ±10% (nodes started together drift apart). */
function scheduleRound(state: AntiEntropyState, ctx: Context): void {
  if (state.stopped) return
  const spread = new DataView(ctx.randomBytes(4).buffer).getUint32(0) / 2 ** 32
  const delayMs = Math.round(state.intervalMs * (0.9 + 0.2 * spread))
  state.cancelRound = ctx.after(delayMs, () => {
    void round(state, ctx).finally(() => scheduleRound(state, ctx))
  })
}

async function round(state: AntiEntropyState, ctx: Context): Promise<void> {
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: 'anti-entropy',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!view.ok) return
  // A node that must be bootstrapped holds what may have been deleted since: it pushes nothing.
  if (view.value.self.phase !== 'serving') return
  beginGcRound(state)
  const resumed = state.cursor
  const peers = [...state.shared.keys()].sort()
  const first = resumed === null ? 0 : Math.max(0, peers.indexOf(resumed.peer))
  for (const peer of peers.slice(first)) {
    if (state.stopped) return
    const member = view.value.members.find((one) => one.id === peer)
    if (member === undefined || member.status !== 'Alive' || member.phase !== 'serving') continue
    const replica: Replica = {
      id: peer,
      local: false,
      target: { id: peer, grpcAddr: member.grpcAddr },
    }
    const from = resumed !== null && resumed.peer === peer ? resumed.partition : 0
    // Of the two nodes of a pair, the one with the lower id syncs; the other only compares.
    await comparePeer(state, ctx, replica, from, state.self < peer)
  }
  state.cursor = null
  await saveCursor(ctx, null)
  await purgeAlike(state, ctx)
  state.status.rounds++
  state.status.lastRoundAtMs = ctx.now()
}

/** A store anti-entropy asks: this node's, or a peer's through Replica.Op. */
interface Replica {
  id: string
  local: boolean
  target: PeerTarget
}

/** A bootstrap's round (the store wiped this node's object data): every shared partition with
 * every Alive, serving peer, from the first; says how many keys it synced and whom it could not
 * compare with. */
async function bootstrapRound(
  state: AntiEntropyState,
  ctx: Context,
): Promise<Result<BootstrapSynced>> {
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: 'anti-entropy',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!view.ok) return view
  const before = state.status.itemsRepaired
  const unreached: string[] = []
  for (const peer of [...state.shared.keys()].sort()) {
    const member = view.value.members.find((one) => one.id === peer)
    if (member === undefined || member.status !== 'Alive' || member.phase !== 'serving') {
      // A peer down or itself stale has nothing to give; the others hold every partition too.
      continue
    }
    const target = { id: peer, grpcAddr: member.grpcAddr }
    await comparePeer(state, ctx, { id: peer, local: false, target }, 0, true)
    if (state.peers.get(peer)?.error !== undefined) unreached.push(peer)
  }
  return ok({ keysSynced: state.status.itemsRepaired - before, unreached })
}

const local: Replica = { id: '', local: true, target: { id: '', grpcAddr: '' } }

function askReplica<T>(ctx: Context, replica: Replica, msg: AntiEntropyMsg): Promise<Result<T>> {
  // As the coordinator's: the reply named is the one the message's kind gets, local or remote.
  if (replica.local) return ctx.call('replica-store', msg) as Promise<Result<T>>
  return ctx.peers.call<T>(replica.target, 'Replica.Op', { msg }, msg.deadlineMs)
}

/** Compares the partitions this node shares with `peer` (from partition `from` on) and, when it
 * `drives` the pair, syncs every key that differs (both ways: one side's work is enough). */
async function comparePeer(
  state: AntiEntropyState,
  ctx: Context,
  peer: Replica,
  from: number,
  drives: boolean,
): Promise<void> {
  const shared = (state.shared.get(peer.id) ?? []).filter((p) => p >= from)
  const known = state.peers.get(peer.id)
  const record: AntiEntropyPeer = known ?? {
    node: peer.id,
    lastFullSyncMs: null,
    diverged: 0,
    rootsDigest: null,
  }
  state.peers.set(peer.id, record)
  delete record.error
  const ask = { kind: 'ae.roots' as const, partitions: shared, requestId: 'anti-entropy' }
  const [mine, theirs] = await Promise.all([
    askReplica<(string | null)[]>(ctx, local, { ...ask, deadlineMs: ctx.now() + CALL_MS }),
    askReplica<(string | null)[]>(ctx, peer, { ...ask, deadlineMs: ctx.now() + CALL_MS }),
  ])
  if (!mine.ok || !theirs.ok) {
    record.error = `roots: ${mine.ok ? (theirs.ok ? '' : theirs.detail) : mine.detail}`
    return
  }
  record.rootsDigest = digestOf(mine.value)
  let diverged = 0
  let settled = true
  for (const [index, partition] of shared.entries()) {
    if (state.stopped) return
    if (mine.value[index] === theirs.value[index]) {
      markAlike(state, peer.id, partition)
      continue
    }
    const outcome = await syncPartition(state, ctx, peer, partition, drives)
    if (outcome.reached && outcome.alike) markAlike(state, peer.id, partition)
    diverged += outcome.diverged
    settled &&= outcome.settled
    if (!outcome.reached) {
      record.error = outcome.error ?? 'unreached'
      record.diverged = diverged
      return
    }
    if (!drives) continue
    state.cursor = { peer: peer.id, partition: partition + 1 }
    await saveCursor(ctx, state.cursor)
  }
  record.diverged = diverged
  if (settled) record.lastFullSyncMs = ctx.now()
}

interface PartitionOutcome {
  diverged: number
  /** Every key that differed was synced. */
  settled: boolean
  /** The pair holds the same records but for tombstones past the grace that one of them purged
   * (tombstone-gc.ts): key.sync had nothing to replay either way, or, where the peer syncs, the
   * keys' manifests differ only by those. */
  alike: boolean
  reached: boolean
  error?: string
}

async function syncPartition(
  state: AntiEntropyState,
  ctx: Context,
  peer: Replica,
  partition: number,
  drives: boolean,
): Promise<PartitionOutcome> {
  const ask = { kind: 'ae.leaves' as const, partition, requestId: 'anti-entropy' }
  type Leaves = { leaf: number; digest: string }[]
  const [mine, theirs] = await Promise.all([
    askReplica<Leaves>(ctx, local, { ...ask, deadlineMs: ctx.now() + CALL_MS }),
    askReplica<Leaves>(ctx, peer, { ...ask, deadlineMs: ctx.now() + CALL_MS }),
  ])
  if (!mine.ok || !theirs.ok) {
    return {
      diverged: 0,
      settled: false,
      alike: false,
      reached: false,
      error: 'leaves unavailable',
    }
  }
  const outcome: PartitionOutcome = { diverged: 0, settled: true, alike: true, reached: true }
  const manifests = (msg: AntiEntropyMsg) =>
    Promise.all([askReplica<KeyManifest>(ctx, local, msg), askReplica<KeyManifest>(ctx, peer, msg)])
  for (const leaf of differing(mine.value, theirs.value)) {
    const keys = await differingKeys(ctx, peer, partition, leaf)
    if (keys === null) return { ...outcome, reached: false, error: 'keys unavailable' }
    outcome.diverged += keys.length
    if (!drives) {
      outcome.settled &&= keys.length === 0
      outcome.alike &&= await purgedApart(state, ctx, keys, manifests)
      continue
    }
    for (const key of keys) {
      if (state.stopped) return outcome
      const started = ctx.now()
      const synced = await ctx.call('coordinator', {
        kind: 'key.sync',
        bucket: key.bucket,
        key: key.key,
        nodes: [state.self, peer.id],
        requestId: 'anti-entropy',
        deadlineMs: ctx.now() + SYNC_MS,
      })
      if (!synced.ok) {
        outcome.settled = false
        outcome.alike = false
        if (synced.code === 'unavailable') {
          return { ...outcome, reached: false, error: `sync: ${synced.detail}` }
        }
        continue
      }
      state.status.itemsRepaired += synced.value.replayed
      if (synced.value.replayed > 0) outcome.alike = false
      await throttle(ctx, started, synced.value.bytes)
    }
  }
  return outcome
}

/** Leaves whose digests differ (present on one side only included), in order. */
function differing(
  mine: readonly { leaf: number; digest: string }[],
  theirs: readonly { leaf: number; digest: string }[],
): number[] {
  const digests = new Map(mine.map((one) => [one.leaf, one.digest]))
  const leaves = new Set<number>()
  for (const one of theirs) {
    if (digests.get(one.leaf) !== one.digest) leaves.add(one.leaf)
    digests.delete(one.leaf)
  }
  for (const leaf of digests.keys()) leaves.add(leaf)
  return [...leaves].sort((a, b) => a - b)
}

/** The keys of a leaf whose digests differ between this node and `peer`; null when either
 * could not list them. */
async function differingKeys(
  ctx: Context,
  peer: Replica,
  partition: number,
  leaf: number,
): Promise<KeyCursor[] | null> {
  const [mine, theirs] = await Promise.all([
    leafKeys(ctx, local, partition, leaf),
    leafKeys(ctx, peer, partition, leaf),
  ])
  if (mine === null || theirs === null) return null
  const name = (one: KeyCursor): string => `${one.bucket}\0${one.key}`
  const digests = new Map(mine.map((one) => [name(one), one]))
  const found: KeyCursor[] = []
  for (const one of theirs) {
    const held = digests.get(name(one))
    if (held?.digest !== one.digest) found.push({ bucket: one.bucket, key: one.key })
    digests.delete(name(one))
  }
  for (const one of digests.values()) found.push({ bucket: one.bucket, key: one.key })
  return found
}

async function leafKeys(
  ctx: Context,
  replica: Replica,
  partition: number,
  leaf: number,
): Promise<KeyDigest[] | null> {
  const keys: KeyDigest[] = []
  let after: KeyCursor | null = null
  for (let page = 0; page < KEY_PAGES_MAX; page++) {
    const listed: Result<KeyDigest[]> = await askReplica<KeyDigest[]>(ctx, replica, {
      kind: 'ae.keys',
      partition,
      leaf,
      after,
      limit: AE_KEYS_PAGE_MAX,
      requestId: 'anti-entropy',
      deadlineMs: ctx.now() + CALL_MS,
    })
    if (!listed.ok) return null
    keys.push(...listed.value)
    const last: KeyDigest | undefined = listed.value[listed.value.length - 1]
    if (listed.value.length < AE_KEYS_PAGE_MAX || last === undefined) return keys
    after = { bucket: last.bucket, key: last.key }
  }
  return keys
}

/** Waits until the key just synced (and the bytes it copied) fit the throttle. */
async function throttle(ctx: Context, startedMs: number, bytes: number): Promise<void> {
  const dueMs = Math.max(1000 / THROTTLE.itemsPerSecond, (bytes * 1000) / THROTTLE.bytesPerSecond)
  const waitMs = startedMs + dueMs - ctx.now()
  if (waitMs > 0) await new Promise<void>((resolve) => ctx.after(waitMs, resolve))
}

function digestOf(roots: readonly (string | null)[]): string {
  return createHash('sha256')
    .update(roots.map((root) => root ?? '-').join(','))
    .digest('hex')
}

async function loadCursor(ctx: Context): Promise<RoundCursor | null> {
  const stored = await ctx.call('replica-store', {
    kind: 'system.local-get',
    name: ROUND_RECORD,
    requestId: 'anti-entropy',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!stored.ok || stored.value === null) return null
  try {
    const text = Buffer.from(stored.value).toString('utf8')
    const value = JSON.parse(text) as Partial<RoundCursor> | null
    if (typeof value?.peer === 'string' && Number.isSafeInteger(value.partition)) {
      return { peer: value.peer, partition: value.partition as number }
    }
  } catch {
    // An unreadable record counts as none: the round starts from the first peer.
  }
  return null
}

async function saveCursor(ctx: Context, cursor: RoundCursor | null): Promise<void> {
  const saved = await ctx.call('replica-store', {
    kind: 'system.local-put',
    name: ROUND_RECORD,
    value: new TextEncoder().encode(JSON.stringify(cursor)),
    requestId: 'anti-entropy',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!saved.ok) ctx.log.warn({ detail: saved.detail }, 'anti-entropy: the round record not saved')
}
