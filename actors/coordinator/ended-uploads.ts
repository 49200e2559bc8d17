/** @module A replica that missed a multipart complete (it was down, or lacked a part) may still
 * hold the client's upload with its parts, whose bytes count in its bucket's storage: once the
 * object is merged into it as well, they would count twice, and until the upload expired. A
 * hint's delivery (bring.ts) therefore aborts there, first, the replica's uploads of the key that
 * any other replica holds as ended (completed or aborted): asking one alone would miss the end
 * when that one missed the complete too. */
import type { Context } from '../../protocol/actor.js'
import { LIST_UPLOADS_MAX } from '../../protocol/limits.js'
import type { UploadListing, UploadState } from '../../protocol/messages.js'
import type { ClusterState } from './cluster-state.js'
import type { KeyAt } from './merge-records.js'
import { askReplica } from './replica-calls.js'
import type { Replica } from './replicas.js'
import { freshStamp } from './stamps.js'

/** Aborts on `to` its uploads of the key that one of `others` holds as ended. One page of `to`'s
 * uploads is looked at (the key's own list first, before longer keys of the prefix). False when
 * a call failed: a hint then waits to be delivered again, as the replica may have missed the
 * complete's background abort too. */
export async function abortEnded(
  cluster: ClusterState,
  ctx: Context,
  to: Replica,
  others: readonly Replica[],
  at: KeyAt,
): Promise<boolean> {
  const asked = { bucket: at.bucket, requestId: at.requestId, deadlineMs: at.deadlineMs }
  const listed = await askReplica<UploadListing>(ctx, to, {
    kind: 'upload.list',
    ...asked,
    prefix: at.key,
    delimiter: '',
    keyMarker: '',
    uploadIdMarker: '',
    maxUploads: LIST_UPLOADS_MAX,
  })
  if (!listed.ok) return false
  const uploadIds = listed.value.uploads
    .filter((upload) => upload.key === at.key)
    .map((upload) => upload.uploadId)
  if (uploadIds.length === 0) return true
  const ended = new Set<string>()
  let answered = 0
  for (const other of others) {
    const states = await askReplica<UploadState[]>(ctx, other, {
      kind: 'upload.states',
      ...asked,
      uploadIds,
    })
    if (!states.ok) continue
    answered++
    uploadIds.forEach((id, index) => states.value[index] === 'ended' && ended.add(id))
  }
  let aborted = answered > 0
  for (const uploadId of ended) {
    // Stamped, as the client's abort is: a part of it arriving late finds it ended.
    const answer = await askReplica(ctx, to, {
      kind: 'upload.abort',
      ...asked,
      key: at.key,
      uploadId,
      stamp: freshStamp(cluster),
    })
    if (!answer.ok && answer.code !== 'no_such_upload') aborted = false
  }
  return aborted
}
