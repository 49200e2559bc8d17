/** @module CopyObject and UploadPartCopy across replicas: the source version is found by a quorum
 * read (its conditions checked there), then its bytes are read once from the replica that holds
 * it and written as a new body to the target key's replicas, which may be in another pool. The
 * target's write is stamped like any other, its conditions (If-Match and so on) checked as a
 * PUT's. A copy thus always moves bytes in a cluster; each replica still stores them once
 * (content-addressed). What the copy is and when it is refused, S3's rules decide as on a single
 * node (protocol/s3-rules/copy-source.ts). */
import type { ByteSource, Context } from '../../protocol/actor.js'
import type { ChecksumAlgorithm, Conditions } from '../../protocol/objects.js'
import { ok, type Result } from '../../protocol/errors.js'
import {
  checkCopySourceConditions,
  checkCopySourceSize,
  checkSelfCopy,
  checksumsOfBytes,
  copiedMetadata,
  copiedPartExpect,
  markerAsSource,
  partCopyRange,
} from '../../protocol/s3-rules/copy-source.js'
import type {
  AttributesResult,
  GetResult,
  ObjectMsg,
  PartInfo,
  PutResult,
} from '../../protocol/messages.js'
import {
  copiedAttributes,
  copyReadsSource,
  withAttributes,
  type ObjectAttributes,
} from '../../protocol/object-attributes.js'
import type { ClusterState } from './cluster-state.js'
import { listParts } from './listing.js'
import { clientAnswer, readQuorum, type ReplicaAnswer } from './reads.js'
import { askReplica, readRange, type ReadBytes } from './replica-calls.js'
import { replicasOf } from './replicas.js'
import { writeBody } from './writes.js'

type CopyMsg = Extract<ObjectMsg, { kind: 'object.copy' }>
type PartCopyMsg = Extract<ObjectMsg, { kind: 'upload.part-copy' }>
type Source = CopyMsg['source']

interface FoundSource {
  winner: ReplicaAnswer
  found: GetResult
}

/** The source version of a copy, by quorum, if it meets the copy's conditions
 * (x-amz-copy-source-if-*); a delete marker is no source. */
async function findSource(
  cluster: ClusterState,
  ctx: Context,
  source: Source,
  conditions: Conditions,
  request: { requestId: string; deadlineMs: number },
): Promise<Result<FoundSource>> {
  const set = await replicasOf(cluster, ctx, source, request.deadlineMs)
  if (!set.ok) return set
  const msg = {
    kind: 'object.get' as const,
    bucket: source.bucket,
    key: source.key,
    ...(source.versionId === undefined ? {} : { versionId: source.versionId }),
    ...request,
  }
  const read = await readQuorum(cluster, ctx, msg, set.value.reachable)
  if (!read.ok) return read
  const answer = clientAnswer(msg, read.value.winner.answer)
  if (!answer.ok) return answer
  if ('marker' in answer.value) return markerAsSource(source, answer.value.marker)
  const allowed = checkCopySourceConditions(answer.value.info, conditions)
  if (!allowed.ok) return allowed
  return ok({ winner: read.value.winner, found: answer.value })
}

/** The source's bytes `start..end`, read from the replica that holds the version. */
function sourceBytes(
  ctx: Context,
  source: Source,
  found: FoundSource,
  range: { start: number; end: number },
  request: { requestId: string; deadlineMs: number },
): Promise<Result<ReadBytes>> {
  const versionId = found.found.info.versionId
  const msg = {
    kind: 'object.get' as const,
    bucket: source.bucket,
    key: source.key,
    ...(versionId === undefined ? {} : { versionId }),
    ...request,
  }
  const etag = found.found.info.etag
  return readRange(ctx, found.winner.replica, msg, range, (head) => head.info.etag === etag)
}

/** The copy's attributes: the request's, and the source's it keeps, read from the replica that
 * holds the version only when it has one (its summary says so). */
async function copyAttributes(
  ctx: Context,
  msg: CopyMsg,
  found: FoundSource,
  request: { requestId: string; deadlineMs: number },
): Promise<Result<ObjectAttributes>> {
  const { info } = found.found
  if (!copyReadsSource(info.attributes, msg.attributes)) {
    return ok(copiedAttributes(undefined, msg.attributes))
  }
  const source = await askReplica<AttributesResult>(ctx, found.winner.replica, {
    kind: 'object.attributes.get',
    bucket: msg.source.bucket,
    key: msg.source.key,
    ...(info.versionId === undefined ? {} : { versionId: info.versionId }),
    ...request,
  })
  if (!source.ok) return source
  return ok(copiedAttributes(source.value.attributes, msg.attributes))
}

