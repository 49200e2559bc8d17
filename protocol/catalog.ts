/** @module The catalog between nodes: what every storage node and gateway knows (buckets and their
 * settings, iam's users and keys), as records of the store's key-value layout, each with the
 * hybrid-clock stamp of the change that wrote it. A record applies on a node only when its stamp
 * is newer than the one the node holds for that key (last writer wins); a deletion travels as a
 * record without a value (a tombstone), so no older copy brings the key back. */

/** One catalog key's latest change. `value` is base64 (record bytes are not always text); null for
 * a deletion. `stamp` is an hlcString. */
export interface CatalogRecord {
  key: string
  value: string | null
  stamp: string
}

/** Catalog.Apply: records to apply, last writer wins. Answers how many were newer. */
export interface CatalogApply {
  records: CatalogRecord[]
}

/** Catalog.Snapshot: a page of every catalog record (tombstones too), in key order after
 * `after`. */
export interface CatalogSnapshotRequest {
  after: string | null
  limit: number
}
export interface CatalogSnapshotPage {
  records: CatalogRecord[]
  /** The last key of this page when more may follow; null at the end. */
  next: string | null
}

/** Catalog.Claim: a node asks to create `bucket`. A node grants at most one live claim per name,
 * and none for a bucket it already holds: of two racing creations at most one gets a majority. */
export interface CatalogClaim {
  bucket: string
  claimant: string
}
export type CatalogClaimAnswer =
  | { granted: true }
  | { granted: false; exists: true; owner: string | null }
  | { granted: false; exists: false; holder: string }

/** Catalog.Release: gives a claim back (the creation failed or lost). */
export interface CatalogRelease {
  bucket: string
  claimant: string
}
