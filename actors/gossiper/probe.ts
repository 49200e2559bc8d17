/** @module Failure detection: every PROBE_INTERVAL_MS the gossiper pings one member, round-robin
 * over a shuffled list of the Alive and Suspect members (each is probed once per round, so a dead
 * one is found within N intervals). A ping unanswered within PING_TIMEOUT_MS goes indirectly
 * through up to INDIRECT_PROBES other Alive members (PingReq), which also tells a slow link from a
 * dead node; with no ack at all the member becomes Suspect. Dead members are pinged every
 * DEAD_PROBE_INTERVAL_MS, so a node that comes back after a partition is found and refutes. */
import type { Context } from '../../protocol/actor.js'
import type { PeerTarget } from '../../protocol/cluster.js'
import type { PingReqAnswer, PingReqBody } from '../../protocol/membership.js'
import { envelope, exchange, type GossiperState } from './exchange.js'
import { targetOf, type MemberEntry } from './swim.js'

export const PROBE_INTERVAL_MS = 1_000
export const PING_TIMEOUT_MS = 500
/** A PingReq covers the relay's own ping plus the two hops to and from it. */
export const PING_REQ_TIMEOUT_MS = 2 * PING_TIMEOUT_MS
export const INDIRECT_PROBES = 3
export const DEAD_PROBE_INTERVAL_MS = 10_000

/** One interval's work: expire suspicions, probe the next member, now and then ping the Dead. */
export function probeTick(state: GossiperState, ctx: Context): void {
  state.ticks++
  for (const id of state.table.expireSuspects(ctx.now())) {
    ctx.log.warn({ member: id }, 'member dead: suspicion not refuted')
  }
  const next = nextToProbe(state, ctx)
  if (next !== undefined) void probe(state, ctx, next)
  if (state.ticks % (DEAD_PROBE_INTERVAL_MS / PROBE_INTERVAL_MS) === 0) {
    for (const entry of state.table.others()) {
      if (entry.member.status === 'Dead') void ping(state, ctx, targetOf(entry.member))
    }
  }
}

function nextToProbe(state: GossiperState, ctx: Context): string | undefined {
  for (let round = 0; round < 2; round++) {
    for (let id = state.probeOrder.shift(); id !== undefined; id = state.probeOrder.shift()) {
      const status = state.table.get(id)?.member.status
      if (status === 'Alive' || status === 'Suspect') return id
    }
    state.probeOrder = shuffled(probeable(state), ctx)
  }
  return undefined
}

function probeable(state: GossiperState): string[] {
  return state.table
    .others()
    .filter((entry) => entry.member.status === 'Alive' || entry.member.status === 'Suspect')
    .map((entry) => entry.member.id)
}

/** Fisher-Yates with ctx's randomness. */
export function shuffled<T>(items: readonly T[], ctx: Context): T[] {
  const out = [...items]
  const random = ctx.randomBytes(4 * out.length)
  const view = new DataView(random.buffer, random.byteOffset, random.byteLength)
  for (let i = out.length - 1; i > 0; i--) {
    const j = view.getUint32(4 * i) % (i + 1)
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

async function probe(state: GossiperState, ctx: Context, id: string): Promise<void> {
  const entry = state.table.get(id)
  if (entry === undefined) return
  const target = targetOf(entry.member)
  if (await ping(state, ctx, target)) return
  const relays = shuffled(
    state.table.others().filter((other) => other.member.status === 'Alive' && other !== entry),
    ctx,
  ).slice(0, INDIRECT_PROBES)
  const acks = await Promise.all(relays.map((relay) => pingReq(state, ctx, relay, target)))
  if (acks.includes(true) || state.stopping) return
  if (state.table.suspect(id, ctx.now())) ctx.log.info({ member: id }, 'member suspected')
}

/** Pings `target` directly; true when it acked in time. */
export async function ping(
  state: GossiperState,
  ctx: Context,
  target: PeerTarget,
  timeoutMs = PING_TIMEOUT_MS,
): Promise<boolean> {
  const body = envelope(state, ctx, target.id ?? undefined)
  const call = { to: target, method: 'Membership.Ping' as const, body, timeoutMs }
  return (await exchange(state, ctx, call)) !== null
}

async function pingReq(
  state: GossiperState,
  ctx: Context,
  relay: MemberEntry,
  target: PeerTarget,
): Promise<boolean> {
  if (target.id === null) return false
  const body: PingReqBody = {
    ...envelope(state, ctx, target.id),
    target: { id: target.id, grpcAddr: target.grpcAddr },
  }
  const to = targetOf(relay.member)
  const call = { to, method: 'Membership.PingReq' as const, body, timeoutMs: PING_REQ_TIMEOUT_MS }
  const reply = await exchange<PingReqAnswer>(state, ctx, call)
  return reply?.acked === true
}
