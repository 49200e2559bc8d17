/** @module Replica.* calls of other nodes (cluster mode): a coordinator elsewhere sends an object
 * request to this replica. Replica.Op carries one without bytes, Replica.Write an object.put or
 * upload.part whose bytes come on the call's stream, Replica.Read an object.get whose bytes go back
 * on it (the transport asks for the body's `range` once the answer is ok). The message comes from
 * another process, so its shape is checked here, field by field where the store would otherwise
 * assert (an assertion failure restarts the actor): never a system.* or catalog request, and only
 * the kinds each method allows. Replica.Read also serves `blob.read` of a blob by its sha256, for
 * another node's scrubber healing its copy, always checked (never the scrubber's unchecked read),
 * and Replica.Op anti-entropy's questions and the records replicas exchange (records.get,
 * records.merge: protocol/anti-entropy.ts).
 * The message then runs as a local one, with the call's request id, deadline and stream. */
import type { StreamHandle } from '../../../protocol/actor.js'
import {
  AE_KEYS_PAGE_MAX,
  type AntiEntropyMsg,
  type KeyCursor,
  type KeyRecords,
} from '../../../protocol/anti-entropy.js'
import type { PeerMethod, PeerRequestMsg } from '../../../protocol/cluster.js'
import { fail, ok, type Result } from '../../../protocol/errors.js'
import { DELETE_OBJECTS_KEYS_MAX, PART_NUMBER_MAX } from '../../../protocol/limits.js'
import type { ObjectMsg, SystemMsg } from '../../../protocol/messages.js'
import { PARTITIONS } from '../../../protocol/placement.js'
import type { BlobMsg } from '../../../protocol/scrubbing.js'
import { validateTags, type Tag } from '../../../protocol/tagging.js'
import { MANIFEST_ENTRIES_MAX } from './anti-entropy.js'
import { isSha256 } from '../keys.js'

type Kind = ObjectMsg['kind']

/** The kinds each Replica method takes. */
const KINDS: Partial<Record<PeerMethod, ReadonlySet<Kind>>> = {
  'Replica.Op': new Set<Kind>([
    'object.get',
    'object.delete',
    'object.delete-many',
    'object.stamps',
    'object.heads',
    'object.versions-deleted',
    'object.list',
    'object.list-versions',
    'object.tagging.put',
    'object.tagging.get',
    'upload.create',
    'upload.complete',
    'upload.abort',
    'upload.states',
    'key.claim',
    'key.release',
    'upload.list-parts',
    'upload.list',
    // A bucket deleted through another node: this replica empties its copy (forced only).
    'bucket.delete',
  ]),
  'Replica.Write': new Set<Kind>(['object.put', 'upload.part']),
  'Replica.Read': new Set<Kind>(['object.get']),
}

/** The store's figures, which a coordinator elsewhere adds up for cluster-wide stats (Replica.Op
 * only, no fields). */
const FIGURES: ReadonlySet<string> = new Set(['bucket.stats', 'system.stats'])

/** Kinds that name no single key. */
const KEYLESS = new Set<Kind>([
  'bucket.delete',
  'object.delete-many',
  'object.stamps',
  'object.heads',
  'object.versions-deleted',
  'object.list',
  'object.list-versions',
  'upload.states',
  'upload.list',
])

type Fields = Record<string, unknown>

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isKey(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0
}

function isCount(value: unknown, max = Number.MAX_SAFE_INTEGER): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= max
}

function strings(fields: Fields, names: readonly string[]): boolean {
  return names.every((name) => typeof fields[name] === 'string')
}

function optionalString(fields: Fields, name: string): boolean {
  return fields[name] === undefined || typeof fields[name] === 'string'
}

