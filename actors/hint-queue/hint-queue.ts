/** @module Hint queue (cluster mode): delivers the hints this node's store keeps (replica-store
 * hints.ts) to the replicas they name. It looks at gossip every LOOK_MS; a replica seen coming
 * back Alive gets a pass after a random 0-5 s (so that every node's queue does not start at once),
 * one the store keeps new hints for a pass within NEW_HINTS_PASS_MS (a short cut gossip never
 * saw), and an Alive one with hints left a pass every PASS_MS. A pass pages through the replica's
 * hints; a hint older than SVC_HINT_TTL_HOURS (by its change's stamp) is dropped as expired, and
 * each other one is delivered by the coordinator (`key.bring`, at most DELIVERIES_AT_ONCE at a
 * time), then removed unless a newer one replaced it meanwhile. A replica that cannot be reached,
 * or this node's store failing a call (restarting), ends the pass, and the next comes
 * UNREACHED_RETRY_MS later; a pass that ends with hints left (recorded behind its cursor meanwhile,
 * or newer than one it delivered) is followed by one within NEW_HINTS_PASS_MS. This node is one of
 * the replicas too: a change its own store missed (it failed the write, or was restarting and took
 * the hint a moment later) is hinted to this node and brought from the others like any.
 *
 * A replica away (not Alive in gossip, or unknown to it) gets expiry passes instead, which only
 * drop its expired hints, every tenth of the TTL (between LOOK_MS and EXPIRY_PASS_MS_MAX): its
 * hints go within about a tenth of the TTL past their expiry though it never comes back. Once it
 * has been away longer than the TTL (counted from when this queue first saw it away), the store
 * is told (`hint.closed`, at every look while any is, as a restarted store forgets) and records
 * no new hint for it: each would expire unread. Anti-entropy or a bootstrap brings it what it
 * missed, as repair does past Cassandra's max_hint_window. The queue keeps no state of its own
 * beyond counters and what it saw of gossip: the hints are the store's. */
import assert from 'node:assert/strict'
import type { Actor, Context, Request } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import { parseHlc } from '../../protocol/hlc.js'
import type { MemberStatus } from '../../protocol/cluster.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { Hint, HintQueueCounters } from '../../protocol/messages.js'

/** How often gossip's view is looked at. */
export const LOOK_MS = 1_000
/** How often an Alive replica with hints left gets another pass; sooner after a pass that could
 * not reach it (gossip may not have seen it gone: a short cut). */
export const PASS_MS = 30_000
export const UNREACHED_RETRY_MS = 5_000
/** A replica gossip never saw leave (cut off for a moment) gets a pass this soon after the store
 * keeps more hints for it than at the last look, rather than at the next round. */
export const NEW_HINTS_PASS_MS = 5_000
/** Expiry passes of a replica away come every tenth of the TTL, within these bounds. */
export const EXPIRY_PASS_MS_MAX = 600_000
/** The most a first pass after a replica came back waits, drawn at random. */
export const COMING_BACK_JITTER_MS = 5_000
/** Hints read per page, and deliveries running at once. */
const PAGE_HINTS = 512
const DELIVERIES_AT_ONCE = 8
/** Pages one pass reads at most: every hint a replica may have (hints.ts HINTS_PER_NODE_MAX). */
const PAGES_PER_PASS_MAX = 2_000
/** A call to the store, the gossiper or the coordinator may take this long. */
const CALL_MS = 30_000
const HOUR_MS = 3_600_000

interface Target {
  alive: boolean
  /** When this queue first saw it away (its virtual ms of ctx.now()), null while it is Alive. */
  awaySinceMs: number | null
  /** Hints the store kept for it at the last look. */
  hints: number
  /** When the next pass may start (virtual ms of ctx.now()). */
  nextPassMs: number
  passing: boolean
}

export interface HintQueueState {
  self: string
  ttlMs: number
  counters: HintQueueCounters
  targets: Map<string, Target>
  /** Replicas away longer than the TTL at the last look (sorted), and whether the store took
   * that list. */
  closed: string[]
  closedTold: boolean
  stopped: boolean
  cancelLook: () => void
}

export const hintQueue: Actor<HintQueueState, 'hint-queue'> = {
  name: 'hint-queue',
  init(ctx) {
    const self = ctx.config['SVC_NODE_ID']
    const hours = Number(ctx.config['SVC_HINT_TTL_HOURS'] ?? '3')
    assert(self !== undefined && Number.isFinite(hours) && hours > 0, 'hint queue settings')
    const state: HintQueueState = {
      self,
      ttlMs: hours * HOUR_MS,
      counters: { delivered: 0, expired: 0 },
      targets: new Map(),
      closed: [],
      closedTold: true,
      stopped: false,
      cancelLook: () => undefined,
    }
    scheduleLook(state, ctx)
    return state
  },
  handlers: {
    'hint-queue.counters': (state) => ok({ ...state.counters }),
  },
  stop(state) {
    state.stopped = true
    state.cancelLook()
  },
}

