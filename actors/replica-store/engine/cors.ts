/** @module Bucket CORS requests: bucket.cors.put, bucket.cors.get, bucket.cors.delete. A bucket's
 * configuration is a record of its own under R\0<bucket> (keys.ts) rather than a field of the
 * bucket record: every object mutation reads and rewrites the bucket record, and a configuration
 * may take tens of KiB. Mutation.deleteBucket deletes it in the bucket's own batch, so a new bucket
 * of the same name starts without rules. Each change is prepared synchronously right before its
 * commit, like every mutation, so a put racing a bucket delete either lands before the delete (and
 * goes with it) or finds no bucket. The ingress validated the configuration (protocol/cors.ts);
 * here it is asserted. A record read back from disk is validated again and is `corrupt` if bad. */
import assert from 'node:assert/strict'
import type { Context } from '../../../protocol/actor.js'
import {
  validateCorsConfiguration,
  type CorsConfiguration,
  type CorsRule,
} from '../../../protocol/cors.js'
import { fail, ok, ServiceError, type Result } from '../../../protocol/errors.js'
import { CORS_BODY_BYTES_MAX } from '../../../protocol/limits.js'
import { corsKey } from '../keys.js'
import { Mutation } from '../mutation.js'
import { decodeText, encodeRecord } from '../records.js'
import { commitMutation, type StoreState } from '../store-state.js'

/** The largest record a valid configuration makes: JSON at most doubles a value (only `"` and `\`
 * are escaped; control characters are refused), and the fixed keys of a rule take under 100 bytes
 * more than its XML elements did, 10 KB for 100 rules: below 3 times the 64 KiB body. */
const CORS_RECORD_BYTES_MAX = 3 * CORS_BODY_BYTES_MAX

function noSuchBucket<T>(bucket: string): Result<T> {
  return fail('no_such_bucket', `bucket ${bucket} does not exist`)
}

export async function putCors(
  state: StoreState,
  bucket: string,
  cors: CorsConfiguration,
  ctx: Context,
): Promise<Result<null>> {
  assert(validateCorsConfiguration(cors).ok, 'bucket.cors.put with an invalid configuration')
  const record = encodeRecord(cors)
  assert(record.byteLength <= CORS_RECORD_BYTES_MAX, 'CORS record larger than its bound')
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(bucket) === undefined) return noSuchBucket(bucket)
  mutation.put(corsKey(bucket), record)
  mutation.catalogKeys.add(corsKey(bucket))
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

export function getCors(bucket: string, ctx: Context): Result<CorsConfiguration> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(bucket) === undefined) return noSuchBucket(bucket)
  const stored = mutation.get(corsKey(bucket))
  if (stored === undefined) {
    return fail('no_such_cors_configuration', 'The CORS configuration does not exist')
  }
  return ok(decodeCors(stored))
}

/** Deleting rules a bucket does not have succeeds, as in S3 (204 either way). */
export async function deleteCors(
  state: StoreState,
  bucket: string,
  ctx: Context,
): Promise<Result<null>> {
  const mutation = new Mutation(ctx.kv)
  if (mutation.bucket(bucket) === undefined) return noSuchBucket(bucket)
  if (mutation.get(corsKey(bucket)) === undefined) return ok(null)
  mutation.del(corsKey(bucket))
  mutation.catalogKeys.add(corsKey(bucket))
  await commitMutation(state, ctx, mutation)
  return ok(null)
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string')
}

function isRuleShape(value: unknown): value is CorsRule {
  if (typeof value !== 'object' || value === null) return false
  const rule = value as Record<string, unknown>
  const lists = ['allowedOrigins', 'allowedMethods', 'allowedHeaders', 'exposeHeaders']
  if (!lists.every((name) => isStringList(rule[name]))) return false
  if (rule['id'] !== undefined && typeof rule['id'] !== 'string') return false
  return rule['maxAgeSeconds'] === undefined || typeof rule['maxAgeSeconds'] === 'number'
}

function decodeCors(bytes: Uint8Array): CorsConfiguration {
  if (bytes.byteLength > CORS_RECORD_BYTES_MAX) {
    throw new ServiceError('corrupt', 'CORS record larger than its bound')
  }
  let value: unknown
  try {
    value = JSON.parse(decodeText(bytes, 'CORS'))
  } catch (error) {
    if (error instanceof ServiceError) throw error
    throw new ServiceError('corrupt', 'CORS record is not JSON')
  }
  const rules = (value as { rules?: unknown } | null)?.rules
  if (!Array.isArray(rules) || !rules.every(isRuleShape)) {
    throw new ServiceError('corrupt', 'CORS record: bad rules')
  }
  const config = validateCorsConfiguration({ rules })
  if (!config.ok) throw new ServiceError('corrupt', `CORS record: ${config.detail}`)
  return config.value
}
