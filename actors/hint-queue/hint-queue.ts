/** @module Hint queue (cluster mode): delivers the hints this node's store keeps (replica-store
 * hints.ts) to the replicas they name. It looks at gossip every LOOK_MS; a replica seen coming
 * back Alive gets a pass after a random 0-5 s (so that every node's queue does not start at once),
 * one the store keeps new hints for a pass within NEW_HINTS_PASS_MS (a short cut gossip never
 * saw), and an Alive one with hints left a pass every PASS_MS. A pass pages through the replica's
 * hints; a hint older than SVC_HINT_TTL_HOURS (by its change's stamp) is dropped as expired, and
 * each other one is delivered by the coordinator (`key.bring`, at most DELIVERIES_AT_ONCE at a
 * time), then removed unless a newer one replaced it meanwhile. A replica that cannot be reached
 * ends the pass; a state repair does not replay stays hinted until it expires (anti-entropy's to
 * bring). This node is one of the replicas too: a change its own store missed (it failed the
 * write, or was restarting and took the hint a moment later) is hinted to this node and brought
 * from the others like any. The queue keeps no state of its own beyond counters: the hints are
 * the store's. */
import assert from 'node:assert/strict'
import type { Actor, Context } from '../../protocol/actor.js'
import { ok, unreachable, type Result } from '../../protocol/errors.js'
import { parseHlc } from '../../protocol/hlc.js'
import type { MemberStatus } from '../../protocol/cluster.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { Hint, HintQueueCounters, HintQueueMsg, KeyBrought } from '../../protocol/messages.js'

/** How often gossip's view is looked at. */
export const LOOK_MS = 1_000
/** How often an Alive replica with hints left gets another pass; sooner after a pass that could
 * not reach it (gossip may not have seen it gone: a short cut). */
export const PASS_MS = 30_000
export const UNREACHED_RETRY_MS = 5_000
/** A replica gossip never saw leave (cut off for a moment) gets a pass this soon after the store
 * keeps more hints for it than at the last look, rather than at the next round. */
export const NEW_HINTS_PASS_MS = 5_000
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
  status: MemberStatus
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
  stopped: boolean
  cancelLook: () => void
}

export const hintQueue: Actor<HintQueueState, HintQueueMsg> = {
  name: 'hint-queue',
  init(ctx) {
    const self = ctx.config['SVC_NODE_ID']
    const hours = Number(ctx.config['SVC_HINT_TTL_HOURS'] ?? '3')
    assert(self !== undefined && Number.isFinite(hours) && hours > 0, 'hint queue settings')
    const state: HintQueueState = {
      self,
      ttlMs: hours * HOUR_MS,
      counters: { delivered: 0, expired: 0, unsupported: 0 },
      targets: new Map(),
      stopped: false,
      cancelLook: () => undefined,
    }
    scheduleLook(state, ctx)
    return state
  },
  handle(state, msg): Result<unknown> {
    switch (msg.kind) {
      case 'hint-queue.counters':
        return ok({ ...state.counters })
    }
    return unreachable(msg.kind)
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

/** Starts a pass for every Alive replica whose turn has come. */
async function look(state: HintQueueState, ctx: Context): Promise<void> {
  const view = await ctx.call<MembershipView>('gossiper', {
    kind: 'membership.view',
    requestId: 'hint-queue',
    deadlineMs: ctx.now() + CALL_MS,
  })
  if (!view.ok) return
  const kept = await ctx.call<Record<string, number>>('replica-store', {
    kind: 'hint.nodes',
    requestId: 'hint-queue',
    deadlineMs: ctx.now() + CALL_MS,
  })
  const now = ctx.now()
  for (const member of view.value.members) {
    if (member.kind !== 'node') continue
    const known = state.targets.get(member.id)
    const target = known ?? { status: member.status, hints: 0, nextPassMs: now, passing: false }
    if (member.status === 'Alive' && known !== undefined && known.status !== 'Alive') {
      target.nextPassMs = now + jitter(ctx)
    }
    const hints = kept.ok ? (kept.value[member.id] ?? 0) : target.hints
    if (hints > target.hints) {
      target.nextPassMs = Math.min(target.nextPassMs, now + NEW_HINTS_PASS_MS)
    }
    target.hints = hints
    target.status = member.status
    state.targets.set(member.id, target)
    if (member.status !== 'Alive' || target.passing || now < target.nextPassMs) continue
    target.passing = true
    void pass(state, ctx, member.id).then(
      (reached) => {
        target.passing = false
        target.nextPassMs = ctx.now() + (reached ? PASS_MS : UNREACHED_RETRY_MS)
      },
      () => {
        target.passing = false
        target.nextPassMs = ctx.now() + UNREACHED_RETRY_MS
      },
    )
  }
}

function jitter(ctx: Context): number {
  const bytes = ctx.randomBytes(4)
  const draw = ((bytes[0] ?? 0) | ((bytes[1] ?? 0) << 8) | ((bytes[2] ?? 0) << 16)) >>> 0
  return draw % COMING_BACK_JITTER_MS
}

/** Delivers `node`'s hints, page by page, until none is left or the node cannot be reached;
 * says whether it was reached. */
async function pass(state: HintQueueState, ctx: Context, node: string): Promise<boolean> {
  let after: { bucket: string; key: string } | null = null
  for (let page = 0; page < PAGES_PER_PASS_MAX && !state.stopped; page++) {
    const hints = await storeCall<Hint[]>(ctx, {
      kind: 'hint.page',
      node,
      after,
      limit: PAGE_HINTS,
    })
    if (!hints.ok) return true
    if (hints.value.length === 0) return true
    const last = hints.value[hints.value.length - 1] as Hint
    after = { bucket: last.bucket, key: last.key }
    const now = ctx.now()
    const expired = hints.value.filter((hint) => expiresAt(state, hint) <= now)
    const live = hints.value.filter((hint) => expiresAt(state, hint) > now)
    const removedExpired = await done(ctx, expired)
    state.counters.expired += removedExpired
    const { delivered, reached } = await deliver(state, ctx, live)
    state.counters.delivered += await done(ctx, delivered)
    if (!reached) return false
    if (hints.value.length < PAGE_HINTS) return true
  }
  return true
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
      const brought = await ctx.call<KeyBrought>('coordinator', {
        kind: 'key.bring',
        bucket: hint.bucket,
        key: hint.key,
        node: hint.node,
        stamp: hint.stamp,
        requestId: 'hint-queue',
        deadlineMs: ctx.now() + CALL_MS,
      })
      if (!brought.ok) reached = false
      else if (brought.value === 'unsupported') state.counters.unsupported++
      else delivered.push(hint)
    }
  }
  await Promise.all(Array.from({ length: DELIVERIES_AT_ONCE }, worker))
  return { delivered, reached }
}

async function done(ctx: Context, hints: readonly Hint[]): Promise<number> {
  if (hints.length === 0) return 0
  const removed = await storeCall<number>(ctx, { kind: 'hint.done', hints: [...hints] })
  return removed.ok ? removed.value : 0
}

type StoreRequest =
  | {
      kind: 'hint.page'
      node: string
      after: { bucket: string; key: string } | null
      limit: number
    }
  | { kind: 'hint.done'; hints: Hint[] }

function storeCall<T>(ctx: Context, msg: StoreRequest): Promise<Result<T>> {
  return ctx.call<T>('replica-store', {
    ...msg,
    requestId: 'hint-queue',
    deadlineMs: ctx.now() + CALL_MS,
  })
}
