/** @module The counts the schemas of wire/ bound messages by, in a module without zod, so that the
 * code that keeps within them (a page, a batch) does not load the schemas: a thread loads zod only
 * when it checks messages at the boundary. */

/** Keys one ae.keys page lists at most. */
export const AE_KEYS_PAGE_MAX = 1_000
/** Versions, and versions deleted by id, that one key's records carry at most. */
export const MANIFEST_ENTRIES_MAX = 10_000
/** Records one catalog snapshot page carries at most (a few hundred bytes each: under 4 MiB). */
export const SNAPSHOT_PAGE_MAX = 500
/** Records one Catalog.Apply carries at most: a request changes a few keys, a sync one page. */
export const APPLY_RECORDS_MAX = SNAPSHOT_PAGE_MAX
/** Changes one gossip message carries at most, besides the sender's own record. */
export const UPDATES_PER_MESSAGE_MAX = 16
/** Members a node keeps at most (and a PushPull carries at most). */
export const MEMBERS_MAX = 1_024
