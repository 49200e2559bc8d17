/** @module Cluster mode: the store pulls the whole catalog from a live peer at start and then every
 * SYNC_INTERVAL_MS, applying what is newer (catalog.ts). The pull is how a node that was down or
 * cut off catches up on changes published without it, and how a new node learns the catalog. The
 * first pull ends the node's joining phase: iam may then create the root user (none existed in
 * the cluster), and gossip announces the node as serving. A node that finds no live peer within
 * FIRST_SYNC_WAIT_MS is the first of its cluster, and serves with what it has. */
import type { Context } from '../../../protocol/actor.js'
import type { CatalogSnapshotPage } from '../../../protocol/catalog.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { SNAPSHOT_PAGE_MAX } from '../../../protocol/wire/bounds.js'
import { applyCatalog, CATALOG_CALL_MS, membership } from './catalog.js'
import type { CatalogState } from './catalog-state.js'
import { announcePhase, servingPhase } from './rejoin.js'
import type { StoreState } from '../store-state.js'

export const SYNC_INTERVAL_MS = 30_000
/** Retries of the first pull: gossip needs a moment to find the peers. */
const FIRST_SYNC_RETRY_MS = 1_000
export const FIRST_SYNC_WAIT_MS = 10_000
/** Pages one pull reads at most: 5 million catalog records. */
const PULL_PAGES_MAX = 10_000

export function startCatalogSync(state: StoreState, ctx: Context): void {
  const catalog = state.catalog
  if (catalog === null) return
  const startedMs = ctx.now()
  const round = async (): Promise<void> => {
    const pulled = await pullCatalog(state, catalog, ctx)
    // While the node starts, gossip may not be up yet: only a later failure is worth a warning.
    const starting = !catalog.synced && ctx.now() - startedMs < FIRST_SYNC_WAIT_MS
    if (pulled !== null && !pulled.ok && !starting) {
      ctx.log.warn({ code: pulled.code, detail: pulled.detail }, 'catalog pull failed')
    }
    const alone = pulled === null && ctx.now() - startedMs >= FIRST_SYNC_WAIT_MS
    if (!catalog.synced && (pulled?.ok === true || alone)) await finishJoining(state, catalog, ctx)
    if (state.stopping) return
    const nextMs = catalog.synced ? SYNC_INTERVAL_MS : FIRST_SYNC_RETRY_MS
    catalog.cancelSync = ctx.after(nextMs, () => void round())
  }
  catalog.cancelSync = ctx.after(0, () => void round())
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

/** Pulls every page from one live storage peer, the first that answers; null when gossip knows
 * no live peer. */
async function pullCatalog(
  state: StoreState,
  catalog: CatalogState,
  ctx: Context,
): Promise<Result<string> | null> {
  const members = await membership(ctx, ctx.now() + CATALOG_CALL_MS)
  if (!members.ok) return members
  const peers = members.value.filter(
    (member) => member.id !== catalog.nodeId && member.kind === 'node' && member.status === 'Alive',
  )
  if (peers.length === 0) return null
  const start = (ctx.randomBytes(1)[0] ?? 0) % peers.length
  let last: Result<string> = fail('unavailable', 'no peer answered')
  for (let tried = 0; tried < peers.length; tried++) {
    const peer = peers[(start + tried) % peers.length]
    if (peer === undefined || state.stopping) break
    last = await pullFrom(state, ctx, { id: peer.id, grpcAddr: peer.grpcAddr })
    if (last.ok) return last
  }
  return last
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
