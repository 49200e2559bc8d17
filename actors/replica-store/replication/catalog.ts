/** @module The catalog in cluster mode: buckets and their settings (B\0 and the bucket settings'
 * keys) and iam's records (Y\0) are known to every node. A change made here carries a hybrid-clock
 * stamp (S\0, written in the change's own batch, see catalog-state.ts), and before the request
 * answers it is applied on every other live storage node: every Alive one must take it, and a
 * majority of them, this one included. Elsewhere a record applies only when its stamp is newer than
 * the one held (last writer wins); a deletion keeps its stamp, so no older copy brings the key
 * back. A change that did not reach enough nodes answers `unavailable`: it stays here and reaches
 * the others when they pull the catalog (catalog-sync.ts), so its outcome is unknown to the client,
 * as for any write that failed late.
 *
 * Creating a bucket needs more than last-writer-wins, since two nodes may create one name at once:
 * the creating node first claims the name on the storage nodes (and chooses the bucket's pool, the
 * one with the most room, for good). Each grants at most one live claim
 * per name, and none for a bucket it holds, so of two racing creations at most one gets a
 * majority; the other answers 409 as if the bucket existed, which it will. */
import type { Context, KvOp } from '../../../protocol/actor.js'
import type {
  CatalogApply,
  CatalogClaim,
  CatalogClaimAnswer,
  CatalogRecord,
  CatalogRelease,
  CatalogSnapshotPage,
  CatalogSnapshotRequest,
} from '../../../protocol/catalog.js'
import type { Member, PeerMethod } from '../../../protocol/cluster.js'
import type { MembershipView } from '../../../protocol/membership.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { compareHlc, parseHlc } from '../../../protocol/hlc.js'
import { choosePool } from '../../../protocol/placement.js'
import type { ObjectMsg } from '../../../protocol/messages.js'
import type { BucketInfo } from '../../../protocol/objects.js'
import { createBucket } from '../engine/buckets.js'
import { CLAIM_TTL_MS, CLAIMS_MAX, type CatalogState } from './catalog-state.js'
import {
  BUCKET_PREFIX,
  COUNTERS_KEY,
  isCatalogKey,
  STAMP_END,
  STAMP_PREFIX,
  stampKey,
  SYSTEM_PREFIX,
} from '../keys.js'
import { decodeBucket, decodeCounters, encodeRecord } from '../records.js'
import { durably, type StoreState } from '../store-state.js'

/** How long one node-to-node catalog call may take, within the request's own deadline. */
export const CATALOG_CALL_MS = 2_000

type CreateBucketMsg = Extract<ObjectMsg, { kind: 'bucket.create' }>

export async function membership(ctx: Context, deadlineMs: number): Promise<Result<Member[]>> {
  const view = await ctx.call('gossiper', {
    kind: 'membership.view',
    requestId: 'catalog',
    deadlineMs,
  })
  return view.ok ? ok(view.value.members) : view
}

/** Storage nodes other than this one that may answer: Alive or Suspect. Gateways hold no
 * catalog: they forward every request to a node. */
function reachablePeers(members: readonly Member[], self: string): Member[] {
  return members.filter(
    (member) =>
      member.kind === 'node' &&
      member.id !== self &&
      (member.status === 'Alive' || member.status === 'Suspect'),
  )
}

function majorityOf(members: readonly Member[]): number {
  return Math.floor(members.filter((member) => member.kind === 'node').length / 2) + 1
}

function callDeadline(ctx: Context, deadlineMs: number): number {
  return Math.min(deadlineMs, ctx.now() + CATALOG_CALL_MS)
}

/** The stamped records of `keys` as this node holds them now (keys without a stamp are left out:
 * nothing changed them in cluster mode). */
export function catalogRecords(ctx: Context, keys: Iterable<string>): CatalogRecord[] {
  const records: CatalogRecord[] = []
  for (const key of keys) {
    const stamp = ctx.kv.get(stampKey(key))
    if (stamp === undefined) continue
    const value = ctx.kv.get(key)
    records.push({
      key,
      value: value === undefined ? null : Buffer.from(value).toString('base64'),
      stamp: Buffer.from(stamp).toString('utf8'),
    })
  }
  return records
}

