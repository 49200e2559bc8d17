/** @module Contract limits of the S3 surface. They are part of the interface (Amazon S3's own
 * numbers), not tunables: tunables live in runtime/knobs.ts. */

export const KEY_BYTES_MAX = 1024
/** User metadata (x-amz-meta-* names and values), as Amazon S3 counts it. */
export const USER_METADATA_BYTES_MAX = 2 * 1024
export const SINGLE_PUT_BYTES_MAX = 5 * 1024 ** 3
export const XML_BODY_BYTES_MAX = 1024 * 1024
export const DELETE_OBJECTS_KEYS_MAX = 1000
export const LIST_KEYS_MAX = 1000
/** Bucket CORS, as Amazon S3 bounds it: a configuration of at most 64 KiB and 100 rules, and rule
 * IDs of at most 255 characters. */
export const CORS_BODY_BYTES_MAX = 64 * 1024
export const CORS_RULES_MAX = 100
export const CORS_RULE_ID_CHARS_MAX = 255
export const BUCKET_NAME_MIN = 3
export const BUCKET_NAME_MAX = 63
/** Presigned URLs live at most seven days (X-Amz-Expires). */
export const PRESIGN_EXPIRES_SECONDS_MAX = 7 * 24 * 3600
/** Requests whose X-Amz-Date is further from our clock are refused (RequestTimeTooSkewed). */
export const CLOCK_SKEW_MS_MAX = 15 * 60 * 1000
/** aws-chunked: a single chunk header line longer than this is malformed. */
export const CHUNK_HEADER_BYTES_MAX = 4096
/** Size of the body chunks that move between actors; bounded memory per request follows from it
 * (with STREAM_WINDOW_CHUNKS). At the same 512 KiB in flight per stream, 256 KiB chunks (window 2)
 * served GETs of 1 MiB and large downloads faster than 128 KiB ones (window 4), with PUTs as fast
 * and the same peak RSS under concurrent 1 MiB transfers: half the file reads, messages and socket
 * writes per byte. 64 KiB saved no memory. */
export const STREAM_CHUNK_BYTES = 256 * 1024
/** Objects at most this large are kept inside RocksDB rather than in a blob file. */
export const INLINE_BLOB_BYTES_MAX = 64 * 1024
/** Multipart upload: part numbers 1..PART_NUMBER_MAX; every part but the last at least
 * PART_BYTES_MIN, none over PART_BYTES_MAX (Amazon S3's numbers). */
export const PART_NUMBER_MAX = 10_000
export const PART_BYTES_MIN = 5 * 1024 ** 2
export const PART_BYTES_MAX = 5 * 1024 ** 3
/** Entries a ListParts or ListMultipartUploads page returns at most. */
export const LIST_PARTS_MAX = 1000
export const LIST_UPLOADS_MAX = 1000

/** Store threads a single node may run (SVC_STORE_SHARDS): more only split a node's cores
 * further. Each keeps its own counters records, so a reader sums at most this many. */
export const STORE_SHARDS_MAX = 16
