/** @module Object and bucket records as they travel between actors (plain data). */
import type { z } from 'zod'
import type {
  bodyDigests,
  checksumAlgorithm,
  checksums,
  checksumType,
  conditions,
  expectations,
  httpMeta,
} from './wire/fields.js'
import type { Fields } from './wire/fields.js'
import type * as answers from './wire/replica-answers.js'
import type { objectList } from './wire/replica.js'

/** Content-* and caching headers S3 stores with an object and returns on GET/HEAD. */
export type HttpMeta = z.infer<typeof httpMeta>

/** Additional checksums (x-amz-checksum-*) an object was uploaded with, base64 as on the wire. */
export type ChecksumAlgorithm = z.infer<typeof checksumAlgorithm>
export type Checksums = z.infer<typeof checksums>
export type BodyDigests = z.infer<typeof bodyDigests>
/** x-amz-checksum-type: a checksum of the object's bytes, or (multipart) of its parts' checksums,
 * written `<base64>-<parts>`. */
export type ChecksumType = z.infer<typeof checksumType>

/* An object as replicas answer it; the schemas (wire/replica-answers.ts) say what each field is. */
export type ObjectInfo = z.infer<typeof answers.objectInfo>
export type ObjectSummary = z.infer<typeof answers.objectSummary>

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
export type Expectations = z.infer<typeof expectations>

/** GET/HEAD/Copy preconditions (If-* headers), dates in ms since the epoch. */
export type Conditions = z.infer<typeof conditions>

/** A page of a bucket's keys (`object.list`, whose schema wire/replica.ts has). */
export type ListRequest = Omit<Fields<typeof objectList>, 'kind'>
/** A page of a listing (`object.list`'s answer). */
export type ListPage = z.infer<typeof answers.listPage>