/** Sends a change made here to every reachable member and checks the quorum described above. */
export async function publishCatalog(
  state: StoreState,
  ctx: Context,
  keys: Iterable<string>,
  deadlineMs: number,
): Promise<Result<null>> {
  const catalog = state.catalog
  if (catalog === null) return ok(null)
  const records = catalogRecords(ctx, keys)
  if (records.length === 0) return ok(null)
  const members = await membership(ctx, callDeadline(ctx, deadlineMs))
  if (!members.ok) return fail('unavailable', `catalog change not published: ${members.detail}`)
  const targets = reachablePeers(members.value, catalog.nodeId)
  const body: CatalogApply = { records }
  const answers = await Promise.all(
    targets.map((member) => callPeer(ctx, member, 'Catalog.Apply', body, deadlineMs)),
  )
  let storageAcks = 1 // This node holds it.
  const missing: string[] = []
  targets.forEach((member, index) => {
    if (answers[index]?.ok === true) {
      if (member.kind === 'node') storageAcks++
    } else if (member.status === 'Alive') {
      missing.push(member.id)
    }
  })
  const needed = majorityOf(members.value)
  if (missing.length > 0 || storageAcks < needed) {
    const reason = missing.length > 0 ? `not taken by ${missing.join(', ')}` : 'no majority'
    return fail('unavailable', `catalog change ${reason} (${storageAcks} of ${needed} nodes)`)
  }
  return ok(null)
}

function callPeer<T>(
  ctx: Context,
  member: Member,
  method: PeerMethod,
  body: object,
  deadlineMs: number,
): Promise<Result<T>> {
  const target = { id: member.id, grpcAddr: member.grpcAddr }
  return ctx.peers.call<T>(target, method, body, callDeadline(ctx, deadlineMs))
}

/** Catalog.Apply from a peer: each record applies if its stamp is newer than ours. */
export async function applyCatalog(
  state: StoreState,
  ctx: Context,
  body: CatalogApply,
  deadlineMs: number,
): Promise<Result<{ applied: number }>> {
  const catalog = state.catalog
  if (catalog === null) return fail('invalid_request', 'this node is not in cluster mode')
  const newer = body.records.filter((record) => isNewer(ctx, catalog, record))
  if (newer.length === 0) return ok({ applied: 0 })
  const ops = applyOps(ctx, newer)
  await durably(state, ctx, ctx.kv.commit(ops))
  for (const record of newer) {
    if (record.key.startsWith(BUCKET_PREFIX)) catalog.claims.delete(bucketOf(record.key))
  }
  const names = newer
    .filter((record) => record.key.startsWith(SYSTEM_PREFIX))
    .map((record) => record.key.slice(SYSTEM_PREFIX.length))
  if (names.length > 0) await tellIam(ctx, names, deadlineMs)
  return ok({ applied: newer.length })
}

/** Whether `record` is well formed and newer than what this node holds; observing its stamp
 * keeps this node's clock ahead of every change it has seen. */
function isNewer(ctx: Context, catalog: CatalogState, record: CatalogRecord): boolean {
  if (!isCatalogKey(record.key)) return false
  const stamp = parseHlc(record.stamp)
  if (stamp === null || !catalog.clock.observe(stamp)) return false
  const held = ctx.kv.get(stampKey(record.key))
  if (held === undefined) return true
  const heldStamp = parseHlc(Buffer.from(held).toString('utf8'))
  return heldStamp === null || compareHlc(stamp, heldStamp) > 0
}

/** The batch that applies newer records. A bucket record keeps this node's own counters (they
 * count what this node stores), and the store-wide bucket count follows buckets coming and going.
 * A bucket this node still holds objects of is not removed: its record stays until they are gone,
 * while the stamp records the deletion. */
