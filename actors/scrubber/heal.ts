/** @module Healing a corrupt copy (cluster mode): the blob is content-addressed, so any node of
 * this node's pool that holds it holds the same bytes. The pool's other reachable nodes (gossip's
 * view, in a random order) are asked in turn for the blob by its sha256 (`blob.read` through
 * Replica.Read, checked there: a copy that node knows damaged is refused, a CRC32 mismatch cuts the
 * stream), and the bytes flow from the transport straight into the local store's `blob.replace`,
 * which verifies their size, CRC32 and SHA-256 before it replaces anything. The first copy that
 * passes heals; a node without the blob, or with a bad copy, is skipped. */
import type { Context } from '../../protocol/actor.js'
import type { PeerTarget } from '../../protocol/cluster.js'
import type { Result } from '../../protocol/errors.js'
import type { MembershipView } from '../../protocol/membership.js'
import type { BlobHead } from '../../protocol/scrubbing.js'
import { streamDeadlineMs } from '../../protocol/timing.js'
import { STORE_CALL_MS } from './cursor.js'
import type { ScrubberState } from './scrub-state.js'

export type HealOutcome = 'healed' | 'gone' | 'no good copy'

export async function heal(
  state: ScrubberState,
  ctx: Context,
  sha256: string,
  size: number,
): Promise<HealOutcome> {
  // A blob of no bytes has nothing to be wrong with but its record.
  if (state.cluster === null || size === 0) return 'no good copy'
  for (const peer of await poolPeers(state, ctx)) {
    if (state.stopping) break
    const copied = await copyFrom(ctx, peer, sha256, size)
    if (copied.ok) return copied.value.replaced ? 'healed' : 'gone'
    ctx.log.warn({ sha256, peer: peer.id, code: copied.code, detail: copied.detail }, 'no copy')
  }
  return 'no good copy'
}

/** The other nodes of this node's pool that gossip shows reachable, in a random order. */
async function poolPeers(state: ScrubberState, ctx: Context): Promise<PeerTarget[]> {
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: 'scrubber-heal',
    deadlineMs: ctx.now() + STORE_CALL_MS,
  })
  if (!view.ok || state.cluster === null) return []
  const { nodeId, pool } = state.cluster
  const peers = view.value.members.filter(
    (m) =>
      m.kind === 'node' &&
      m.pool === pool &&
      m.id !== nodeId &&
      (m.status === 'Alive' || m.status === 'Suspect'),
  )
  const order = ctx.randomBytes(peers.length)
  return peers
    .map((m, index) => ({ m, key: order[index] ?? 0 }))
    .sort((a, b) => a.key - b.key || a.m.id.localeCompare(b.m.id))
    .map(({ m }) => ({ id: m.id, grpcAddr: m.grpcAddr }))
}

/** Reads the blob from `peer` into the local store's replacement: the peer's failure (no such
 * blob, a bad copy) aborts the stream, and the store's answer carries it. */
async function copyFrom(
  ctx: Context,
  peer: PeerTarget,
  sha256: string,
  size: number,
): Promise<Result<{ replaced: boolean }>> {
  const deadlineMs = streamDeadlineMs(ctx.now(), size)
  const [fromPeer, intoStore] = ctx.openStream()
  const replaced = ctx.call('replica-store', {
    kind: 'blob.replace',
    sha256,
    stream: intoStore,
    requestId: 'scrubber-heal',
    deadlineMs,
  })
  const range = { start: 0, end: size - 1 }
  const body = { msg: { kind: 'blob.read', sha256 }, range }
  await ctx.peers.callForBody<BlobHead>(peer, 'Replica.Read', body, fromPeer, deadlineMs)
  return replaced
}
