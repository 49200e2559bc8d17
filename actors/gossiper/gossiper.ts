/** @module Gossiper: this node's view of cluster membership, kept by SWIM over ctx.peers
 * (CLUSTER.md section 2). It probes members (probe.ts), merges what gossip says (swim.ts), joins
 * through the seeds and its pool by PushPull (at start, every JOIN_RETRY_MS until one peer
 * answered, then every PUSH_PULL_INTERVAL_MS), and on a graceful stop tells every member it is
 * leaving. Handles `peer.request` for the Membership.* methods (handed over by grpc-ingress),
 * `membership.view` (what topology and health show) and `membership.update-self` (free bytes,
 * phase). Owns no data: a restart starts over with a new incarnation, which outranks what others
 * held about it. */
import assert from 'node:assert/strict'
import type { Actor, Context } from '../../protocol/actor.js'
import type { NodePhase, PeerAnswer, PeerRequestMsg, PeerTarget } from '../../protocol/cluster.js'
import { fail, ok, unreachable, type Result } from '../../protocol/errors.js'
import {
  MEMBERS_MAX,
  type GossipEnvelope,
  type GossiperMsg,
  type MembershipView,
  type PingReqAnswer,
  type PingReqBody,
  type PushPullBody,
} from '../../protocol/membership.js'
import {
  absorb,
  callPeer,
  envelope,
  exchange,
  maxClockSkewMs,
  type GossiperState,
} from './exchange.js'
import { readGossipConfig } from './gossip-config.js'
import { ping, PING_TIMEOUT_MS, PROBE_INTERVAL_MS, probeTick } from './probe.js'
import { SwimTable } from './swim.js'

export const JOIN_RETRY_MS = 2_000
export const PUSH_PULL_INTERVAL_MS = 30_000
export const PUSH_PULL_TIMEOUT_MS = 2_000
/** A graceful stop waits this long at most for members to take our Leave. */
export const LEAVE_WAIT_MS = 2_000
/** How long a starting gossiper waits for the store to say the node's phase. */
const PHASE_ASK_MS = 2_000
const PHASE_ASK_RETRY_MS = 50
const PHASE_ASK_ATTEMPTS_MAX = PHASE_ASK_MS / PHASE_ASK_RETRY_MS

export const gossiper: Actor<GossiperState, 'gossiper'> = {
  name: 'gossiper',
  async init(ctx) {
    const { gossip, unheard } = readGossipConfig(ctx.config, ctx.now())
    const table = new SwimTable(gossip.self)
    for (const member of unheard) table.merge(member, ctx.now())
    // A gossiper restarted on a serving node must not announce it as joining again.
    if (gossip.self.kind === 'node') await askPhase(table, ctx)
    const state: GossiperState = {
      config: gossip,
      table,
      probeOrder: [],
      peerCallsInFlight: 0,
      joined: false,
      ticks: 0,
      stopping: false,
      cancelTimers: [],
    }
    scheduleProbes(state, ctx)
    void joinRound(state, ctx)
    return state
  },
  handlers: {
    'peer.request': answerPeer,
    'membership.view': (state, _msg, ctx) => ok(view(state, ctx)),
    'membership.update-self': (state, msg, ctx) => {
      assert(msg.freeBytes === undefined || Number.isSafeInteger(msg.freeBytes))
      const change = {
        ...(msg.freeBytes === undefined ? {} : { freeBytes: Math.max(0, msg.freeBytes) }),
        ...(msg.phase === undefined ? {} : { phase: msg.phase }),
      }
      state.table.updateSelf(change, ctx.now())
      return ok(state.table.self)
    },
  },
  async stop(state, ctx) {
    state.stopping = true
    for (const cancel of state.cancelTimers) cancel()
    state.table.leave()
    const live = state.table
      .others()
      .filter((entry) => entry.member.status === 'Alive' || entry.member.status === 'Suspect')
    // Every Leave has its own LEAVE_WAIT_MS bound, and they all go at once.
    await Promise.all(
      live.map((entry) => {
        const target = { id: entry.member.id, grpcAddr: entry.member.grpcAddr }
        const body = envelope(state, ctx)
        return callPeer(state, ctx, target, 'Membership.Leave', body, LEAVE_WAIT_MS)
      }),
    )
  },
}

/** The node's phase as the store knows it. The link to the store may be wired a moment after
 * this thread starts: an `unavailable` answer is asked again, within PHASE_ASK_MS. */
async function askPhase(table: SwimTable, ctx: Context): Promise<void> {
  const deadlineMs = ctx.now() + PHASE_ASK_MS
  for (let attempt = 0; attempt < PHASE_ASK_ATTEMPTS_MAX; attempt++) {
    const phase = await ctx.call('replica-store', {
      kind: 'system.phase',
      requestId: 'gossiper-init',
      deadlineMs,
    })
    if (phase.ok) return table.updateSelf({ phase: phase.value }, ctx.now())
    if (phase.code !== 'unavailable' || ctx.now() + PHASE_ASK_RETRY_MS >= deadlineMs) return
    await new Promise<void>((resolve) => ctx.after(PHASE_ASK_RETRY_MS, resolve))
  }
}

