/** @module GET /api/stats (no authentication): the stats record of SPEC.md section 2, from the
 * store's counters, which are kept with every mutation (never computed by scanning). The dedup
 * ratio is total references over unique blobs, 0 while no blob is stored. In a cluster the figures
 * are the cluster's (actors/coordinator/stats.ts). /metrics serves the node's own store's figures
 * as gauges (runtime/store-metrics.ts), and a cluster node the cluster's (cluster-metrics.ts). */
import { objectActor, type Mesh } from '../protocol/actor.js'
import type { Result } from '../protocol/errors.js'
import type { StoreStats } from '../protocol/messages.js'
import { CALL_TIMEOUT_MS } from '../protocol/timing.js'

export interface StatsRecord extends StoreFigures {
  uptime_seconds: number
}

/** The store's part of the record, which /metrics serves as gauges too. */
export interface StoreFigures {
  buckets_count: number
  objects_count: number
  storage_used_bytes: number
  dedup_unique_blobs: number
  dedup_total_references: number
  dedup_ratio: number
}

export async function statsRecord(mesh: Mesh, uptimeSeconds: number): Promise<Result<StatsRecord>> {
  const figures = await storeFigures(mesh, CALL_TIMEOUT_MS)
  if (!figures.ok) return figures
  return { ok: true, value: { uptime_seconds: Math.floor(uptimeSeconds), ...figures.value } }
}

/** One call to the store's counters, failed with `timeout` after timeoutMs: through the
 * coordinator by default (in a cluster, the cluster's figures, each object once), or of `actor`
 * (the node's own store: what it holds). */
export async function storeFigures(
  mesh: Mesh,
  timeoutMs: number,
  actor: 'replica-store' | 'coordinator' = objectActor(mesh.config),
): Promise<Result<StoreFigures>> {
  const stats = await mesh.call(actor, {
    kind: 'system.stats',
    requestId: 'stats',
    deadlineMs: mesh.now() + timeoutMs,
  })
  if (!stats.ok) return stats
  const { uniqueBlobs, totalReferences } = stats.value
  return {
    ok: true,
    value: {
      buckets_count: stats.value.bucketsCount,
      objects_count: stats.value.objectsCount,
      storage_used_bytes: stats.value.storageUsedBytes,
      dedup_unique_blobs: uniqueBlobs,
      dedup_total_references: totalReferences,
      dedup_ratio: uniqueBlobs === 0 ? 0 : totalReferences / uniqueBlobs,
    },
  }
}
