/** @module Cluster mode: whether this node may rejoin by itself (CLUSTER.md section 9). While it
 * runs, the store notes the time in a local record every ALIVE_EVERY_MS (at most a quarter of the
 * window). A start that finds that note older than SVC_MAX_REJOIN_DOWNTIME_DAYS means the node was
 * down longer than the cluster keeps tombstones safely for it: its replicas may hold objects
 * deleted since, whose tombstones were purged, which repair would bring back. Such a node is
 * `needs_bootstrap` (a second local record keeps it so across restarts): gossip says so, the other
 * nodes count it in no quorum and compare nothing with it, `/health` answers 503, until
 * `POST /admin/node/bootstrap` wipes its object data (every bucket emptied, the catalog kept) and
 * anti-entropy syncs it from its peers (`anti-entropy.bootstrap`). A node with no note (a new
 * one, or a replacement with an empty disk) serves at once; a bootstrap may be asked of a serving
 * node too, to resync it. */
import type { Context } from '../../../protocol/actor.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import type { NodePhase } from '../../../protocol/cluster.js'
import type { BootstrapJob, BootstrapSynced } from '../../../protocol/messages.js'
import { emptyBucket } from '../engine/buckets.js'
import { BUCKET_END, BUCKET_PREFIX, localKey } from '../keys.js'
import type { StoreState } from '../store-state.js'
import { getLocalRecord, putLocalRecord } from '../system/system.js'

export const ALIVE_RECORD = 'node.alive-at'
export const BOOTSTRAP_RECORD = 'node.bootstrap'
const ALIVE_EVERY_MS_MAX = 60_000
/** A bootstrap's sync may take long (every object of the node's partitions is copied). */
const BOOTSTRAP_SYNC_MS = 6 * 3_600_000
/** Buckets a wipe empties at most (the catalog's bound is far above any real count). */
const WIPE_BUCKETS_MAX = 1_000_000
const DAY_MS = 86_400_000
const encoder = new TextEncoder()

export type RejoinPhase = 'ok' | 'needs_bootstrap' | 'bootstrapping'

/** At start: reads the notes and says whether the node must be bootstrapped. */
export async function checkRejoin(state: StoreState, ctx: Context): Promise<void> {
  const windowMs = Number(ctx.config['SVC_MAX_REJOIN_DOWNTIME_DAYS'] ?? '3') * DAY_MS
  const needed = getLocalRecord(BOOTSTRAP_RECORD, ctx)
  const alive = getLocalRecord(ALIVE_RECORD, ctx)
  const aliveText = alive.ok && alive.value !== null ? new TextDecoder().decode(alive.value) : ''
  const downMs = aliveText === '' ? NaN : ctx.now() - Number(aliveText)
  if (needed.ok && needed.value !== null) {
    state.rejoin = 'needs_bootstrap'
  } else if (Number.isFinite(downMs) && downMs > windowMs) {
    state.rejoin = 'needs_bootstrap'
    await putLocalRecord(state, BOOTSTRAP_RECORD, encoder.encode('needed'), ctx)
    ctx.log.warn(
      { downMs, windowMs },
      'down longer than SVC_MAX_REJOIN_DOWNTIME_DAYS: this node needs a bootstrap',
    )
  }
  scheduleAliveNote(state, ctx, Math.min(ALIVE_EVERY_MS_MAX, windowMs / 4))
}

function scheduleAliveNote(state: StoreState, ctx: Context, everyMs: number): void {
  if (state.stopping) return
  state.cancelAliveNote = ctx.after(everyMs, () => {
    void noteAlive(state, ctx).finally(() => scheduleAliveNote(state, ctx, everyMs))
  })
}

async function noteAlive(state: StoreState, ctx: Context): Promise<void> {
  // A node that must be bootstrapped is not up to date: its downtime goes on counting.
  if (state.rejoin !== 'ok' || state.stopping) return
  await putLocalRecord(state, ALIVE_RECORD, encoder.encode(String(ctx.now())), ctx)
}

