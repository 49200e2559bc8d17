/** @module The replica-store's state and the two effects every mutation shares: committing a
 * prepared Mutation and collecting the garbage files it released. The state holds only what is in
 * flight (the metadata itself lives in ctx.kv), so a restart is exactly a new `init`. */
import type { BootstrapJob } from '../../protocol/messages.js'
import type { RejoinPhase } from './replication/rejoin.js'
import assert from 'node:assert/strict'
import type { ByteSink, Context, ShardLocks } from '../../protocol/actor.js'
import { ServiceError } from '../../protocol/errors.js'
import type { CatalogState } from './replication/catalog-state.js'
import { garbageKey } from './keys.js'
import { ShardContention, type Mutation } from './mutation.js'

export interface StoreState {
  /** Work that outlives the request that started it (commits, promotions, garbage removal);
   * `stop` waits for all of it. */
  readonly tasks: Set<Promise<void>>
  /** Promotions in flight by file id: garbage removal and readers of that file wait for them. */
  readonly promoting: Map<string, Promise<void>>
  /** GET streams sending now, by their pump (each holds an open file); bounded by
   * GET_STREAMS_MAX. `stop` aborts them rather than wait: a slow receiver must not hold it. */
  readonly streams: Map<Promise<void>, ByteSink>
  /** Blob files a GET of a multipart object will still read, with how many GETs will: such a
   * file is opened only when the stream reaches it, so its removal as garbage waits until then. */
  readonly pinned: Map<string, number>
  /** Garbage files whose removal waits for their pins to go. */
  readonly deferred: Set<string>
  /** Removals of garbage files under way (a delete answers before them): a write that finds no
   * room waits for them (put.ts). */
  readonly removing: Set<Promise<void>>
  /** Set by `stop`: GET streams end at their next chunk. */
  stopping: boolean
  /** Cancels the next sweep of expired uploads (see expiry.ts). */
  cancelExpiry: () => void
  /** The clock of the last version token drawn (versions.ts): tokens strictly increase. */
  lastVersionMicros: number
  /** Cluster mode's catalog clock and claims; null on a single node. */
  catalog: CatalogState | null
  /** Cluster mode: keys held by conditional writes (key-claims.ts), by bucket and key. */
  readonly keyClaims: Map<string, { claimant: string; expiresMs: number }>
  /** Cluster mode: hints kept (hints.ts), counted at start. */
  hintsPending: number
  /** Hints kept per replica they name. */
  hintsPerNode: Map<string, number>
  /** Replicas away longer than the hint TTL (the hint queue says which): no hint is kept for
   * them. */
  hintsClosed: ReadonlySet<string>
  /** Requests being handled now (with `streams`, the load the scrubber yields to). */
  handling: number
  /** Blobs whose bytes failed their CRC32 here since the store started (a GET met them, or the
   * scrubber's verdict), until the scrubber clears or heals them: reads of their bytes answer
   * `corrupt` at once (damaged.ts). Bounded by DAMAGED_MAX, oldest forgotten first. */
  readonly damaged: Set<string>
  /** Cluster mode: whether the node may serve its replicas, or must be bootstrapped first
   * (rejoin.ts), and its bootstrap job. */
  rejoin: RejoinPhase
  bootstrap: BootstrapJob
  cancelAliveNote: () => void
  /** Which store shard this is, of how many (runtime/store-shards.ts), with the locks the shards
   * share: its mutations claim what other shards also change, and keep their own counters. */
  shard: ShardLocks
}

/** GET streams at once. Every other task is bounded by the requests in flight (the runtime's
 * mailbox), but a stream outlives its request; past this bound a GET of a file blob is answered
 * `busy`. Each holds a file descriptor and at most a credit window (1 MiB) of chunks in flight. */
export const GET_STREAMS_MAX = 256
/** Tries of a mutation whose records another store shard holds, and the longest wait between two
 * (a claim lasts one batch's commit). The request's deadline bounds the waiting; the count only
 * bounds the loop: every release wakes every waiter of its stripe, and on a record many writes
 * take (one body written over and over) a write waits for its turn over many wakes. */
const CLAIM_TRIES_MAX = 100_000
const CLAIM_WAIT_MS = 1_000
/** How often garbage files another shard pins are looked at again. */
const FOREIGN_PIN_RETRY_MS = 5_000

export function createState(shard: ShardLocks): StoreState {
  return {
    tasks: new Set(),
    promoting: new Map(),
    streams: new Map(),
    pinned: new Map(),
    deferred: new Set(),
    removing: new Set(),
    stopping: false,
    cancelExpiry: () => undefined,
    rejoin: 'ok',
    bootstrap: { id: '', state: 'idle' },
    cancelAliveNote: () => undefined,
    lastVersionMicros: 0,
    catalog: null,
    keyClaims: new Map(),
    hintsPending: 0,
    hintsPerNode: new Map(),
    hintsClosed: new Set(),
    handling: 0,
    damaged: new Set(),
    shard,
  }
}

/** Tries a mutation's preparation and commit again while a record it needs is another store
 * shard's (ShardContention), each time once that claim changed, until `deadlineMs` or
 * CLAIM_TRIES_MAX tries; then the request answers `busy`. `attempt` must prepare its mutation
 * before its first await, so a try that lost its claim has changed nothing. */
