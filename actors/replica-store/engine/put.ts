/** @module object.put: takes a body inline or from a stream, hashes it while it passes (MD5 for
 * the ETag, SHA-256 for the content address, CRC32 for the scrubber, and every checksum the client
 * named), keeps at most INLINE_BLOB_BYTES_MAX in memory and spills anything larger to a temporary
 * blob file, verifies, and commits. A lent write (msg.lentWrite, a single node's ingress) leaves
 * the file's writes and the hashes to the sender: the store lends it a new temporary file on the
 * stream and takes the digests it sends with the end.
 *
 * Nothing is visible before the single metadata commit, and a failed or aborted upload discards
 * its temporary file. Dedup: if a blob with the same SHA-256 exists, the new bytes are dropped and
 * the object references the existing blob. A large blob's order is: file synced, ONE kv batch
 * (blob, file->sha, object, old object's dereference, counters), then promotion in the background;
 * recovery finishes a promotion a crash interrupted. */
import assert from 'node:assert/strict'
import type { BlobWriter, ByteSource, Context } from '../../../protocol/actor.js'
import { BodyHasher, namedChecksums } from '../../../protocol/body-hasher.js'
import { checksumAlgorithmFromHeader, crcToBase64 } from '../../../protocol/checksums.js'
import { fail, ok, ServiceError, type ErrorCode, type Result } from '../../../protocol/errors.js'
import { INLINE_BLOB_BYTES_MAX, SINGLE_PUT_BYTES_MAX } from '../../../protocol/limits.js'
import { END_STAMP_TRAILER, type ObjectMsg, type PutResult } from '../../../protocol/messages.js'
import type { BodyDigests, ChecksumAlgorithm, Checksums } from '../../../protocol/objects.js'
import { withAttributes } from '../../../protocol/object-attributes.js'
import { fileKey, garbageKey, isStamp } from '../keys.js'
import { Mutation, ShardContention, type NewBlob } from '../mutation.js'
import { type ObjectRecord } from '../records.js'
import {
  commitMutation,
  promoteInBackground,
  retryingClaims,
  type StoreState,
} from '../store-state.js'
import { placeStamped, stampedChange, writeStamped, type Placement } from '../replication/stamps.js'
import { writeCurrent, type StampedChange } from './versions.js'
import { checkWriteConditions } from './write-conditions.js'

export type PutMsg = Extract<ObjectMsg, { kind: 'object.put' }>
/** A message whose body the store takes in: object.put, and upload.part (a part is stored the way
 * an object is, only its record differs). */
export type BodyMsg = Extract<ObjectMsg, { kind: 'object.put' | 'upload.part' }>

/** Records a verified body in `mutation`, with no await: checks what must still hold, adds the
 * blob reference (creating the blob from `created` if none has this sha256 yet) and writes the
 * record that names it. */
export type Recorder<T> = (
  mutation: Mutation,
  verified: Verified,
  created: NewBlob | undefined,
) => Result<{ value: T; createdBlob: boolean }>

/** Why an object write is refused before its first byte is read. */
export const NO_ROOM = 'the data volume has no room for more object data'
/** Random bytes in a file id (see keys.ts isFileId: 32 hex characters). */
const FILE_ID_BYTES = 16
const FILE_ID_ATTEMPTS_MAX = 8

/** The body as it arrives: the bytes either in memory or in a temporary file. */
interface Ingest {
  memory: Uint8Array[]
  file: { id: string; writer: BlobWriter } | null
}

/** `given`: the body's bytes from within this actor (a copy's), in place of the message's. */
export function putObject(
  state: StoreState,
  msg: PutMsg,
  ctx: Context,
  given?: ByteSource,
): Promise<Result<PutResult>> {
  assert(msg.key.length > 0)
  const bucketExists = (mutation: Mutation): Result<null> =>
    mutation.bucket(msg.bucket) === undefined
      ? fail('no_such_bucket', `bucket ${msg.bucket} does not exist`)
      : ok(null)
  // A write's conditions are checked before its body is read, as a cluster's coordinator does,
  // and again in the commit, which settles a racing write.
  const admit = (mutation: Mutation): Result<null> => {
    const exists = bucketExists(mutation)
    return exists.ok ? checkWriteConditions(mutation, msg, msg.conditions) : exists
  }
  const recordPut: Recorder<PutResult> = (mutation, verified, created) => {
    const exists = bucketExists(mutation)
    if (!exists.ok) return exists
    // Here, in the commit's synchronous step, not before the body: a racing write is settled.
    const allowed = checkWriteConditions(mutation, msg, msg.conditions)
    if (!allowed.ok) return allowed
    const record: ObjectRecord = {
      size: verified.size,
      etag: verified.etag,
      lastModifiedMs: ctx.now(),
      http: msg.http,
      userMeta: msg.userMeta,
      checksums: verified.checksums,
      sha256: verified.sha256,
      ...withAttributes(msg.attributes),
    }
    if (msg.stamp !== undefined) {
      return putStamped(state, ctx, mutation, msg, msg.stamp, record, created)
    }
    const createdBlob = mutation.addReference(verified.sha256, created)
    const versionId = writeCurrent(state, ctx, mutation, msg, record)
    const { etag, lastModifiedMs, checksums } = record
    const value: PutResult = { etag, lastModifiedMs, checksums }
    if (versionId !== undefined) value.versionId = versionId
    return ok({ value, createdBlob })
  }
  return storeBody(state, msg, ctx, admit, recordPut, given)
}

