/** @module Cluster mode: the store pulls the whole catalog from a live peer at start and then every
 * SYNC_INTERVAL_MS, applying what is newer (catalog.ts). The pull is how a node that was down or
 * cut off catches up on changes published without it, and how a new node learns the catalog. The
 * first pull ends the node's joining phase: iam may then create the root user (none existed in
 * the cluster), and gossip announces the node as serving. A node that finds no live peer within
 * FIRST_SYNC_WAIT_MS is the first of its cluster, and serves with what it has.
 *
 * A change is published to the nodes Alive at the time (catalog.ts), so a node back from a
 * partition, or one that sees a peer come back, may hold a catalog older than the cluster's for as
 * long as a sync interval: a bucket's versioning it missed would have its replica write versions
 * the others write as `null`. The store looks at gossip's view every WATCH_MS, and a storage peer
 * Alive that was not at the last look (this node's partition healed, a peer restarted) brings a
 * pull at once, PULL_GAP_MS at least after the last (a peer that flaps costs a pull per gap),
 * from that peer first: a change that reached it alone (its publication failed) spreads so. */
import type { Context } from '../../../protocol/actor.js'
import type { CatalogSnapshotPage } from '../../../protocol/catalog.js'
import type { Member } from '../../../protocol/cluster.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { SNAPSHOT_PAGE_MAX } from '../../../protocol/wire/bounds.js'
import { applyCatalog, CATALOG_CALL_MS, membership } from './catalog.js'
import type { CatalogState } from './catalog-state.js'
import { announcePhase, servingPhase } from './rejoin.js'
import type { StoreState } from '../store-state.js'

export const SYNC_INTERVAL_MS = 30_000
/** How often the store looks at gossip's view for a peer that came back. */
export const WATCH_MS = 1_000
/** The least time between two pulls a peer's return brings. */
export const PULL_GAP_MS = 5_000
/** Retries of the first pull: gossip needs a moment to find the peers. */
const FIRST_SYNC_RETRY_MS = 1_000
export const FIRST_SYNC_WAIT_MS = 10_000
/** Pages one pull reads at most: 5 million catalog records. */
const PULL_PAGES_MAX = 10_000

export function startCatalogSync(state: StoreState, ctx: Context): void {
  const catalog = state.catalog
  if (catalog === null) return
  const startedMs = ctx.now()
  /** When the next pull is due, and the storage peers Alive at the last look (none yet). */
  let pullAtMs = startedMs
  let lastPullMs = startedMs
  let alive: Set<string> | null = null
  /** Peers seen coming back since the last pull: the next pull asks them first. */
  const returned = new Set<string>()
  const round = async (): Promise<void> => {
    lastPullMs = ctx.now()
    const first = [...returned]
    returned.clear()
    const pulled = await pullCatalog(state, catalog, ctx, first)
    // While the node starts, gossip may not be up yet: only a later failure is worth a warning.
    const starting = !catalog.synced && ctx.now() - startedMs < FIRST_SYNC_WAIT_MS
    if (pulled !== null && !pulled.ok && !starting) {
      ctx.log.warn({ code: pulled.code, detail: pulled.detail }, 'catalog pull failed')
    }
    const alone = pulled === null && ctx.now() - startedMs >= FIRST_SYNC_WAIT_MS
    if (!catalog.synced && (pulled?.ok === true || alone)) await finishJoining(state, catalog, ctx)
    pullAtMs = lastPullMs + (catalog.synced ? SYNC_INTERVAL_MS : FIRST_SYNC_RETRY_MS)
  }
  const look = async (): Promise<void> => {
    if (catalog.synced) {
      const members = await membership(ctx, ctx.now() + CATALOG_CALL_MS)
      if (members.ok) {
        const now = new Set(livePeers(members.value, catalog.nodeId).map((peer) => peer.id))
        const back = alive === null ? [] : [...now].filter((id) => alive?.has(id) === false)
        alive = now
        for (const id of back) returned.add(id)
        if (back.length > 0) pullAtMs = Math.min(pullAtMs, lastPullMs + PULL_GAP_MS)
      }
    }
    if (state.stopping) return
    if (ctx.now() >= pullAtMs) await round()
    if (state.stopping) return
    catalog.cancelSync = ctx.after(WATCH_MS, () => void look())
  }
  catalog.cancelSync = ctx.after(0, () => void look())
}

async function finishJoining(
  state: StoreState,
  catalog: CatalogState,
  ctx: Context,
): Promise<void> {
  catalog.synced = true
  const deadlineMs = ctx.now() + CATALOG_CALL_MS * 5
  const told = await ctx.call('iam', {
    kind: 'iam.catalog-synced',
    requestId: 'catalog',
    deadlineMs,
  })
  if (!told.ok) ctx.log.warn({ code: told.code, detail: told.detail }, 'iam not told of the sync')
  await announcePhase(ctx, servingPhase(state), deadlineMs)
  ctx.log.info({ phase: servingPhase(state) }, 'catalog in sync')
}

/** Pulls every page from one live storage peer, the first that answers: those of `first` that are
 * live before the others (a peer that came back holds what it took while away, which a pull from
 * any other would miss until a later round), else from a random one on; null when gossip knows no
 * live peer. */
async function pullCatalog(
  state: StoreState,
  catalog: CatalogState,
  ctx: Context,
  first: readonly string[],
): Promise<Result<string> | null> {
  const members = await membership(ctx, ctx.now() + CATALOG_CALL_MS)
  if (!members.ok) return members
  const live = livePeers(members.value, catalog.nodeId)
  if (live.length === 0) return null
  const start = (ctx.randomBytes(1)[0] ?? 0) % live.length
  const rotated = [...live.slice(start), ...live.slice(0, start)]
  const isFirst = (peer: Member): boolean => first.includes(peer.id)
  const peers = [...rotated.filter(isFirst), ...rotated.filter((peer) => !isFirst(peer))]
  let last: Result<string> = fail('unavailable', 'no peer answered')
  for (const peer of peers) {
    if (state.stopping) break
    last = await pullFrom(state, ctx, { id: peer.id, grpcAddr: peer.grpcAddr })
    if (last.ok) return last
  }
  return last
}

/** Storage nodes other than this one that gossip finds Alive: those a pull may read from. */
function livePeers(members: readonly Member[], self: string): Member[] {
  return members.filter(
    (member) => member.id !== self && member.kind === 'node' && member.status === 'Alive',
  )
}

async function pullFrom(
  state: StoreState,
  ctx: Context,
  peer: { id: string; grpcAddr: string },
): Promise<Result<string>> {
  let after: string | null = null
  for (let pages = 0; pages < PULL_PAGES_MAX; pages++) {
    const deadlineMs = ctx.now() + CATALOG_CALL_MS
    const page: Result<CatalogSnapshotPage> = await ctx.peers.call<CatalogSnapshotPage>(
      peer,
      'Catalog.Snapshot',
      { after, limit: SNAPSHOT_PAGE_MAX },
      deadlineMs,
    )
    if (!page.ok) return page
    const applied = await applyCatalog(state, ctx, { records: page.value.records }, deadlineMs)
    if (!applied.ok) return applied
    if (page.value.next === null) return ok(peer.id)
    after = page.value.next
  }
  return fail('internal', `the catalog of ${peer.id} has more than ${PULL_PAGES_MAX} pages`)
}