export async function retryingClaims<T>(
  ctx: Context,
  deadlineMs: number,
  attempt: () => Promise<T>,
): Promise<T> {
  const waitedFor = new Set<string>()
  try {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt()
      } catch (error) {
        if (!(error instanceof ShardContention) || tries >= CLAIM_TRIES_MAX) throw error
        const waitUntilMs = Math.min(deadlineMs, ctx.now() + CLAIM_WAIT_MS)
        if (waitUntilMs <= ctx.now()) throw error
        waitedFor.add(error.claimName)
        await ctx.shardLocks.changed(error.claimName, error.seen, waitUntilMs)
      }
    }
  } finally {
    for (const name of waitedFor) ctx.shardLocks.stopWaiting(name)
  }
}

/** Runs `work` in the background; failures are logged (each task reports its own failures to
 * whoever waits on it, this is the last resort). */
export function track(state: StoreState, ctx: Context, what: string, work: Promise<void>): void {
  const task = work.then(
    () => undefined,
    (error: unknown) => ctx.log.error({ err: error, task: what }, 'replica-store task failed'),
  )
  state.tasks.add(task)
  void task.finally(() => state.tasks.delete(task))
}

/** Commits a prepared mutation, then removes the files it made garbage in the background. Must be
 * called right after the mutation is prepared, with no await in between. */
export async function commitMutation(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
): Promise<void> {
  mutation.handOverClaims()
  try {
    const ops = mutation.ops()
    if (state.catalog !== null) ops.push(...state.catalog.stampOps(mutation.catalogKeys))
    await durably(state, ctx, ctx.kv.commit(ops))
  } finally {
    mutation.releaseClaims()
  }
  if (mutation.garbage.length > 0) {
    track(state, ctx, 'garbage', removeGarbage(state, ctx, mutation.garbage))
  }
}

/** Waits for a kv commit, which `stop` also waits for. A commit that fails leaves the kv's state
 * unknown (it refuses every later commit, see runtime/rocks-kv.ts), so this incarnation of the
 * actor cannot go on: the failure is fatal, and the supervisor's restart reopens the store and
 * recovers it from what is durable. Except `insufficient_storage`: the batch did not land and the
 * kv goes on once it has room, so the request answers 507 and the actor stays. */
export async function durably(
  state: StoreState,
  ctx: Context,
  committed: Promise<void>,
): Promise<void> {
  track(state, ctx, 'commit', committed)
  try {
    await committed
  } catch (error) {
    if (isNoRoom(error)) throw error
    assert.fail(`replica-store: metadata commit failed: ${String(error)}`)
  }
}

/** A write the data volume had no room for. */
export function isNoRoom(error: unknown): error is ServiceError {
  return error instanceof ServiceError && error.code === 'insufficient_storage'
}

/** Removes files whose blobs are gone, then their garbage records. A file still being promoted is
 * removed after the promotion, so a rename cannot bring it back after the removal. A pinned file
 * (a GET will still read it) is left, with its garbage record, until its last pin goes; a crash
 * meanwhile leaves the record to recovery. */
export async function removeGarbage(
  state: StoreState,
  ctx: Context,
  fileIds: readonly string[],
): Promise<void> {
  const removable = fileIds.filter((id) => !ctx.shardLocks.pinned(id))
  const othersPin: string[] = []
  for (const id of fileIds) {
    if (state.pinned.has(id)) state.deferred.add(id)
    else if (ctx.shardLocks.pinned(id)) othersPin.push(id)
  }
  // Another shard's reader (or a stripe's other file) holds them: this shard's unpins will not
  // say when they go, so it looks again.
  if (othersPin.length > 0) {
    // After a stop, the garbage records stay for the next start's recovery.
    ctx.after(FOREIGN_PIN_RETRY_MS, () => {
      if (!state.stopping) track(state, ctx, 'garbage', removeGarbage(state, ctx, othersPin))
    })
  }
  const removed = removeFiles(state, ctx, removable)
  state.removing.add(removed)
  try {
    await removed
  } finally {
    state.removing.delete(removed)
  }
  if (removable.length === 0) return
  await ctx.kv.commit(removable.map((id) => ({ type: 'del', key: garbageKey(id) })))
}

async function removeFiles(state: StoreState, ctx: Context, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    await state.promoting.get(id)?.catch(() => undefined)
    await ctx.blobs.remove(id)
  }
}

/** Keeps `fileIds` from removal until `unpin`; a GET pins the files it has not opened yet. */
export function pin(state: StoreState, fileIds: readonly string[]): void {
  for (const id of fileIds) {
    state.pinned.set(id, (state.pinned.get(id) ?? 0) + 1)
    state.shard.pin(id)
  }
}

export function unpin(state: StoreState, ctx: Context, fileIds: readonly string[]): void {
  const released: string[] = []
  for (const id of fileIds) {
    const count = state.pinned.get(id)
    assert(count !== undefined && count > 0, 'unpin of a file that is not pinned')
    state.shard.unpin(id)
    if (count > 1) {
      state.pinned.set(id, count - 1)
      continue
    }
    state.pinned.delete(id)
    if (state.deferred.delete(id)) released.push(id)
  }
  if (released.length > 0) track(state, ctx, 'garbage', removeGarbage(state, ctx, released))
}

/** Promotes a committed temporary file in the background: the put is already durable (its file
 * was synced and the metadata says where it is), so the reply does not wait for the rename. */
export function promoteInBackground(state: StoreState, ctx: Context, fileId: string): void {
  assert(!state.promoting.has(fileId))
  // Pinned while it moves, so that no other shard removes it meanwhile as garbage.
  pin(state, [fileId])
  const promotion = ctx.blobs.promote(fileId)
  state.promoting.set(fileId, promotion)
  track(
    state,
    ctx,
    'promote',
    promotion.finally(() => {
      state.promoting.delete(fileId)
      unpin(state, ctx, [fileId])
    }),
  )
}