/** A stamped put (stamps.ts): written where its stamp places it; where that is nowhere, its blob
 * gets no reference, so its bytes are dropped as a duplicate's are. */
function putStamped(
  state: StoreState,
  ctx: Context,
  mutation: Mutation,
  msg: PutMsg,
  stamp: string,
  record: ObjectRecord,
  created: NewBlob | undefined,
): Result<{ value: PutResult; createdBlob: boolean }> {
  const change = stampedChange(stamp, msg.versioning)
  const placement = placeStamped(mutation, msg, change)
  const sha256 = record.sha256 as string
  const createdBlob = placement.where === 'nowhere' ? false : mutation.addReference(sha256, created)
  writeStamped(state, ctx, mutation, msg, record, change, placement)
  return ok({ value: stampedResult(record, change, placement), createdBlob })
}

/** What a stamped write answers, applied or not: the stamp's time and version id. */
export function stampedResult(
  record: Pick<ObjectRecord, 'etag' | 'checksums' | 'checksumType'>,
  change: StampedChange,
  placement: Placement,
): PutResult {
  const value: PutResult = {
    etag: record.etag,
    lastModifiedMs: change.wallMs,
    checksums: record.checksums,
  }
  if (record.checksumType !== undefined) value.checksumType = record.checksumType
  if (placement.versionId !== undefined) value.versionId = placement.versionId
  if (placement.stale) value.stale = true
  return value
}

/** How long a write that found no room waits for garbage removals under way: a few unlinks. */
const REMOVALS_WAIT_MS = 1_000

/** Whether `size` bytes of object data fit. A delete answers before its files are removed, so a
 * write that finds no room waits (bounded) for removals under way and asks once more: room a
 * delete made is there for the next write. */
async function roomFor(
  state: StoreState,
  ctx: Context,
  size: number,
  lent: boolean,
): Promise<boolean> {
  // Bytes no file write of this thread counts: inline ones, and those of a lent file.
  const counted = lent || size <= INLINE_BLOB_BYTES_MAX
  if (await ctx.blobs.admits(size, counted)) return true
  if (state.removing.size === 0) return false
  let cancel = (): void => undefined
  const waited = new Promise<void>((resolve) => {
    cancel = ctx.after(REMOVALS_WAIT_MS, resolve)
  })
  await Promise.race([Promise.allSettled([...state.removing]), waited])
  cancel()
  return ctx.blobs.admits(size, counted)
}

/** Takes in a body, verifies it and commits it through `record`. `admit` is checked before the
 * first byte is read (and `record` checks again: requests run in between). `given` is the source
 * of a stream this actor opened itself (UploadPartCopy), already asked for its bytes. */
export async function storeBody<T>(
  state: StoreState,
  msg: BodyMsg,
  ctx: Context,
  admit: (mutation: Mutation) => Result<null>,
  record: Recorder<T>,
  given?: ByteSource,
): Promise<Result<T>> {
  assert((msg.body === undefined) !== (msg.stream === undefined), 'put needs a body or a stream')
  const source = given ?? (msg.stream === undefined ? null : ctx.source(msg.stream, msg.deadlineMs))
  // A cluster's store takes bodies from other nodes too: it hashes every one itself.
  if (msg.digests !== undefined && (ctx.config['SVC_MODE'] ?? 'single') !== 'single') {
    return fail('invalid_request', "digests come with a body from a single node's own ingress")
  }
  const size = msg.expect.size ?? msg.body?.byteLength ?? 0
  const lent = given === undefined && source !== null && msg.lentWrite === true
  if (!(await roomFor(state, ctx, size, lent))) {
    source?.cancel('insufficient_storage', NO_ROOM)
    return fail('insufficient_storage', NO_ROOM)
  }
  const admitted = admit(new Mutation(ctx.kv))
  if (!admitted.ok) {
    source?.cancel(admitted.code, admitted.detail)
    return admitted
  }
  const ingest: Ingest = { memory: [], file: null }
  const md5BySender = given === undefined && source !== null && msg.streamMd5 === true
  let verified: Verified
  try {
    const digests = lent
      ? await takeLentWrite(ingest, source, ctx)
      : await receive(ingest, msg, source, ctx, md5BySender)
    verified = verify(digests, msg, source)
  } catch (error) {
    // The sender learns at once (rather than at its idle timeout) that nothing more is read.
    const failure = error instanceof ServiceError ? error : null
    source?.cancel(failure?.code ?? 'internal', failure?.message ?? 'replica-store failed')
    await ingest.file?.writer.discard()
    if (failure === null) throw error
    return fail(failure.code, failure.message)
  }
  return commitBody(state, ctx, ingest, verified, record, msg.deadlineMs)
}