function applyOps(ctx: Context, records: readonly CatalogRecord[]): KvOp[] {
  const ops: KvOp[] = []
  const storedCounters = ctx.kv.get(COUNTERS_KEY)
  const counters = storedCounters === undefined ? null : decodeCounters(storedCounters)
  for (const record of records) {
    const held = ctx.kv.get(record.key)
    const stamp = new Uint8Array(Buffer.from(record.stamp, 'utf8'))
    const isBucket = record.key.startsWith(BUCKET_PREFIX)
    const heldBucket = isBucket && held !== undefined ? decodeBucket(held) : undefined
    if (record.value === null) {
      if (heldBucket !== undefined && heldBucket.objects > 0) {
        // Neither record nor stamp change: the deletion applies on a later sync, once empty.
        ctx.log.warn(
          { bucket: bucketOf(record.key) },
          'deleted elsewhere, still holds objects here',
        )
        continue
      }
      ops.push({ type: 'put', key: stampKey(record.key), value: stamp })
      if (held !== undefined) ops.push({ type: 'del', key: record.key })
      if (heldBucket !== undefined && counters !== null) counters.buckets--
      continue
    }
    let value: Uint8Array = new Uint8Array(Buffer.from(record.value, 'base64'))
    if (isBucket) {
      const incoming = decodeBucket(value)
      const own = { objects: heldBucket?.objects ?? 0, bytes: heldBucket?.bytes ?? 0 }
      value = encodeRecord({ ...incoming, ...own })
      if (heldBucket === undefined && counters !== null) counters.buckets++
    }
    ops.push({ type: 'put', key: stampKey(record.key), value: stamp })
    ops.push({ type: 'put', key: record.key, value })
  }
  if (counters !== null) ops.push({ type: 'put', key: COUNTERS_KEY, value: encodeRecord(counters) })
  return ops
}

function bucketOf(bucketKey: string): string {
  return bucketKey.slice(BUCKET_PREFIX.length)
}

/** iam keeps users in memory: records changed by another node must reach it before the change
 * counts as applied here, or a key revoked elsewhere would still sign requests on this node. */
async function tellIam(ctx: Context, names: string[], deadlineMs: number): Promise<void> {
  const told = await ctx.call('iam', {
    kind: 'iam.records-changed',
    names,
    requestId: 'catalog',
    deadlineMs,
  })
  if (!told.ok) ctx.log.warn({ code: told.code, detail: told.detail }, 'iam not told of a change')
}

/** Catalog.Snapshot: a page of every stamped catalog key, tombstones included. */
export function snapshotPage(
  ctx: Context,
  request: CatalogSnapshotRequest,
): Result<CatalogSnapshotPage> {
  const { limit } = request
  // A key from this node's own layout: one outside it would fail stampKey's assertion.
  if (request.after !== null && !isCatalogKey(request.after)) {
    return fail('invalid_argument', 'Catalog.Snapshot: `after` is not a catalog key')
  }
  const after = request.after === null ? null : stampKey(request.after)
  const range = after === null ? { gte: STAMP_PREFIX } : { gt: after }
  const rows = ctx.kv.scan({ ...range, lt: STAMP_END, limit })
  const keys = rows.map(([key]) => key.slice(STAMP_PREFIX.length))
  const last = keys[keys.length - 1]
  return ok({
    records: catalogRecords(ctx, keys),
    next: rows.length === limit && last !== undefined ? last : null,
  })
}

/** Catalog.Claim: grants the name unless this node holds the bucket or another live claim. */
export function claimBucket(state: StoreState, ctx: Context, body: CatalogClaim) {
  return ok(grantClaim(state, ctx, body.bucket, body.claimant))
}

function grantClaim(
  state: StoreState,
  ctx: Context,
  bucket: string,
  claimant: string,
): CatalogClaimAnswer {
  const catalog = state.catalog as CatalogState
  const held = ctx.kv.get(BUCKET_PREFIX + bucket)
  if (held !== undefined) {
    return { granted: false, exists: true, owner: decodeBucket(held).owner ?? null }
  }
  const now = ctx.now()
  const claim = catalog.claimOf(bucket, now)
  if (claim !== undefined && claim.claimant !== claimant) {
    return { granted: false, exists: false, holder: claim.claimant }
  }
  if (claim === undefined && catalog.claims.size >= CLAIMS_MAX) {
    return { granted: false, exists: false, holder: 'too many creations at once' }
  }
  catalog.claims.set(bucket, { claimant, expiresMs: now + CLAIM_TTL_MS })
  return { granted: true }
}

