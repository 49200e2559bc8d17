/** @module A multipart object given to a replica that lacks it (anti-entropy's key sync, a hint's
 * delivery): its upload is made again there alone, under a new upload id, part by part with the
 * bytes read from a replica that holds the version, and completed under the object's own stamp.
 * The replica then holds the same object: the ETag (MD5 of the parts' MD5s), checksums (the
 * upload's algorithm and type, from the object's), size, parts, metadata, tags and, from the
 * stamp, Last-Modified and version id. The upload's own records (its id, its completion) are the
 * replica's alone, as no client ever sees them. A failure aborts the upload there.
 * A replica that missed the complete (it was down, or lacked a part) may still hold the client's
 * upload with its parts, whose bytes count in its bucket's storage: once the object is given to it
 * as well, those bytes would count twice, and until the upload expired. So the replica's uploads
 * of the key that the source replica says ended (completed or aborted) are aborted there first,
 * or nothing is copied: the next round tries again. */
import type { Context } from '../../protocol/actor.js'
import type { BodyRange } from '../../protocol/cluster.js'
import { LIST_UPLOADS_MAX } from '../../protocol/limits.js'
import type {
  GetResult,
  KeySynced,
  PartInfo,
  PutResult,
  UploadListing,
  UploadState,
} from '../../protocol/messages.js'
import type { UploadChecksum } from '../../protocol/multipart-checksum.js'
import type { ChecksumAlgorithm, Checksums } from '../../protocol/objects.js'
import type { Tag } from '../../protocol/tagging.js'
import type { ClusterState } from './cluster-state.js'
import type { GetMsg, StampedAnswer } from './reads.js'
import { askReplica, copyRange, writeToReplica } from './replica-calls.js'
import type { Replica } from './replicas.js'
import { freshStamp } from './stamps.js'

export interface VersionAt {
  bucket: string
  key: string
  versionId?: string
  requestId: string
  deadlineMs: number
}

/** Copies the multipart version `at` names from `from` to `to`; false when it could not (the
 * version changed or went, a replica failed). `stamp` and `etag` are the version's as the sync
 * saw it. Answers the bytes copied. */
export async function replayMultipart(
  cluster: ClusterState,
  ctx: Context,
  from: Replica,
  to: Replica,
  at: VersionAt,
  seen: { stamp: string; etag: string },
  tags: Tag[],
): Promise<Pick<KeySynced, 'bytes'> | null> {
  const read: GetMsg = { kind: 'object.get', ...at }
  const head = await askReplica<StampedAnswer>(ctx, from, {
    ...read,
    stamped: true,
    withParts: true,
  })
  if (!head.ok || !('info' in head.value) || head.value.parts === undefined) return null
  const { info, parts } = head.value
  if (info.stamp !== seen.stamp || info.etag !== seen.etag) return null
  // Copied while they stay open, the object would leave them open for good: the key is alike.
  if (!(await abortEnded(cluster, ctx, { from, to }, at))) return null
  const uploadId = freshStamp(cluster) + Buffer.from(ctx.randomBytes(4)).toString('hex')
  const upload = { bucket: at.bucket, key: at.key, uploadId, requestId: at.requestId }
  const checksum = uploadChecksum(info.checksums, info.checksumType)
  const created = await askReplica(ctx, to, {
    kind: 'upload.create',
    bucket: at.bucket,
    key: at.key,
    http: info.http,
    userMeta: info.userMeta,
    ...(checksum === undefined ? {} : { checksum }),
    ...(tags.length === 0 ? {} : { tags }),
    stamp: freshStamp(cluster),
    uploadId,
    requestId: at.requestId,
    deadlineMs: at.deadlineMs,
  })
  if (!created.ok) return null
  const completed: { partNumber: number; etag: string; checksums?: Checksums }[] = []
  let start = 0
  for (const [index, part] of parts.entries()) {
    const partNumber = index + 1
    const range = { start, end: start + part.size - 1 }
    start += part.size
    const copy = { partNumber, range, checksums: part.checksums, etag: info.etag }
    const etag = await copyPart(cluster, ctx, from, to, read, upload, copy)
    if (etag === null) {
      await abort(ctx, to, upload, at.deadlineMs)
      return null
    }
    const checksums = part.checksums
    completed.push({
      partNumber,
      etag,
      ...(Object.keys(checksums).length > 0 ? { checksums } : {}),
    })
  }
  const done = await askReplica<PutResult>(ctx, to, {
    kind: 'upload.complete',
    ...upload,
    parts: completed,
    stamp: seen.stamp,
    deadlineMs: at.deadlineMs,
  })
  if (!done.ok || done.value.etag !== info.etag) {
    if (!done.ok) await abort(ctx, to, upload, at.deadlineMs)
    return null
  }
  return { bytes: info.size }
}

/** Aborts on `to` its uploads of the key that `from` holds as ended: the client's complete (or
 * abort) never reached `to`, and their parts would stay counted there. One page of `to`'s uploads
 * is looked at (the key's own list first, before longer keys of the prefix). A hint's delivery
 * asks it too (bring.ts), whatever state it brings. False when a call failed: a hint then waits
 * to be delivered again, as the replica may have missed the complete's background abort too. */
export async function abortEnded(
  cluster: ClusterState,
  ctx: Context,
  { from, to }: { from: Replica; to: Replica },
  at: VersionAt,
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
  const held = listed.value.uploads.filter((upload) => upload.key === at.key)
  if (held.length === 0) return true
  const uploadIds = held.map((upload) => upload.uploadId)
  const states = await askReplica<UploadState[]>(ctx, from, {
    kind: 'upload.states',
    ...asked,
    uploadIds,
  })
  if (!states.ok) return false
  const ended = uploadIds.filter((_, index) => states.value[index] === 'ended')
  let aborted = true
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

/** The upload's checksum as the object records it: an algorithm and a type, or none. */
function uploadChecksum(
  checksums: Checksums,
  type: UploadChecksum['type'] | undefined,
): UploadChecksum | undefined {
  const algorithm = Object.keys(checksums)[0] as ChecksumAlgorithm | undefined
  if (type === undefined || algorithm === undefined) return undefined
  return { algorithm, type }
}

/** Uploads part `partNumber` (the bytes `range` of the version) to `to`; its ETag, or null. */
async function copyPart(
  cluster: ClusterState,
  ctx: Context,
  from: Replica,
  to: Replica,
  read: GetMsg,
  upload: { bucket: string; key: string; uploadId: string; requestId: string },
  part: { partNumber: number; range: BodyRange; checksums: Checksums; etag: string },
): Promise<string | null> {
  const { partNumber, range, etag } = part
  const size = range.end - range.start + 1
  const write = writeToReplica<PartInfo>(ctx, to, {
    kind: 'upload.part',
    ...upload,
    partNumber,
    expect: { checksums: part.checksums, size },
    stamp: freshStamp(cluster),
    deadlineMs: read.deadlineMs,
  })
  const expected = (head: GetResult): boolean => head.info.etag === etag
  const answer = await copyRange(ctx, from, read, range, expected, write)
  return answer.ok ? answer.value.etag : null
}

async function abort(
  ctx: Context,
  to: Replica,
  upload: { bucket: string; key: string; uploadId: string; requestId: string },
  deadlineMs: number,
): Promise<void> {
  await askReplica(ctx, to, { kind: 'upload.abort', ...upload, deadlineMs })
}