/** What the body turned out to be, once every expectation held. */
export interface Verified {
  size: number
  crc32: number
  sha256: string
  etag: string
  checksums: Checksums
  /** Cluster mode: the stamp the coordinator sent with the body's end (END_STAMP_TRAILER), which
   * replaces the message's for a part: of two uploads of one part, the last to end counts. */
  endStamp?: string
}

/** Takes in and hashes the body (MD5 too, unless `md5BySender`), or a single node's inline body
 * with the digests its ingress sent. */
async function receive(
  ingest: Ingest,
  msg: BodyMsg,
  source: ByteSource | null,
  ctx: Context,
  md5BySender: boolean,
): Promise<BodyDigests> {
  if (source === null && msg.digests !== undefined) {
    assert(msg.body !== undefined)
    return hashedBySender(ingest, msg.body, msg.digests)
  }
  const hasher = new BodyHasher(namedChecksums(msg.expect), !md5BySender)
  if (source === null) {
    assert(msg.body !== undefined)
    await accept(ingest, hasher, msg, msg.body, ctx, null)
    return hasher.digests()
  }
  for (;;) {
    let chunk: Uint8Array | null
    try {
      chunk = await source.next()
    } catch (error) {
      throw senderFailure(error)
    }
    if (chunk === null) return hasher.digests()
    await accept(ingest, hasher, msg, chunk, ctx, source)
  }
}

/** An inline body a single node's ingress hashed (BodyMsg.digests): the store keeps its bytes and
 * takes its digests, as it takes a lent write's. */
function hashedBySender(ingest: Ingest, body: Uint8Array, digests: BodyDigests): BodyDigests {
  if (body.byteLength !== digests.size || body.byteLength > INLINE_BLOB_BYTES_MAX) {
    throw new ServiceError('invalid_request', 'digests of another body')
  }
  ingest.memory.push(body)
  return digests
}

/** Lends a new temporary file to the sender, which writes the body there and hashes it, and takes
 * the digests it sends with the end. The file is the ingest's from the loan on: a failure, or a
 * duplicate's commit, removes it. */
async function takeLentWrite(
  ingest: Ingest,
  source: ByteSource,
  ctx: Context,
): Promise<BodyDigests> {
  if (source.lendWrite === undefined || ctx.blobs.createLent === undefined) {
    throw new ServiceError('invalid_request', 'a lent write on a stream that cannot lend a file')
  }
  const id = newFileId(ctx)
  const loan = await ctx.blobs.createLent(id)
  ingest.file = { id, writer: lentFileWriter(ctx, id) }
  try {
    return await source.lendWrite(loan)
  } catch (error) {
    throw senderFailure(error)
  }
}

/** The writer of a lent file, as the commit sees it: the sender wrote and synced the file. */
function lentFileWriter(ctx: Context, id: string): BlobWriter {
  return {
    write: () => Promise.reject(new Error('a lent file is written by its borrower')),
    commit: () => Promise.resolve(),
    discard: () => ctx.blobs.removeTemporary(id),
  }
}

/** The sender's abort (or the stream's timeout) arrives as an error carrying a code; an error
 * without one means the body stopped short. */
export function senderFailure(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error
  const code = (error as { code?: unknown } | null)?.code
  const detail = error instanceof Error ? error.message : 'body stream failed'
  return new ServiceError(
    typeof code === 'string' ? (code as ErrorCode) : 'incomplete_body',
    detail,
  )
}

