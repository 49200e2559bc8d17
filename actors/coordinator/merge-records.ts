/** @module The one way a replica is brought up to date: it is given another replica's stamped
 * records of the key (records.get) and merges them by the stamp rule (records.merge), fetching the
 * blobs it lacks from that replica by content address. Anti-entropy's key sync, read repair and a
 * hint's delivery all come here. What the receiver may have purged is not sent to it (`unpurged`):
 * a tombstone past the grace (SVC_GC_GRACE_DAYS, by its stamp's wall clock) of what it does not
 * hold, a delete by id of a version it lacks or the stamp of a key where it holds nothing
 * (actors/anti-entropy/tombstone-gc.ts), else it would come back there and the replicas would
 * never end alike. */
import type { Context } from '../../protocol/actor.js'
import {
  gcGraceMs,
  NULL_TOMBSTONE_TOKEN,
  pastGrace,
  type KeyMerged,
  type KeyRecords,
} from '../../protocol/anti-entropy.js'
import type { PeerTarget } from '../../protocol/cluster.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { ClusterState } from './cluster-state.js'
import { abortEnded } from './ended-uploads.js'
import { askReplica } from './replica-calls.js'
import type { Replica } from './replicas.js'

export interface KeyAt {
  bucket: string
  key: string
  requestId: string
  deadlineMs: number
}

export function recordsOf(ctx: Context, replica: Replica, at: KeyAt): Promise<Result<KeyRecords>> {
  return askReplica<KeyRecords>(ctx, replica, { kind: 'records.get', ...at })
}

/** Merges `records` (read from `from`) into `to`. */
export function mergeInto(
  ctx: Context,
  to: Replica,
  from: Replica,
  at: KeyAt,
  records: KeyRecords,
): Promise<Result<KeyMerged>> {
  return askReplica<KeyMerged>(ctx, to, {
    kind: 'records.merge',
    ...at,
    records,
    from: senderOf(ctx, from),
  })
}

/** Where the receiving store reaches the sender for blobs: this node's own address when it is
 * this node's store. */
function senderOf(ctx: Context, from: Replica): PeerTarget & { id: string } {
  if (!from.local) return { id: from.id, grpcAddr: from.target.grpcAddr }
  return { id: from.id, grpcAddr: ctx.config['SVC_NODE_GRPC_ADDR'] ?? '' }
}

/** Brings `to` what `from` holds of the key: both replicas' records read, `from`'s merged into
 * `to` but for what `to` may have purged (`target`: `to`'s records when the caller read them). */
export async function bring(
  cluster: ClusterState,
  ctx: Context,
  from: Replica,
  to: Replica,
  at: KeyAt,
  records?: { source: KeyRecords; target: KeyRecords },
): Promise<Result<KeyMerged>> {
  let read = records
  if (read === undefined) {
    const [source, target] = await Promise.all([recordsOf(ctx, from, at), recordsOf(ctx, to, at)])
    if (!source.ok) return source
    if (!target.ok) return target
    read = { source: source.value, target: target.value }
  }
  const sent = unpurged(read.source, read.target, ctx.now(), gcGraceMs(ctx.config))
  if (JSON.stringify(sent) === JSON.stringify(read.target)) return ok({ changed: false, bytes: 0 })
  // A multipart object merged where the client's complete never came would leave its upload open.
  if (!(await abortEnded(cluster, ctx, to, [from], at))) {
    return fail('unavailable', `${to.id} keeps an ended upload of ${at.key} open`)
  }
  return mergeInto(ctx, to, from, at, sent)
}

/** The records but for the tombstones past the grace that `target` may have purged: a delete by
 * id of a version it lacks, and the stamp of a key that holds nothing else where it holds nothing.
 * A tombstone of what it still holds is sent (the null tombstone where it holds a null version):
 * its deletion is given to it all the same. */
export function unpurged(
  records: KeyRecords,
  target: KeyRecords,
  nowMs: number,
  graceMs: number,
): KeyRecords {
  const held = new Set(target.versions.map((one) => one.token))
  // The null tombstone deletes whatever null version the target holds.
  if (target.versions.some(({ record }) => (record['versionId'] ?? 'null') === 'null')) {
    held.add(NULL_TOMBSTONE_TOKEN)
  }
  const deleted = records.deleted.filter(
    (one) => held.has(one.token) || !pastGrace(one.stamp, nowMs, graceMs),
  )
  const bare = records.versions.length === 0 && deleted.length === 0
  const nothing = target.stamp === null && held.size === 0 && target.deleted.length === 0
  const purged =
    records.stamp !== null && bare && nothing && pastGrace(records.stamp, nowMs, graceMs)
  return { stamp: purged ? null : records.stamp, versions: records.versions, deleted }
}