export async function copyObject(
  cluster: ClusterState,
  ctx: Context,
  msg: CopyMsg,
): Promise<Result<PutResult>> {
  const request = { requestId: msg.requestId, deadlineMs: msg.deadlineMs }
  const { source, target } = msg
  const changes = checkSelfCopy(source, target, msg.replace !== undefined)
  if (!changes.ok) return changes
  const found = await findSource(cluster, ctx, source, msg.conditions, request)
  if (!found.ok) return found
  const { info } = found.value.found
  const sized = checkCopySourceSize(info.size)
  if (!sized.ok) return sized
  const copied = copiedMetadata(info, msg)
  const attributes = await copyAttributes(ctx, msg, found.value, request)
  if (!attributes.ok) return attributes
  const body = await bodyOf(ctx, source, found.value, { start: 0, end: info.size - 1 }, request)
  if (!body.ok) return body
  const written = await writeBody(
    cluster,
    ctx,
    {
      kind: 'object.put',
      bucket: target.bucket,
      key: target.key,
      http: copied.http,
      userMeta: copied.userMeta,
      ...withAttributes(attributes.value),
      expect: { size: info.size, ...wholeChecksums(info) },
      ...(msg.targetConditions === undefined ? {} : { conditions: msg.targetConditions }),
      ...body.value.inline,
      ...request,
    },
    body.value.stream,
  )
  if (!written.ok) return written
  const result = { ...(written.value as PutResult) }
  if (info.versionId !== undefined) result.sourceVersionId = info.versionId
  return ok(result)
}

export async function copyPart(
  cluster: ClusterState,
  ctx: Context,
  msg: PartCopyMsg,
): Promise<Result<PartInfo>> {
  const request = { requestId: msg.requestId, deadlineMs: msg.deadlineMs }
  // The upload first: NoSuchUpload comes before any answer about the source, as on one node.
  const algorithm = await uploadAlgorithm(cluster, ctx, msg)
  if (!algorithm.ok) return algorithm
  const found = await findSource(cluster, ctx, msg.source, msg.conditions, request)
  if (!found.ok) return found
  const { info } = found.value.found
  const wanted = partCopyRange(msg.range, info.size)
  if (!wanted.ok) return wanted
  const range = wanted.value
  const expect = copiedPartExpect(range, info, algorithm.value)
  const body = await bodyOf(ctx, msg.source, found.value, range, request)
  if (!body.ok) return body
  const written = await writeBody(
    cluster,
    ctx,
    {
      kind: 'upload.part',
      bucket: msg.bucket,
      key: msg.key,
      uploadId: msg.uploadId,
      partNumber: msg.partNumber,
      expect,
      ...body.value.inline,
      ...request,
    },
    body.value.stream,
  )
  return written as Result<PartInfo>
}

/** The checksum algorithm the upload was created with (its parts must carry it), asked of R of
 * the key's replicas: a copied part gets it computed. */
async function uploadAlgorithm(
  cluster: ClusterState,
  ctx: Context,
  msg: PartCopyMsg,
): Promise<Result<ChecksumAlgorithm | undefined>> {
  const listed = await listParts(cluster, ctx, {
    kind: 'upload.list-parts',
    bucket: msg.bucket,
    key: msg.key,
    uploadId: msg.uploadId,
    afterPartNumber: 0,
    maxParts: 0,
    requestId: msg.requestId,
    deadlineMs: msg.deadlineMs,
  })
  return listed.ok ? ok(listed.value.checksum?.algorithm) : listed
}

/** The bytes to write, as the fields of a write and its body's source: none for an empty range,
 * inline bytes, or a stream from the source's holder. */
async function bodyOf(
  ctx: Context,
  source: Source,
  found: FoundSource,
  range: { start: number; end: number },
  request: { requestId: string; deadlineMs: number },
): Promise<Result<{ inline: { body: Uint8Array } | object; stream?: ByteSource }>> {
  if (range.end < range.start) return ok({ inline: { body: new Uint8Array(0) } })
  const read = await sourceBytes(ctx, source, found, range, request)
  if (!read.ok) return read
  if ('body' in read.value) return ok({ inline: { body: read.value.body } })
  return ok({ inline: {}, stream: read.value.source })
}

/** The source's checksums that describe its whole bytes, kept and verified by the copy. */
function wholeChecksums(info: GetResult['info']): { checksums?: GetResult['info']['checksums'] } {
  const checksums = checksumsOfBytes(info)
  return Object.keys(checksums).length === 0 ? {} : { checksums }
}
