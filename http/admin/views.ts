/** @module The admin API's JSON shapes (snake_case, times as ISO 8601 UTC), built field by field
 * from the actors' replies so that nothing a reply may carry besides them (a hash, a secret) can
 * slip into a response. */
import type { BucketStats, LoginGrant, UserView } from '../../protocol/messages.js'
import type { ListPage } from '../../protocol/objects.js'
import { objectSummaries } from '../../protocol/object-columns.js'
import { encodeContinuationToken, s3Timestamp } from '../s3/xml/s3-xml.js'

export interface LoginJson {
  token: string
  expires_at: string
}

export function loginJson(grant: LoginGrant): LoginJson {
  return { token: grant.token, expires_at: s3Timestamp(grant.expiresAtMs) }
}

export interface UserJson {
  id: string
  username: string
  role: string
  is_active: boolean
  created_at: string
  access_key: string | null
}

export function userJson(user: UserView): UserJson {
  return {
    id: user.id,
    username: user.username,
    role: user.role,
    is_active: user.isActive,
    created_at: s3Timestamp(user.createdMs),
    access_key: user.accessKey,
  }
}

export interface BucketStatsJson {
  name: string
  objects_count: number
  storage_used_bytes: number
  created_at: string
}

export function bucketStatsJson(stats: BucketStats): BucketStatsJson {
  return {
    name: stats.name,
    objects_count: stats.objectsCount,
    storage_used_bytes: stats.storageUsedBytes,
    created_at: s3Timestamp(stats.createdMs),
  }
}

export interface ObjectJson {
  key: string
  size: number
  etag: string
  last_modified: string
  /** Null only if the store did not report it. */
  content_type: string | null
}

export interface ObjectListJson {
  objects: ObjectJson[]
  is_truncated: boolean
  /** Opaque; null when this page is the last. */
  next_continuation_token: string | null
  key_count: number
  prefix: string
}

export function objectListJson(page: ListPage, prefix: string): ObjectListJson {
  const objects = objectSummaries(page.objects).map((summary) => ({
    key: summary.key,
    size: summary.size,
    etag: summary.etag,
    last_modified: s3Timestamp(summary.lastModifiedMs),
    content_type: summary.contentType ?? null,
  }))
  return {
    objects,
    is_truncated: page.truncated,
    next_continuation_token: page.truncated ? encodeContinuationToken(page.lastReturned) : null,
    key_count: objects.length,
    prefix,
  }
}