function scheduleProbes(state: GossiperState, ctx: Context): void {
  const cancel = ctx.after(PROBE_INTERVAL_MS, () => {
    if (state.stopping) return
    state.cancelTimers = state.cancelTimers.filter((other) => other !== cancel)
    probeTick(state, ctx)
    scheduleProbes(state, ctx)
  })
  state.cancelTimers.push(cancel)
}

/** PushPull with every seed and pool member at once; the next round comes sooner until joined. */
async function joinRound(state: GossiperState, ctx: Context): Promise<void> {
  const startedAtMs = ctx.now()
  const targets: PeerTarget[] = [...state.config.pool, ...state.config.seeds]
  const answered = await Promise.all(targets.map((target) => pushPull(state, ctx, target)))
  if (answered.includes(true)) state.joined = true
  if (state.stopping) return
  // Rounds start every interval, however long the calls of this one took to time out.
  const intervalMs = state.joined ? PUSH_PULL_INTERVAL_MS : JOIN_RETRY_MS
  const cancel = ctx.after(Math.max(0, startedAtMs + intervalMs - ctx.now()), () => {
    state.cancelTimers = state.cancelTimers.filter((other) => other !== cancel)
    if (!state.stopping) void joinRound(state, ctx)
  })
  state.cancelTimers.push(cancel)
}

async function pushPull(state: GossiperState, ctx: Context, target: PeerTarget): Promise<boolean> {
  const body: PushPullBody = { ...envelope(state, ctx), members: fullState(state) }
  const method = 'Membership.PushPull' as const
  const call = { to: target, method, body, timeoutMs: PUSH_PULL_TIMEOUT_MS }
  const reply = await exchange<PushPullBody>(state, ctx, call)
  if (reply === null) return false
  for (const member of reply.members) state.table.merge(member, ctx.now())
  return true
}

function fullState(state: GossiperState): PushPullBody['members'] {
  const members = state.table.others().map((entry) => ({ ...entry.member }))
  return [{ ...state.table.self }, ...members].slice(0, MEMBERS_MAX)
}

/** Answers a Membership.* call from a peer: its body comes from outside this process, checked by
 * the transport against its method's schema (protocol/wire/gossip.ts); it must come from the node
 * grpc-ingress authenticated, and of this cluster. */
async function answerPeer(
  state: GossiperState,
  msg: PeerRequestMsg,
  ctx: Context,
): Promise<Result<PeerAnswer>> {
  const received = msg.body as GossipEnvelope
  if (received.sender.id !== msg.from) {
    return fail('invalid_argument', `${msg.from} sent a record of ${received.sender.id}`)
  }
  if (received.cluster !== state.config.cluster) {
    return fail('forbidden', `cluster '${received.cluster}' is not '${state.config.cluster}'`)
  }
  switch (msg.method) {
    case 'Membership.Ping':
    case 'Membership.Leave':
      absorb(state, ctx, received, null)
      return ok(envelope(state, ctx, msg.from))
    case 'Membership.PingReq':
      return pingFor(state, msg, ctx)
    case 'Membership.PushPull': {
      const pushed = msg.body as PushPullBody
      absorb(state, ctx, pushed, null)
      for (const member of pushed.members) state.table.merge(member, ctx.now())
      return ok({ ...envelope(state, ctx, msg.from), members: fullState(state) })
    }
    default:
      return fail('invalid_request', `the gossiper does not serve ${msg.method}`)
  }
}

/** PingReq: ping the target for the caller within what is left of its deadline. */
async function pingFor(
  state: GossiperState,
  msg: PeerRequestMsg,
  ctx: Context,
): Promise<Result<PingReqAnswer>> {
  const request = msg.body as PingReqBody
  absorb(state, ctx, request, null)
  const timeoutMs = Math.min(PING_TIMEOUT_MS, msg.deadlineMs - ctx.now())
  const acked = timeoutMs > 0 && (await ping(state, ctx, request.target, timeoutMs))
  return ok({ ...envelope(state, ctx, msg.from), acked })
}

function view(state: GossiperState, ctx: Context): MembershipView {
  const self = { ...state.table.self, wallMs: ctx.now() }
  const members = state.table
    .others()
    .map((entry) => ({ ...entry.member, skewMs: entry.skewMs }))
    .sort((a, b) => (a.id < b.id ? -1 : 1))
  return {
    self,
    members: [{ ...self, skewMs: 0 }, ...members],
    maxClockSkewMs: maxClockSkewMs(state.table),
  }
}
