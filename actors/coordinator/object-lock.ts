/** @module Object lock in a cluster: a delete of a version by id is judged once, by its
 * coordinator, before it is stamped. The bucket's configuration is this node's catalog's; the
 * version's lock is what a read quorum finds (so an acknowledged retention or legal hold is seen,
 * whichever replicas missed it); the time is the cluster's: a fresh hybrid-clock stamp, never
 * behind a stamp this node has seen, not one node's wall clock alone. Replicas then remove the
 * version without judging again (replica-store engine/versions.ts, `judged`), so that no replica's
 * clock makes it keep what the others removed. */
import type { Context } from '../../protocol/actor.js'
import { ok, type Result } from '../../protocol/errors.js'
import { parseHlc } from '../../protocol/hlc.js'
import type { AttributesResult } from '../../protocol/messages.js'
import { mayDeleteVersion, versionLockOf } from '../../protocol/s3-rules/object-lock.js'
import type { ClusterState } from './cluster-state.js'
import { freshStamp } from './stamps.js'

export interface VersionDelete {
  bucket: string
  key: string
  versionId: string
  bypassGovernance?: true
  requestId: string
  deadlineMs: number
}

/** Whether the bucket has object lock, by this node's catalog. */
export async function hasObjectLock(
  ctx: Context,
  request: { bucket: string; requestId: string; deadlineMs: number },
): Promise<Result<boolean>> {
  const read = await ctx.call('replica-store', {
    kind: 'bucket.setting.get',
    bucket: request.bucket,
    name: 'objectLock',
    requestId: request.requestId,
    deadlineMs: request.deadlineMs,
  })
  if (read.ok) return ok(true)
  return read.code === 'no_such_object_lock_configuration' ? ok(false) : read
}

/** Whether object lock lets the version go; `attributesOf` is the quorum read of a version's
 * attributes (coordinator.ts). A version no quorum holds has nothing to protect. */
export async function judgeVersionDelete(
  cluster: ClusterState,
  ctx: Context,
  target: VersionDelete,
  attributesOf: (msg: {
    kind: 'object.attributes.get'
    bucket: string
    key: string
    versionId: string
    requestId: string
    deadlineMs: number
  }) => Promise<Result<AttributesResult>>,
): Promise<Result<null>> {
  const { bucket, key, versionId, requestId, deadlineMs } = target
  const read = await attributesOf({
    kind: 'object.attributes.get',
    ...{ bucket, key, versionId, requestId, deadlineMs },
  })
  if (!read.ok) {
    const gone = ['no_such_key', 'no_such_version', 'method_not_allowed'].includes(read.code)
    return gone ? ok(null) : read
  }
  const nowMs = parseHlc(freshStamp(cluster))?.wallMs ?? ctx.now()
  const lock = versionLockOf(read.value.attributes)
  return mayDeleteVersion(lock, nowMs, target.bypassGovernance === true)
}