/** The node's phase once the catalog is in sync. */
export function servingPhase(state: StoreState): NodePhase {
  return state.rejoin === 'ok' ? 'serving' : state.rejoin
}

/** Starts a bootstrap: its job at once (202); the wipe and the sync run behind it. */
export function startBootstrap(state: StoreState, ctx: Context): Result<BootstrapJob> {
  if (state.catalog === null) return fail('invalid_request', 'bootstrap is for cluster nodes')
  if (!state.catalog.synced) return fail('unavailable', 'the node is still joining')
  if (state.bootstrap.state === 'running') return ok({ ...state.bootstrap })
  const id = `bootstrap-${Buffer.from(ctx.randomBytes(6)).toString('hex')}`
  state.bootstrap = { id, state: 'running', startedMs: ctx.now() }
  const run = runBootstrap(state, ctx).catch((error: unknown) => {
    state.bootstrap = { ...state.bootstrap, state: 'failed', error: String(error) }
  })
  state.tasks.add(run)
  void run.finally(() => state.tasks.delete(run))
  return ok({ ...state.bootstrap })
}

async function runBootstrap(state: StoreState, ctx: Context): Promise<void> {
  state.rejoin = 'bootstrapping'
  await putLocalRecord(state, BOOTSTRAP_RECORD, encoder.encode('running'), ctx)
  await announcePhase(ctx, 'bootstrapping')
  const deadlineMs = ctx.now() + BOOTSTRAP_SYNC_MS
  for (const bucket of bucketNames(ctx)) {
    const emptied = await emptyBucket(state, ctx, bucket, deadlineMs)
    if (!emptied.ok) return failBootstrap(state, ctx, `wipe of ${bucket}: ${emptied.detail}`)
  }
  const synced = await ctx.call('anti-entropy', {
    kind: 'anti-entropy.bootstrap',
    requestId: state.bootstrap.id,
    deadlineMs,
  })
  if (!synced.ok) return failBootstrap(state, ctx, `sync: ${synced.detail}`)
  if (synced.value.unreached.length > 0) {
    return failBootstrap(state, ctx, `peers not reached: ${synced.value.unreached.join(', ')}`)
  }
  await putLocalRecord(state, ALIVE_RECORD, encoder.encode(String(ctx.now())), ctx)
  await ctx.kv.commit([{ type: 'del', key: localKey(BOOTSTRAP_RECORD) }])
  state.rejoin = 'ok'
  state.bootstrap = {
    ...state.bootstrap,
    state: 'done',
    finishedMs: ctx.now(),
    keysSynced: synced.value.keysSynced,
  }
  await announcePhase(ctx, 'serving')
  ctx.log.info({ keysSynced: synced.value.keysSynced }, 'bootstrap done: serving')
}

async function failBootstrap(state: StoreState, ctx: Context, error: string): Promise<void> {
  state.rejoin = 'needs_bootstrap'
  await putLocalRecord(state, BOOTSTRAP_RECORD, encoder.encode('needed'), ctx)
  state.bootstrap = { ...state.bootstrap, state: 'failed', finishedMs: ctx.now(), error }
  await announcePhase(ctx, 'needs_bootstrap')
  ctx.log.error({ error }, 'bootstrap failed: the node still needs one')
}

/** Tells gossip the node's phase, which it spreads to the other members. */
export async function announcePhase(
  ctx: Context,
  phase: NodePhase,
  deadlineMs = ctx.now() + 10_000,
): Promise<void> {
  const told = await ctx.call('gossiper', {
    kind: 'membership.update-self',
    phase,
    requestId: 'phase',
    deadlineMs,
  })
  if (!told.ok) ctx.log.warn({ phase, detail: told.detail }, 'gossip not told the phase')
}

function bucketNames(ctx: Context): string[] {
  return ctx.kv
    .scan({ gte: BUCKET_PREFIX, lt: BUCKET_END, limit: WIPE_BUCKETS_MAX })
    .map(([key]) => key.slice(BUCKET_PREFIX.length))
}
