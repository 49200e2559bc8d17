/** @module Object and bucket records as they travel between actors (plain data). */
import type { ObjectColumns } from './object-columns.js'

/** Content-* and caching headers S3 stores with an object and returns on GET/HEAD. */
export interface HttpMeta {
  contentType: string
  contentEncoding?: string
  contentDisposition?: string
  contentLanguage?: string
  cacheControl?: string
  expires?: string
}

/** Additional checksums (x-amz-checksum-*) an object was uploaded with, base64 as on the wire. */
export type ChecksumAlgorithm = 'crc32' | 'crc32c' | 'crc64nvme' | 'sha1' | 'sha256'
export type Checksums = Partial<Record<ChecksumAlgorithm, string>>
/** x-amz-checksum-type: a checksum of the object's bytes, or (multipart) of its parts' checksums,
 * written `<base64>-<parts>`. */
export type ChecksumType = 'FULL_OBJECT' | 'COMPOSITE'

export interface ObjectInfo {
  key: string
  size: number
  /** Quoted hex MD5, as S3 returns it in the ETag header. */
  etag: string
  lastModifiedMs: number
  http: HttpMeta
  /** x-amz-meta-* with the prefix removed, names lower-cased. */
  userMeta: Record<string, string>
  checksums: Checksums
  /** Set for a multipart object's checksum; absent, a checksum is of the whole (FULL_OBJECT). */
  checksumType?: ChecksumType
  /** Parts of an object made by CompleteMultipartUpload (x-amz-mp-parts-count); else absent. */
  partsCount?: number
  /** The version's id (`null` for the null version) when the bucket has versioning configured. */
  versionId?: string
  /** How many tags the version has (x-amz-tagging-count); absent when none. */
  tagCount?: number
  /** Cluster mode: the stamp of the write that made this version. */
  stamp?: string
}

export interface ObjectSummary {
  key: string
  size: number
  etag: string
  lastModifiedMs: number
  /** Set only when the listing asked for it (ListRequest.withContentType). */
  contentType?: string
}

export interface BucketInfo {
  name: string
  createdMs: number
  /** Cluster mode: the pool that holds the bucket's objects. */
  pool?: string
}

/** A page of ListBuckets: `truncated` when more buckets follow the last one. */
export interface BucketListing {
  buckets: BucketInfo[]
  truncated: boolean
}

/** What a PUT's bytes must hash to; every field that is present is verified before commit. */
export interface Expectations {
  md5Base64?: string
  sha256Hex?: string
  checksums?: Checksums
  /** A checksum to compute and keep with nothing to check it against (a part copied into an
   * upload created with that algorithm). */
  compute?: ChecksumAlgorithm
  /** Exact byte count announced by the client (decoded length for aws-chunked). */
  size?: number
}

/** GET/HEAD/Copy preconditions (If-* headers), dates in ms since the epoch. */
export interface Conditions {
  ifMatch?: string
  ifNoneMatch?: string
  ifModifiedSinceMs?: number
  ifUnmodifiedSinceMs?: number
}

export interface ListRequest {
  bucket: string
  prefix: string
  delimiter: string
  /** List keys strictly after this one (start-after, marker or a decoded continuation token). */
  after: string
  maxKeys: number
  /** Each summary carries the object's Content-Type (the admin listing; S3's does not ask). */
  withContentType?: true
  /** Cluster mode: the page carries each object's write stamp (ObjectColumns.stamps). */
  withStamps?: true
}
export interface ListPage {
  objects: ObjectColumns
  commonPrefixes: string[]
  truncated: boolean
  /** The last key or common prefix in this page: where the next page starts (exclusive). */
  lastReturned: string
}