/** Catalog.Release: drops the claim if `claimant` holds it. */
export function releaseClaim(state: StoreState, body: CatalogRelease): Result<null> {
  const catalog = state.catalog as CatalogState
  if (catalog.claims.get(body.bucket)?.claimant === body.claimant) {
    catalog.claims.delete(body.bucket)
  }
  return ok(null)
}

/** bucket.create in cluster mode: claim the name on a majority, create, publish. */
export async function createBucketInCluster(
  state: StoreState,
  msg: CreateBucketMsg,
  ctx: Context,
): Promise<Result<BucketInfo>> {
  const catalog = state.catalog as CatalogState
  const self = catalog.nodeId
  const own = grantClaim(state, ctx, msg.bucket, self)
  if (!own.granted) return refusal(msg, own)
  const members = await membership(ctx, callDeadline(ctx, msg.deadlineMs))
  if (!members.ok) {
    releaseClaim(state, { bucket: msg.bucket, claimant: self })
    return fail('unavailable', `cannot create a bucket: ${members.detail}`)
  }
  const peers = reachablePeers(members.value, self)
  const claim: CatalogClaim = { bucket: msg.bucket, claimant: self }
  const answers = await Promise.all(
    peers.map((peer) =>
      callPeer<CatalogClaimAnswer>(ctx, peer, 'Catalog.Claim', claim, msg.deadlineMs),
    ),
  )
  const granted = 1 + answers.filter((answer) => answer.ok && answer.value.granted).length
  const refused = answers.find((answer) => answer.ok && !answer.value.granted)
  if (granted < majorityOf(members.value)) {
    await releaseEverywhere(state, ctx, peers, claim, msg.deadlineMs)
    if (refused?.ok === true) return refusal(msg, refused.value)
    return fail('unavailable', `bucket ${msg.bucket}: ${granted} of the storage nodes answered`)
  }
  const created = await createBucket(state, msg, ctx, poolFor(ctx, members.value))
  releaseClaim(state, claim)
  if (!created.ok) {
    await releaseEverywhere(state, ctx, peers, claim, msg.deadlineMs)
    return created
  }
  const published = await publishCatalog(state, ctx, [BUCKET_PREFIX + msg.bucket], msg.deadlineMs)
  return published.ok ? created : published
}

/** The pool a new bucket goes to: the one with the most room among the pools gossip knows (the
 * replication factor is this node's, the same in every pool of a cluster); this node's own when
 * no pool has a live node with a known free space. */
function poolFor(ctx: Context, members: readonly Member[]): string {
  const rf = Number(ctx.config['SVC_REPLICATION_FACTOR'] ?? '3')
  const nodes = members.filter((member) => member.kind === 'node' && member.pool !== null)
  const names = [...new Set(nodes.map((member) => member.pool as string))]
  const spaces = names.map((name) => {
    const inPool = nodes.filter((member) => member.pool === name)
    const alive = inPool.filter((member) => member.status === 'Alive' && member.freeBytes > 0)
    return { name, rf, nodes: inPool.length, aliveFreeBytes: alive.map((m) => m.freeBytes) }
  })
  return choosePool(spaces) ?? ctx.config['SVC_POOL_NAME'] ?? ''
}

function refusal(msg: CreateBucketMsg, answer: CatalogClaimAnswer): Result<BucketInfo> {
  if (answer.granted) return fail('internal', 'a granted claim is not a refusal')
  if (answer.exists && answer.owner !== null && answer.owner === msg.owner) {
    return fail('bucket_owned_by_you', `you own bucket ${msg.bucket}`)
  }
  const by = answer.exists ? 'belongs to another user' : 'is being created by another request'
  return fail('bucket_exists', `bucket ${msg.bucket} ${by}`)
}

async function releaseEverywhere(
  state: StoreState,
  ctx: Context,
  peers: readonly Member[],
  claim: CatalogRelease,
  deadlineMs: number,
): Promise<void> {
  releaseClaim(state, claim)
  await Promise.all(peers.map((peer) => callPeer(ctx, peer, 'Catalog.Release', claim, deadlineMs)))
}