async function accept(
  ingest: Ingest,
  hasher: BodyHasher,
  msg: BodyMsg,
  chunk: Uint8Array,
  ctx: Context,
  source: ByteSource | null,
): Promise<void> {
  const size = hasher.size + chunk.byteLength
  if (size > SINGLE_PUT_BYTES_MAX) {
    throw new ServiceError('entity_too_large', `body over ${SINGLE_PUT_BYTES_MAX} bytes`)
  }
  if (msg.expect.size !== undefined && size > msg.expect.size) {
    throw new ServiceError('incomplete_body', `body longer than the ${msg.expect.size} announced`)
  }
  hasher.update(chunk)
  // Once written, the chunk's buffer goes back to the sender for reuse.
  const written = (): void => source?.release(chunk)
  if (ingest.file !== null) {
    await ingest.file.writer.write(chunk, written)
  } else if (size <= INLINE_BLOB_BYTES_MAX) {
    ingest.memory.push(chunk)
  } else {
    // Past the inline bound: everything so far and everything after goes to a file.
    const id = newFileId(ctx)
    const writer = await ctx.blobs.create(id)
    ingest.file = { id, writer }
    for (const held of ingest.memory.splice(0)) await writer.write(held)
    await writer.write(chunk, written)
  }
}

/** Draws a file id no live or garbage file has. 128 random bits do not collide, but a replayed
 * random source (a simulation restarted with its seed) would: such an id is drawn again. A
 * sharded store's ids start with the shard's hex digit (keys.ts: fileShard). */
export function newFileId(ctx: Context): string {
  const { shard, shards } = ctx.shardLocks
  for (let attempt = 0; attempt < FILE_ID_ATTEMPTS_MAX; attempt++) {
    const drawn = Buffer.from(ctx.randomBytes(FILE_ID_BYTES)).toString('hex')
    const id = shards === 1 ? drawn : shard.toString(16) + drawn.slice(1)
    if (ctx.kv.getMany([fileKey(id), garbageKey(id)]).every((found) => found === undefined))
      return id
  }
  throw new ServiceError('internal', 'no unused blob file id: the random source repeats itself')
}

/** Checks every expectation and returns the verified facts; the checksums stored with the object
 * are the ones the client sent, in a header or a trailer. */
function verify(digests: BodyDigests, msg: BodyMsg, source: ByteSource | null): Verified {
  const { expect } = msg
  if (expect.size !== undefined && digests.size !== expect.size) {
    throw new ServiceError('incomplete_body', `got ${digests.size} of ${expect.size} bytes`)
  }
  const trailers = source?.trailers() ?? {}
  const md5 = digests.md5Hex === undefined ? senderMd5(source) : Buffer.from(digests.md5Hex, 'hex')
  if (expect.md5Base64 !== undefined && md5.toString('base64') !== expect.md5Base64) {
    throw new ServiceError('bad_digest', 'Content-MD5 does not match the body')
  }
  const sha256 = digests.sha256Hex
  if (expect.sha256Hex !== undefined && sha256 !== expect.sha256Hex.toLowerCase()) {
    throw new ServiceError('content_sha256_mismatch', 'x-amz-content-sha256 does not match')
  }
  const checksums: Checksums = {}
  for (const [algorithm, value] of wantedChecksums(msg, trailers)) {
    const actual = computedChecksum(digests, algorithm)
    if (actual !== value) {
      throw new ServiceError('checksum_mismatch', `x-amz-checksum-${algorithm} does not match`)
    }
    checksums[algorithm] = actual
  }
  const compute = expect.compute
  if (compute !== undefined && checksums[compute] === undefined) {
    checksums[compute] = computedChecksum(digests, compute)
  }
  const etag = `"${md5.toString('hex')}"`
  const verified: Verified = { size: digests.size, crc32: digests.crc32, sha256, etag, checksums }
  const endStamp = trailers[END_STAMP_TRAILER]
  if (msg.stamp !== undefined && endStamp !== undefined) {
    if (!isStamp(endStamp)) throw new ServiceError('invalid_request', 'a malformed end stamp')
    verified.endStamp = endStamp
  }
  return verified
}

/** The MD5 the sender promised (streamMd5) to send with the stream's end. */
function senderMd5(source: ByteSource | null): Buffer {
  const hex = source?.md5()
  if (hex === undefined || !/^[0-9a-f]{32}$/.test(hex)) {
    throw new ServiceError('internal', 'the stream ended without the MD5 its sender promised')
  }
  return Buffer.from(hex, 'hex')
}

/** Expected values by algorithm: from the request's headers, or (empty string there) from the
 * trailer, and any checksum trailer sent without being announced. */