function scheduleLook(state: HintQueueState, ctx: Context): void {
  if (state.stopped) return
  state.cancelLook = ctx.after(LOOK_MS, () => {
    void look(state, ctx).finally(() => scheduleLook(state, ctx))
  })
}

/** Starts a delivery pass for every Alive replica whose turn has come and an expiry pass for every
 * replica away with hints whose turn has come, and tells the store which are away past the TTL. */
async function look(state: HintQueueState, ctx: Context): Promise<void> {
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: 'hint-queue',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!view.ok) return
  const kept = await ctx.call('replica-store', {
    kind: 'hint.nodes',
    requestId: 'hint-queue',
    deadlineMs: ctx.now() + CALL_MS,
  })
  const now = ctx.now()
  const statuses = new Map<string, MemberStatus | null>()
  for (const member of view.value.members) {
    if (member.kind === 'node') statuses.set(member.id, member.status)
  }
  // Hints for a replica gossip does not know (not heard of since this node started, or gone from
  // the pool) wait as for one away.
  for (const id of kept.ok ? Object.keys(kept.value) : []) {
    if (!statuses.has(id)) statuses.set(id, null)
  }
  for (const [id, status] of statuses) {
    const alive = status === 'Alive'
    const known = state.targets.get(id)
    const target = known ?? { alive, awaySinceMs: null, hints: 0, nextPassMs: now, passing: false }
    if (alive && known !== undefined && !known.alive) target.nextPassMs = now + jitter(ctx)
    const hints = kept.ok ? (kept.value[id] ?? 0) : target.hints
    if (alive && hints > target.hints) {
      target.nextPassMs = Math.min(target.nextPassMs, now + NEW_HINTS_PASS_MS)
    }
    target.hints = hints
    target.alive = alive
    target.awaySinceMs = alive ? null : (target.awaySinceMs ?? now)
    state.targets.set(id, target)
    if (target.passing || now < target.nextPassMs || (!alive && hints === 0)) continue
    startPass(state, ctx, id, target)
  }
  // A replica neither gossip nor the store names any more is forgotten.
  for (const [id, target] of state.targets) {
    if (kept.ok && !statuses.has(id) && !target.passing) state.targets.delete(id)
  }
  await tellClosed(state, ctx, now)
}

function startPass(state: HintQueueState, ctx: Context, node: string, target: Target): void {
  const delivering = target.alive
  target.passing = true
  void pass(state, ctx, node, delivering).then(
    (end) => {
      target.passing = false
      // A delivering pass ends `done` when the store kept none for the replica: one recorded
      // after that is new to the next look, though the count it sees is the one it saw before.
      if (delivering && end === 'done') target.hints = 0
      let waitMs =
        end === 'done' ? PASS_MS : end === 'again' ? NEW_HINTS_PASS_MS : UNREACHED_RETRY_MS
      // One that came back during an expiry pass gets its delivery at the next look.
      if (!delivering) waitMs = target.alive ? 0 : expiryEveryMs(state)
      target.nextPassMs = ctx.now() + waitMs
    },
    () => {
      target.passing = false
      target.nextPassMs = ctx.now() + UNREACHED_RETRY_MS
    },
  )
}

function expiryEveryMs(state: HintQueueState): number {
  return Math.min(EXPIRY_PASS_MS_MAX, Math.max(LOOK_MS, state.ttlMs / 10))
}

/** Tells the store the replicas away longer than the TTL, while there are any and once more when
 * none is left (again until it took it); each window that closes is logged once. */
async function tellClosed(state: HintQueueState, ctx: Context, now: number): Promise<void> {
  const closed = [...state.targets]
    .filter(([, target]) => target.awaySinceMs !== null && now - target.awaySinceMs >= state.ttlMs)
    .map(([id]) => id)
    .sort()
  const changed = closed.join(',') !== state.closed.join(',')
  if (closed.length === 0 && !changed && state.closedTold) return
  for (const node of closed) {
    if (!state.closed.includes(node)) {
      ctx.log.warn(
        { node, ttlHours: state.ttlMs / HOUR_MS },
        'replica away longer than the hint TTL: no hint is recorded for it until it is back ' +
          '(anti-entropy or a bootstrap brings it what it missed)',
      )
    }
  }
  state.closed = closed
  const told = await ctx.call('replica-store', {
    kind: 'hint.closed',
    nodes: closed,
    requestId: 'hint-queue',
    deadlineMs: ctx.now() + CALL_MS,
  })
  state.closedTold = told.ok
}