/** The fields of each kind the store reads without checking them itself. */
function kindFieldsValid(kind: Kind, m: Fields): boolean {
  switch (kind) {
    case 'object.put':
      return isFields(m['expect']) && kindFieldsValid('upload.create', m)
    case 'upload.create':
      return isFields(m['http']) && isFields(m['userMeta']) && tagsValid(m['tags'], true)
    case 'upload.part':
      return (
        isFields(m['expect']) &&
        strings(m, ['uploadId']) &&
        isCount(m['partNumber'], PART_NUMBER_MAX) &&
        m['partNumber'] !== 0
      )
    case 'object.get':
    case 'object.delete':
    case 'object.tagging.get':
      return optionalString(m, 'versionId')
    case 'object.tagging.put':
      return optionalString(m, 'versionId') && tagsValid(m['tags'], false)
    case 'object.delete-many': {
      const objects = m['objects']
      return (
        Array.isArray(objects) &&
        objects.length <= DELETE_OBJECTS_KEYS_MAX &&
        objects.every((o) => isFields(o) && isKey(o['key']) && optionalString(o, 'versionId'))
      )
    }
    case 'object.stamps':
    case 'object.heads':
      return Array.isArray(m['keys']) && m['keys'].every(isKey)
    case 'object.versions-deleted': {
      const versions = m['versions']
      return (
        Array.isArray(versions) &&
        versions.every((v) => isFields(v) && isKey(v['key']) && typeof v['versionId'] === 'string')
      )
    }
    case 'key.claim':
    case 'key.release':
      return strings(m, ['claimant'])
    case 'upload.states':
      return Array.isArray(m['uploadIds']) && m['uploadIds'].every((id) => typeof id === 'string')
    case 'upload.complete': {
      const parts = m['parts']
      return (
        strings(m, ['uploadId']) &&
        Array.isArray(parts) &&
        parts.length > 0 &&
        parts.length <= PART_NUMBER_MAX &&
        parts.every(
          (p) => isFields(p) && Number.isSafeInteger(p['partNumber']) && strings(p, ['etag']),
        ) &&
        judgedOnValid(m['judgedOn'])
      )
    }
    case 'upload.abort':
      return strings(m, ['uploadId'])
    case 'upload.list-parts':
      return strings(m, ['uploadId']) && isCount(m['afterPartNumber']) && isCount(m['maxParts'])
    case 'object.list':
      return strings(m, ['prefix', 'delimiter', 'after']) && isCount(m['maxKeys'])
    case 'object.list-versions':
      return (
        strings(m, ['prefix', 'delimiter', 'keyMarker', 'versionIdMarker']) && isCount(m['maxKeys'])
      )
    case 'upload.list':
      return (
        strings(m, ['prefix', 'delimiter', 'keyMarker', 'uploadIdMarker']) &&
        isCount(m['maxUploads'])
      )
    case 'bucket.delete':
      return m['force'] === true
    default:
      return false
  }
}

/** A completion's `judgedOn`: absent, null, or an object's ETag and time. */
function judgedOnValid(judgedOn: unknown): boolean {
  if (judgedOn === undefined || judgedOn === null) return true
  return (
    isFields(judgedOn) && strings(judgedOn, ['etag']) && Number.isFinite(judgedOn['lastModifiedMs'])
  )
}

function tagsValid(tags: unknown, optional: boolean): boolean {
  if (tags === undefined) return optional
  if (!Array.isArray(tags)) return false
  const shaped = tags.every((t) => isFields(t) && strings(t, ['key', 'value']))
  return shaped && validateTags(tags as Tag[], 'object').ok
}

/** The local message a Replica.* call asks for, or why it is refused. */
export function replicaMessage(call: PeerRequestMsg): Result<ReplicaCallMsg> {
  const allowed = KINDS[call.method]
  const body = call.body
  if (allowed === undefined || !isFields(body) || !isFields(body['msg'])) {
    return fail('invalid_request', `${call.method} takes { msg }`)
  }
  const { body: _bytes, stream: _stream, requestId: _id, deadlineMs: _deadline, ...m } = body['msg']
  const kind = m['kind']
  if (call.method === 'Replica.Read' && kind === 'blob.read') return blobRead(call, m)
  if (call.method === 'Replica.Op' && typeof kind === 'string' && AE_KINDS.has(kind)) {
    return antiEntropyMessage(call, m)
  }
  if (call.method === 'Replica.Op' && typeof kind === 'string' && FIGURES.has(kind)) {
    const ids = { requestId: call.requestId, deadlineMs: call.deadlineMs }
    return ok({ kind: kind as 'bucket.stats' | 'system.stats', ...ids })
  }
  if (typeof kind !== 'string' || !allowed.has(kind as Kind)) {
    return fail('invalid_request', `${call.method} does not take ${String(kind)}`)
  }
  const bucket = m['bucket']
  if (!isKey(bucket) || bucket.includes('\0')) {
    return fail('invalid_request', `${call.method}: a malformed bucket name`)
  }
  if (!KEYLESS.has(kind as Kind) && !isKey(m['key'])) {
    return fail('invalid_request', `${call.method}: ${kind} needs a key`)
  }
  if (m['stamp'] !== undefined && typeof m['stamp'] !== 'string') {
    return fail('invalid_request', `${call.method}: a malformed stamp`)
  }
  if (!kindFieldsValid(kind as Kind, m)) {
    return fail('invalid_request', `${call.method}: a malformed ${kind}`)
  }
  const local: Fields = { ...m, requestId: call.requestId, deadlineMs: call.deadlineMs }
  if (call.method !== 'Replica.Op') {
    if (call.stream === undefined) return fail('invalid_request', `${call.method} needs a stream`)
    local['stream'] = call.stream satisfies StreamHandle
  }
  return ok(local as unknown as ObjectMsg)
}

