/** @module Bucket quotas on the S3 surface: a write that would take its bucket past its bounds
 * (the bucket setting `quota`: a size in bytes, a count of objects) is refused with 403
 * QuotaExceeded before any of its bytes are read. The bucket's usage is the cluster's, as the
 * admin API's bucket stats count it (`bucket.stats`, every node asked in a cluster), read at most
 * once per USAGE_TTL_MS on each ingress thread for all buckets at once, and again after each
 * write to a bucket with a quota. A quota is therefore a bound checked against usage up to that
 * old: writes racing within it (on other threads or nodes, or at once) may pass it together, as
 * they may with MinIO's quotas, which are checked against usage scanned in the background. */
import type { BucketQuota } from '../../protocol/bucket-settings.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { BucketStats } from '../../protocol/messages.js'
import { askCoordinator, type S3Exchange } from './exchange.js'
import type { S3Operation } from './operation.js'

const USAGE_TTL_MS = 1000

/** Writes that store bytes; those marked true also make an object. */
const WRITES: Partial<Record<S3Operation, boolean>> = {
  PutObject: true,
  CopyObject: true,
  PostObject: true,
  CreateMultipartUpload: true,
  CompleteMultipartUpload: true,
  UploadPart: false,
  UploadPartCopy: false,
}

let usage: { readMs: number; stats: Promise<Result<BucketStats[]>> } | null = null

function bucketUsage(ex: S3Exchange): Promise<Result<BucketStats[]>> {
  const nowMs = ex.mesh.now()
  if (usage === null || nowMs - usage.readMs >= USAGE_TTL_MS) {
    const stats = askCoordinator(ex, { kind: 'bucket.stats' })
    usage = { readMs: nowMs, stats }
    void stats.then((read) => {
      if (!read.ok && usage?.stats === stats) usage = null
    })
  }
  return usage.stats
}

/** The bytes a request brings: its decoded length for an aws-chunked body. */
function incomingBytes(ex: S3Exchange): number {
  const declared = ex.headers['x-amz-decoded-content-length'] ?? ex.headers['content-length']
  const bytes = Number(declared ?? 0)
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : 0
}

export async function checkQuota(
  ex: S3Exchange,
  operation: S3Operation,
  quota: BucketQuota | null,
): Promise<Result<null>> {
  const makesObject = WRITES[operation]
  const bucket = ex.target.bucket
  if (quota === null || makesObject === undefined || bucket === null) return ok(null)
  const stats = await bucketUsage(ex)
  if (!stats.ok) return stats
  // The usage this write changes is read afresh by the next write on this thread.
  ex.outgoing.once('finish', () => {
    usage = null
  })
  const used = stats.value.find((entry) => entry.name === bucket)
  if (used === undefined) return ok(null)
  const adds = incomingBytes(ex)
  if (quota.maxBytes !== null && used.storageUsedBytes + adds > quota.maxBytes) {
    return fail(
      'quota_exceeded',
      `The bucket ${bucket} may hold ${quota.maxBytes} bytes: it holds ` +
        `${used.storageUsedBytes} and this request brings ${adds}.`,
    )
  }
  if (makesObject && quota.maxObjects !== null && used.objectsCount >= quota.maxObjects) {
    return fail(
      'quota_exceeded',
      `The bucket ${bucket} may hold ${quota.maxObjects} objects and holds ${used.objectsCount}.`,
    )
  }
  return ok(null)
}
