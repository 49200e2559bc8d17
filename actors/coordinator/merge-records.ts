/** @module The one way a replica is brought up to date: it is given another replica's stamped
 * records of the key (records.get) and merges them by the stamp rule (records.merge), fetching the
 * blobs it lacks from that replica by content address. Anti-entropy's key sync, read repair and a
 * hint's delivery all come here. */
import type { Context } from '../../protocol/actor.js'
import type { KeyMerged, KeyRecords } from '../../protocol/anti-entropy.js'
import type { PeerTarget } from '../../protocol/cluster.js'
import type { Result } from '../../protocol/errors.js'
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
function senderOf(ctx: Context, from: Replica): PeerTarget {
  if (!from.local) return from.target
  return { id: from.id, grpcAddr: ctx.config['SVC_NODE_GRPC_ADDR'] ?? '' }
}
