/** @module The catalog between nodes: what every storage node and gateway knows (buckets and their
 * settings, iam's users and keys), as records of the store's key-value layout, each with the
 * hybrid-clock stamp of the change that wrote it. A record applies on a node only when its stamp
 * is newer than the one the node holds for that key (last writer wins); a deletion travels as a
 * record without a value (a tombstone), so no older copy brings the key back. */
import type { z } from 'zod'
import type {
  catalogApply,
  catalogClaim,
  catalogClaimAnswer,
  catalogRecord,
  catalogSnapshotPage,
  catalogSnapshotRequest,
} from './wire/catalog.js'

/** The messages' schemas, with what each carries, are wire/catalog.ts's. */
export type CatalogRecord = z.infer<typeof catalogRecord>
export type CatalogApply = z.infer<typeof catalogApply>
export type CatalogSnapshotRequest = z.infer<typeof catalogSnapshotRequest>
export type CatalogSnapshotPage = z.infer<typeof catalogSnapshotPage>
export type CatalogClaim = z.infer<typeof catalogClaim>
export type CatalogClaimAnswer = z.infer<typeof catalogClaimAnswer>
export type CatalogRelease = CatalogClaim
