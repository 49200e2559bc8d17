/** @module ListBuckets as Amazon S3 pages it: `max-buckets` (1 to 10,000), `continuation-token`
 * (opaque, naming the last bucket of the previous page; empty is none), `prefix` and
 * `bucket-region`. A user sees the buckets it owns and those made before owners were recorded; a
 * SuperUser sees every bucket. */
import assert from 'node:assert/strict'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { decodeContinuationToken, encodeContinuationToken, listBucketsXml } from './xml/s3-xml.js'
import { ownerOf, regionOf } from './buckets.js'
import { askCoordinator, sendError, sendXml, type S3Exchange } from './exchange.js'

/** S3's bound on max-buckets, and the page size when a request gives none. */
const MAX_BUCKETS_MAX = 10_000

interface ListBucketsQuery {
  maxBuckets: number
  after: string
  prefix: string
}

function parseMaxBuckets(value: string | null): Result<number> {
  if (value === null) return ok(MAX_BUCKETS_MAX)
  const number = /^\d{1,5}$/.test(value) ? Number(value) : 0
  if (number < 1 || number > MAX_BUCKETS_MAX) {
    return fail('invalid_argument', 'Argument max-buckets must be an integer between 1 and 10000.')
  }
  return ok(number)
}

function listBucketsQuery(query: URLSearchParams): Result<ListBucketsQuery> {
  const maxBuckets = parseMaxBuckets(query.get('max-buckets'))
  if (!maxBuckets.ok) return maxBuckets
  let after = ''
  const token = query.get('continuation-token') ?? ''
  if (token !== '') {
    const decoded = decodeContinuationToken(token)
    if (!decoded.ok) return decoded
    after = decoded.value
  }
  return ok({ maxBuckets: maxBuckets.value, after, prefix: query.get('prefix') ?? '' })
}

export async function listBuckets(ex: S3Exchange): Promise<void> {
  const query = listBucketsQuery(ex.query)
  if (!query.ok) return sendError(ex, query.code, query.detail)
  const region = regionOf(ex)
  const regionAsked = ex.query.get('bucket-region')
  const prefix = ex.query.get('prefix') ?? undefined
  // Every bucket of the node is in its one region.
  if (regionAsked !== null && regionAsked !== region) {
    return sendXml(ex, 200, listBucketsXml({ buckets: [], by: ownerOf(ex), region, prefix }))
  }
  const principal = ex.principal
  assert(principal !== null, 'ListBuckets runs after authentication')
  const reply = await askCoordinator(ex, {
    kind: 'bucket.list',
    owner: principal.role === 'SuperUser' ? null : principal.userId,
    prefix: query.value.prefix,
    after: query.value.after,
    limit: query.value.maxBuckets,
  })
  if (!reply.ok) return sendError(ex, reply.code, reply.detail)
  const { buckets, truncated } = reply.value
  const last = buckets.at(-1)
  const continuationToken =
    truncated && last !== undefined ? encodeContinuationToken(last.name) : undefined
  sendXml(ex, 200, listBucketsXml({ buckets, by: ownerOf(ex), region, continuationToken, prefix }))
}