/** A peer's read of a blob by its content address, checked as a GET's. */
function blobRead(call: PeerRequestMsg, m: Fields): Result<ReplicaCallMsg> {
  const sha256 = m['sha256']
  if (typeof sha256 !== 'string' || !isSha256(sha256)) {
    return fail('invalid_request', 'blob.read: a malformed sha256')
  }
  if (call.stream === undefined) return fail('invalid_request', 'Replica.Read needs a stream')
  const ids = { requestId: call.requestId, deadlineMs: call.deadlineMs }
  return ok({ kind: 'blob.read', sha256, stream: call.stream, ...ids })
}

/** Anti-entropy's questions (Replica.Op only). Not `ae.purge`: a node purges its own tombstones,
 * when its own anti-entropy found every other replica alike. */
const AE_KINDS: ReadonlySet<string> = new Set<AntiEntropyMsg['kind']>([
  'ae.roots',
  'ae.leaves',
  'ae.keys',
  'key.manifest',
  'records.get',
  'records.merge',
])

function isByte(value: unknown): value is number {
  return isCount(value, 255)
}

function isBucket(value: unknown): value is string {
  return isKey(value) && !value.includes('\0')
}

/** The cursor of an ae.keys (null: from a leaf's first key), or undefined when malformed. */
function cursorOf(after: unknown): KeyCursor | null | undefined {
  if (after === null) return null
  if (!isFields(after) || !isBucket(after['bucket']) || !isKey(after['key'])) return undefined
  return { bucket: after['bucket'], key: after['key'] }
}

/** A question of a peer's anti-entropy, rebuilt from its checked fields alone. */
function antiEntropyMessage(call: PeerRequestMsg, m: Fields): Result<ReplicaCallMsg> {
  const ids = { requestId: call.requestId, deadlineMs: call.deadlineMs }
  const { partitions, partition, leaf, after, limit, bucket, key } = m
  switch (m['kind']) {
    case 'ae.roots':
      if (!Array.isArray(partitions) || partitions.length > PARTITIONS) break
      if (!partitions.every(isByte)) break
      return ok({ kind: 'ae.roots', partitions, ...ids })
    case 'ae.leaves':
      if (!isByte(partition)) break
      return ok({ kind: 'ae.leaves', partition, ...ids })
    case 'ae.keys': {
      const from = cursorOf(after)
      if (!isByte(partition) || !isByte(leaf) || from === undefined) break
      if (!isCount(limit, AE_KEYS_PAGE_MAX) || limit === 0) break
      return ok({ kind: 'ae.keys', partition, leaf, after: from, limit: limit as number, ...ids })
    }
    case 'key.manifest':
    case 'records.get':
      if (!isBucket(bucket) || !isKey(key)) break
      return ok({ kind: m['kind'], bucket, key, ...ids })
    case 'records.merge': {
      const records = keyRecordsOf(m['records'])
      const from = m['from']
      if (!isBucket(bucket) || !isKey(key) || records === undefined) break
      if (!isFields(from) || !strings(from, ['grpcAddr']) || !isKey(from['id'])) break
      const sender = { id: from['id'], grpcAddr: from['grpcAddr'] as string }
      return ok({ kind: 'records.merge', bucket, key, records, from: sender, ...ids })
    }
  }
  return fail('invalid_request', `Replica.Op: a malformed ${String(m['kind'])}`)
}

/** A peer's records of a key, shaped as KeyRecords (each record is checked by the merge, as one
 * read from disk), or undefined. */
function keyRecordsOf(value: unknown): KeyRecords | undefined {
  if (!isFields(value)) return undefined
  const { stamp, versions, deleted } = value
  if (stamp !== null && typeof stamp !== 'string') return undefined
  if (!Array.isArray(versions) || versions.length > MANIFEST_ENTRIES_MAX) return undefined
  if (!Array.isArray(deleted) || deleted.length > MANIFEST_ENTRIES_MAX) return undefined
  const versionsValid = versions.every(
    (v) => isFields(v) && typeof v['token'] === 'string' && isFields(v['record']),
  )
  const deletedValid = deleted.every((d) => isFields(d) && strings(d, ['token', 'stamp']))
  if (!versionsValid || !deletedValid) return undefined
  return { stamp, versions, deleted } as KeyRecords
}

/** What a Replica.* call runs here: an object request, the store's figures, a blob's read, or
 * anti-entropy's questions. */
export type ReplicaCallMsg =
  | ObjectMsg
  | Extract<SystemMsg, { kind: 'system.stats' }>
  | Extract<BlobMsg, { kind: 'blob.read' }>
  | AntiEntropyMsg
