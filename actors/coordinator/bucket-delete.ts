/** @module DeleteBucket in cluster mode. Whether the bucket is empty is a cluster question: a
 * merged listing of its versions (every object, version and delete marker; uploads in progress do
 * not count, as in S3) says so, newest change first, so a replica that still holds a key deleted
 * elsewhere does not keep the bucket. Then every other reachable node of the pool empties its copy
 * (objects, versions, uploads) and this node deletes its own and publishes the catalog's
 * tombstone; a node that was down finds the tombstone when it pulls the catalog. A forced
 * delete (admin API) skips the check. */
import type { Context } from '../../protocol/actor.js'
import { fail, type Result } from '../../protocol/errors.js'
import type { ObjectMsg } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import { listVersions } from './listing.js'
import { askReplica } from './replica-calls.js'
import { poolLayout } from './replicas.js'

type DeleteMsg = Extract<ObjectMsg, { kind: 'bucket.delete' }>

export async function deleteBucket(
  cluster: ClusterState,
  ctx: Context,
  msg: DeleteMsg,
): Promise<Result<null>> {
  const ids = { requestId: msg.requestId, deadlineMs: msg.deadlineMs }
  const layout = await poolLayout(cluster, ctx, msg.bucket, msg.deadlineMs)
  if (!layout.ok) return layout
  if (msg.force !== true) {
    const listed = await listVersions(cluster, ctx, {
      kind: 'object.list-versions',
      bucket: msg.bucket,
      prefix: '',
      delimiter: '',
      keyMarker: '',
      versionIdMarker: '',
      maxKeys: 1,
      ...ids,
    })
    if (!listed.ok) return listed
    if (listed.value.versions.length > 0) {
      return fail('bucket_not_empty', `bucket ${msg.bucket} is not empty`)
    }
  }
  // The other nodes empty their copies first: once this node publishes the catalog's tombstone,
  // a node that applied it would no longer know the bucket, and its uploads would stay behind.
  const forced: DeleteMsg = { ...msg, force: true }
  const others = layout.value.reachable.filter((replica) => !replica.local)
  const emptied = await Promise.all(others.map((replica) => askReplica<null>(ctx, replica, forced)))
  emptied.forEach((result, index) => {
    if (!result.ok && result.code !== 'no_such_bucket') {
      const node = others[index]?.id
      ctx.log.warn({ node, code: result.code, detail: result.detail }, 'bucket left on a node')
    }
  })
  const deleted = await ctx.call('replica-store', forced)
  cluster.bucketPools.delete(msg.bucket)
  return deleted
}