function jitter(ctx: Context): number {
  const bytes = ctx.randomBytes(4)
  const draw = ((bytes[0] ?? 0) | ((bytes[1] ?? 0) << 8) | ((bytes[2] ?? 0) << 16)) >>> 0
  return draw % COMING_BACK_JITTER_MS
}

/** How a pass ended: every hint it read was delivered or left to expire (`done`); the replica or
 * this node's store failed a call (`unreached`: a store restarting is back within seconds, so is
 * a replica gossip has not seen leave); or hints were recorded for the replica behind the pass's
 * cursor while it ran (`again`: a pass soon rather than at the next round). */
type PassEnd = 'done' | 'unreached' | 'again'

/** Delivers `node`'s hints, page by page, until none is left, the node cannot be reached or this
 * node's store fails a call. Not `delivering` (the node is away), it only drops the expired. */
async function pass(
  state: HintQueueState,
  ctx: Context,
  node: string,
  delivering: boolean,
): Promise<PassEnd> {
  let after: { bucket: string; key: string } | null = null
  for (let page = 0; page < PAGES_PER_PASS_MAX && !state.stopped; page++) {
    const hints = await ctx.call('replica-store', {
      kind: 'hint.page',
      node,
      after,
      limit: PAGE_HINTS,
      ...addressed(ctx),
    })
    if (!hints.ok) return 'unreached'
    if (hints.value.length === 0) break
    const last = hints.value[hints.value.length - 1] as Hint
    after = { bucket: last.bucket, key: last.key }
    const now = ctx.now()
    const expired = hints.value.filter((hint) => expiresAt(state, hint) <= now)
    const live = hints.value.filter((hint) => expiresAt(state, hint) > now)
    const removedExpired = await done(ctx, expired)
    if (removedExpired === null) return 'unreached'
    state.counters.expired += removedExpired
    if (!delivering) {
      if (hints.value.length < PAGE_HINTS) break
      continue
    }
    const { delivered, reached } = await deliver(state, ctx, live)
    const removed = await done(ctx, delivered)
    if (removed === null) return 'unreached'
    state.counters.delivered += removed
    if (!reached) return 'unreached'
    if (hints.value.length < PAGE_HINTS) break
  }
  if (!delivering || state.stopped) return 'done'
  const kept = await ctx.call('replica-store', { kind: 'hint.nodes', ...addressed(ctx) })
  if (!kept.ok) return 'unreached'
  return (kept.value[node] ?? 0) > 0 ? 'again' : 'done'
}

/** When a hint expires: its change's time (the stamp's wall clock) plus the TTL. */
function expiresAt(state: HintQueueState, hint: Hint): number {
  const stamp = parseHlc(hint.stamp)
  return stamp === null ? 0 : stamp.wallMs + state.ttlMs
}

/** Runs the deliveries of `hints`, DELIVERIES_AT_ONCE at a time; stops starting new ones once the
 * replica could not be reached. */
async function deliver(
  state: HintQueueState,
  ctx: Context,
  hints: readonly Hint[],
): Promise<{ delivered: Hint[]; reached: boolean }> {
  const delivered: Hint[] = []
  let reached = true
  let next = 0
  const worker = async (): Promise<void> => {
    while (reached && !state.stopped && next < hints.length) {
      const hint = hints[next++] as Hint
      const brought = await ctx.call('coordinator', {
        kind: 'key.bring',
        bucket: hint.bucket,
        key: hint.key,
        node: hint.node,
        stamp: hint.stamp,
        requestId: 'hint-queue',
        deadlineMs: ctx.now() + CALL_MS,
      })
      if (!brought.ok) reached = false
      else delivered.push(hint)
    }
  }
  await Promise.all(Array.from({ length: DELIVERIES_AT_ONCE }, worker))
  return { delivered, reached }
}

/** Removes `hints` from the store; null when the store did not answer. */
async function done(ctx: Context, hints: readonly Hint[]): Promise<number | null> {
  if (hints.length === 0) return 0
  const removed = await ctx.call('replica-store', {
    kind: 'hint.done',
    hints: [...hints],
    ...addressed(ctx),
  })
  return removed.ok ? removed.value : null
}

/** What every request of the hint queue to its store carries. */
function addressed(ctx: Context): Request {
  return { requestId: 'hint-queue', deadlineMs: ctx.now() + CALL_MS }
}
