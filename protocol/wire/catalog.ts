/** @module The Catalog.* calls: the replicated catalog between nodes (protocol/catalog.ts says
 * what it holds): records applied last-writer-wins, a snapshot read in pages, and the claim of a
 * bucket name before its creation. Whether a record's key belongs to the catalog is the store's
 * own check, against its key layout. */
import { z } from 'zod'
import { APPLY_RECORDS_MAX, SNAPSHOT_PAGE_MAX } from './bounds.js'
import { bucketName, count, stamp } from './fields.js'

/** One catalog key's latest change. `value` is base64 (record bytes are not always text); null for
 * a deletion. */
export const catalogRecord = z.strictObject({
  key: z.string().min(1),
  value: z.base64().nullable(),
  stamp,
})

/** Catalog.Apply: records to apply, last writer wins. Answers how many were newer. */
export const catalogApply = z.strictObject({
  records: z.array(catalogRecord).max(APPLY_RECORDS_MAX),
})
export const catalogApplied = z.strictObject({ applied: count })

/** Catalog.Snapshot: a page of every catalog record (tombstones too), in key order after
 * `after`. */
export const catalogSnapshotRequest = z.strictObject({
  after: z.string().nullable(),
  limit: z.int().min(1).max(SNAPSHOT_PAGE_MAX),
})
export const catalogSnapshotPage = z.strictObject({
  records: z.array(catalogRecord).max(SNAPSHOT_PAGE_MAX),
  /** The last key of this page when more may follow; null at the end. */
  next: z.string().nullable(),
})

/** Catalog.Claim: a node asks to create `bucket`. A node grants at most one live claim per name,
 * and none for a bucket it already holds: of two racing creations at most one gets a majority.
 * Catalog.Release gives a claim back (the creation failed or lost); answered with null. */
export const catalogClaim = z.strictObject({ bucket: bucketName, claimant: z.string().min(1) })
export const catalogClaimAnswer = z.union([
  z.strictObject({ granted: z.literal(true) }),
  z.strictObject({
    granted: z.literal(false),
    exists: z.literal(true),
    owner: z.string().nullable(),
  }),
  z.strictObject({ granted: z.literal(false), exists: z.literal(false), holder: z.string() }),
])