function wantedChecksums(
  msg: BodyMsg,
  trailers: Record<string, string>,
): Map<ChecksumAlgorithm, string> {
  const trailing = new Map<ChecksumAlgorithm, string>()
  for (const [name, value] of Object.entries(trailers)) {
    const algorithm = checksumAlgorithmFromHeader(name)
    if (algorithm !== null) trailing.set(algorithm, value.trim())
  }
  const wanted = new Map<ChecksumAlgorithm, string>()
  for (const [algorithm, value] of Object.entries(msg.expect.checksums ?? {})) {
    const name = algorithm as ChecksumAlgorithm
    const expected = value !== '' ? value : trailing.get(name)
    if (expected === undefined) {
      throw new ServiceError('incomplete_body', `trailer x-amz-checksum-${name} did not arrive`)
    }
    wanted.set(name, expected)
  }
  for (const [algorithm, value] of trailing) {
    const announced = wanted.get(algorithm)
    if (announced !== undefined && announced !== value) {
      throw new ServiceError(
        'checksum_mismatch',
        `x-amz-checksum-${algorithm}: header and trailer differ`,
      )
    }
    wanted.set(algorithm, value)
  }
  return wanted
}

function computedChecksum(digests: BodyDigests, algorithm: ChecksumAlgorithm): string {
  if (algorithm === 'crc32') return crcToBase64(digests.crc32)
  if (algorithm === 'sha256') return Buffer.from(digests.sha256Hex, 'hex').toString('base64')
  const checksum = digests.checksums[algorithm]
  if (checksum === undefined) {
    // Only CRC32 and SHA-256 are always at hand; the HTTP layer announces the others up front.
    throw new ServiceError('invalid_request', `x-amz-checksum-${algorithm} was not announced`)
  }
  return checksum
}

/** Commits the verified body: inline, as a duplicate of an existing blob, or as a new file blob.
 * Each commit is tried again while another store shard holds a record it needs. */
async function commitBody<T>(
  state: StoreState,
  ctx: Context,
  ingest: Ingest,
  verified: Verified,
  record: Recorder<T>,
  deadlineMs: number,
): Promise<Result<T>> {
  const blob = { size: verified.size, crc32: verified.crc32 }
  const file = ingest.file
  if (file === null) {
    const inline = Buffer.concat(ingest.memory, verified.size)
    const created = { ...blob, inline }
    return retryingClaims(ctx, deadlineMs, async () => {
      return (await commitRecord(state, ctx, verified, created, record)).result
    })
  }
  let duplicate: Result<T> | null
  try {
    // A duplicate: its reference is committed in the step that found the blob (so the blob is
    // still there), and this copy of the bytes, never synced, goes.
    duplicate = await retryingClaims(ctx, deadlineMs, async () => {
      if (new Mutation(ctx.kv, state.shard).blob(verified.sha256) === undefined) return null
      return (await commitRecord(state, ctx, verified, undefined, record)).result
    })
  } catch (error) {
    await file.writer.discard()
    throw error
  }
  if (duplicate !== null) {
    await file.writer.discard()
    return duplicate
  }
  try {
    await file.writer.commit()
  } catch (error) {
    await ctx.blobs.removeTemporary(file.id)
    throw error
  }
  // If the commit below fails, the synced file stays: whether the batch landed is unknown, and
  // recovery keeps the file exactly if its file->sha record is durable. A batch never prepared
  // (another shard held its records to the end) surely did not land.
  const created = { ...blob, file: file.id }
  const committed = await retryingClaims(ctx, deadlineMs, () =>
    commitRecord(state, ctx, verified, created, record),
  ).catch(async (error: unknown) => {
    if (error instanceof ShardContention) await ctx.blobs.removeTemporary(file.id)
    throw error
  })
  if (committed.createdBlob) promoteInBackground(state, ctx, file.id)
  else await ctx.blobs.removeTemporary(file.id)
  return committed.result
}

/** Prepares (synchronously, before its first await) and commits what `record` writes. `created`
 * is the blob to create if none with this sha256 exists by then. */
async function commitRecord<T>(
  state: StoreState,
  ctx: Context,
  verified: Verified,
  created: NewBlob | undefined,
  record: Recorder<T>,
): Promise<{ result: Result<T>; createdBlob: boolean }> {
  const mutation = new Mutation(ctx.kv, state.shard)
  const recorded = record(mutation, verified, created)
  if (!recorded.ok) return { result: recorded, createdBlob: false }
  // A blob made anew is not the damaged copy of the same bytes that was deleted before.
  if (recorded.value.createdBlob) state.damaged.delete(verified.sha256)
  // A stamped write its store already holds (sent again) changes nothing.
  if (mutation.hasWrites()) await commitMutation(state, ctx, mutation)
  return { result: ok(recorded.value.value), createdBlob: recorded.value.createdBlob }
}
