/** @module Replica-store: the sole owner of the data directory. Metadata lives in ctx.kv (RocksDB),
 * bodies in blobs content-addressed by SHA-256 with reference counts: small blobs (at most
 * INLINE_BLOB_BYTES_MAX) inside the kv, larger ones as files through ctx.blobs. This module
 * dispatches each message to the folder of its role:
 * - engine/: the S3 object engine (ObjectMsg: buckets and their settings, objects, versions, tags,
 *   listings, multipart uploads and their expiry), deciding with protocol/s3-rules/;
 * - blobs/: blob files and their checks (the scrubber's BlobMsg, damage reports, crash recovery);
 * - replication/: what replicas of a cluster need (stamped changes, digests and anti-entropy's
 *   questions, a key's records and their merge, the catalog, key claims, point checks, rejoin);
 * - system/: records kept for other actors (SystemMsg: iam's records, the scrubber's cursor, the
 *   hints the hint queue delivers).
 * Shared by all: records.ts (record types and codecs), keys.ts (the key layout), mutation.ts (one
 * atomic batch) and store-state.ts.
 *
 * Invariants: a put is acknowledged only once its bytes are synced and its metadata batch is
 * durable; nothing half-written is ever visible (one batch per mutation); reference counts and
 * counters match the records after every batch. Each mutation is prepared synchronously, right
 * before its commit, from reads that see every earlier commit (see mutation.ts), so concurrent
 * requests on one key or one blob serialise with last-writer-wins. `init` runs crash recovery
 * without scanning objects (see recovery.ts); `stop` waits for commits and background work. */
import { checkRejoin, servingPhase, startBootstrap } from './replication/rejoin.js'
import assert from 'node:assert/strict'
import { byKind, type Actor, type ByteSink, type Context } from '../../protocol/actor.js'
import { reportDamage } from './blobs/damaged.js'
import { fail, ok, ServiceError, type Result } from '../../protocol/errors.js'
import type { PeerAnswer, PeerRequestMsg } from '../../protocol/cluster.js'
import type { Handled } from '../../protocol/protocols.js'
import { BUCKET_SETTING_NAMES } from '../../protocol/bucket-settings.js'
import type { StoreMsg } from '../../protocol/messages.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import {
  applyCatalog,
  claimBucket,
  createBucketInCluster,
  publishCatalog,
  releaseClaim,
  snapshotPage,
} from './replication/catalog.js'
import { CatalogState } from './replication/catalog-state.js'
import { startCatalogSync } from './replication/catalog-sync.js'
import {
  bucketStats,
  createBucket,
  deleteBucket,
  headBucket,
  listBuckets,
} from './engine/buckets.js'
import { replaceBlob } from './blobs/blob-replace.js'
import { listBlobs, markBlob, readBlob } from './blobs/blobs.js'
import { keyDigests, keyManifest, leafDigests, rootDigests } from './replication/anti-entropy.js'
import { getObjectAttributes, putObjectAttributes } from './engine/attributes.js'
import { copyObject } from './engine/copy.js'
import { startDigests } from './replication/digests.js'
import { deleteSetting, getSetting, putSetting } from './engine/bucket-settings.js'
import { deleteObject, deleteObjects, deleteStampOf } from './engine/delete.js'
import { getObject } from './engine/get.js'
import {
  bucketKey,
  bucketSettingKey,
  COUNTERS_KEY,
  isStamp,
  isUploadId,
  systemKey,
} from './keys.js'
import { listObjects } from './engine/list.js'
import { purgeTombstones } from './replication/purge.js'
import { putObject } from './engine/put.js'
import { completeUpload } from './engine/complete.js'
import { uploadPart, uploadPartCopy } from './engine/parts.js'
import { scheduleExpiry } from './engine/expiry.js'
import { getVersioning, putVersioning } from './engine/buckets.js'
import { listVersions } from './engine/versions-list.js'
import {
  abortUpload,
  createUpload,
  listParts,
  listUploads,
  uploadStates,
} from './engine/uploads.js'
import { objectHeads, objectStamps, versionsDeleted } from './replication/point-checks.js'
import { replicaMessage } from './replication/replica-calls.js'
import { keyRecords } from './replication/key-records.js'
import { mergeKey } from './replication/merge.js'
import { EMPTY_COUNTERS, encodeRecord } from './records.js'
import { closeHints, countHints, hintsDone, pageHints, putHints } from './system/hints.js'
import { claimKeyFor, releaseKey } from './replication/key-claims.js'
import { recover } from './blobs/recovery.js'
import { foldShardCounters } from './system/shard-counters.js'
import { createState, retryingClaims, track, type StoreState } from './store-state.js'
import {
  deleteSystemRecord,
  getLocalRecord,
  getSystemRecord,
  listSystemRecords,
  putLocalRecord,
  putSystemRecord,
  storeStats,
} from './system/system.js'

export type { StoreState } from './store-state.js'

export const replicaStore: Actor<StoreState, 'replica-store'> = {
  name: 'replica-store',

  async init(ctx: Context): Promise<StoreState> {
    const state = createState(ctx.shardLocks)
    // Nothing this shard's previous incarnation held may outlive it.
    ctx.shardLocks.releaseAll()
    if (state.shard.shard === 0 && ctx.kv.get(COUNTERS_KEY) === undefined) {
      // A new data directory: every counter starts at zero, durably, before the first request.
      await ctx.kv.commit([{ type: 'put', key: COUNTERS_KEY, value: encodeRecord(EMPTY_COUNTERS) }])
    }
    if (state.shard.shards === 1) {
      const folded = await foldShardCounters(state, ctx)
      if (folded > 0) ctx.log.info({ records: folded }, "replica-store folded shards' counters")
    }
    const report = await recover(state, ctx)
    ctx.log.info({ ...report }, 'replica-store recovered')
    const digested = await startDigests(ctx)
    if (digested !== null) ctx.log.info({ records: digested }, 'replica-store digests rebuilt')
    scheduleExpiry(state, ctx)
    if (ctx.config['SVC_MODE'] === 'cluster') {
      const hints = countHints(ctx)
      state.hintsPending = hints.all
      state.hintsPerNode = hints.perNode
      await checkRejoin(state, ctx)
      state.catalog = new CatalogState(ctx.config['SVC_NODE_ID'] ?? '', () => ctx.now())
      startCatalogSync(state, ctx)
    }
    return state
  },

  async around(state, kindOf, ctx, next) {
    // What is done for every request reads the message by its kind.
    const msg = kindOf as StoreMsg
    assert(!state.stopping, 'replica-store handled a request after stop')
    state.handling++
    try {
      let result = await handleOnce(state, msg, ctx, next)
      // A request that frees space must work on a full volume: when even its batch found no
      // room, the database got the reserve (rocks-kv's onNoSpace) and resumes once it sees room.
      for (let retry = 1; retry <= FREEING_RETRIES_MAX && FREEING_KINDS.has(msg.kind); retry++) {
        if (result.ok || result.code !== 'insufficient_storage') break
        if (ctx.now() + FREEING_RETRY_MS >= msg.deadlineMs) break
        await ctx.blobs.admits(0)
        await new Promise<void>((resolve) => ctx.after(FREEING_RETRY_MS, resolve))
        result = await handleOnce(state, msg, ctx, next)
      }
      return result
    } finally {
      state.handling--
    }
  },

  handlers: {
    // Buckets, objects and uploads (the S3 engine).
    'bucket.create': (state, msg, ctx) =>
      state.catalog !== null
        ? createBucketInCluster(state, msg, ctx)
        : createBucket(state, msg, ctx),
    'bucket.delete': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => deleteBucket(state, msg, ctx)),
    'bucket.head': (_state, msg, ctx) => headBucket(msg.bucket, ctx),
    'bucket.list': (_state, msg, ctx) => listBuckets(msg, ctx),
    'bucket.stats': (_state, _msg, ctx) => bucketStats(ctx),
    'bucket.setting.put': putSetting,
    'bucket.setting.get': (_state, msg, ctx) => getSetting(msg, ctx),
    'bucket.setting.delete': deleteSetting,
    'bucket.versioning.put': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => putVersioning(state, msg.bucket, msg.status, ctx)),
    'bucket.versioning.get': (_state, msg, ctx) => getVersioning(msg.bucket, ctx),
    'object.put': putObject,
    'object.get': getObject,
    'object.delete': (state, msg, ctx) => {
      const target = msg.versionId === undefined ? { key: msg.key } : msg
      const bypass = msg.bypassGovernance === true
      return retryingClaims(ctx, msg.deadlineMs, () =>
        deleteObject(state, msg.bucket, target, ctx, deleteStampOf(msg), bypass),
      )
    },
    'object.delete-many': (state, msg, ctx) => {
      const bypass = msg.bypassGovernance === true
      return retryingClaims(ctx, msg.deadlineMs, () =>
        deleteObjects(state, msg.bucket, msg.objects, ctx, deleteStampOf(msg), bypass),
      )
    },
    'object.list-versions': (_state, msg, ctx) => listVersions(msg, ctx),
    'object.copy': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => copyObject(state, msg, ctx)),
    'object.list': (_state, msg, ctx) => listObjects(msg, ctx),
    'object.attributes.put': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => putObjectAttributes(state, msg, ctx)),
    'object.attributes.get': (_state, msg, ctx) => getObjectAttributes(msg, ctx),
    'upload.create': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => createUpload(state, msg, ctx)),
    'upload.part': uploadPart,
    'upload.part-copy': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => uploadPartCopy(state, msg, ctx)),
    'upload.complete': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => completeUpload(state, msg, ctx)),
    'upload.abort': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => abortUpload(state, msg, ctx)),
    'upload.list-parts': (_state, msg, ctx) => listParts(msg, ctx),
    'upload.list': (_state, msg, ctx) => listUploads(msg, ctx),
    // What replicas of a cluster ask each other: point checks, key claims, digests, bootstrap.
    'object.stamps': (_state, msg, ctx) => objectStamps(msg, ctx),
    'object.heads': (_state, msg, ctx) => objectHeads(msg, ctx),
    'object.versions-deleted': (_state, msg, ctx) => versionsDeleted(msg, ctx),
    'upload.states': (_state, msg, ctx) => uploadStates(msg, ctx),
    'key.claim': (state, msg, ctx) => claimKeyFor(state, msg, ctx.now()),
    'key.release': (state, msg) => releaseKey(state, msg),
    'ae.roots': (_state, msg, ctx) => rootDigests(msg, ctx),
    'ae.leaves': (_state, msg, ctx) => leafDigests(msg, ctx),
    'ae.keys': (_state, msg, ctx) => keyDigests(msg, ctx),
    'key.manifest': (_state, msg, ctx) => keyManifest(msg, ctx),
    'records.get': (_state, msg, ctx) => keyRecords(msg, ctx),
    'records.merge': mergeKey,
    'ae.purge': purgeTombstones,
    'node.bootstrap': (state, _msg, ctx) => startBootstrap(state, ctx),
    'node.bootstrap-status': (state) => ok({ ...state.bootstrap }),
    'peer.request': servePeer,
    // Records kept for other actors: system records, hints, the node's phase.
    'system.get': (_state, msg, ctx) => getSystemRecord(msg.name, ctx),
    'system.put': (state, msg, ctx) => putSystemRecord(state, msg.name, msg.value, ctx),
    'system.delete': (state, msg, ctx) => deleteSystemRecord(state, msg.name, ctx),
    'system.list': (_state, msg, ctx) => listSystemRecords(msg.prefix, ctx),
    'system.stats': (_state, _msg, ctx) => storeStats(ctx),
    'system.phase': (state) =>
      ok(state.catalog === null || state.catalog.synced ? servingPhase(state) : 'joining'),
    'system.local-get': (_state, msg, ctx) => getLocalRecord(msg.name, ctx),
    'system.local-put': (state, msg, ctx) => putLocalRecord(state, msg.name, msg.value, ctx),
    'hint.put': (state, msg, ctx) => putHints(state, ctx, msg.hints),
    'hint.count': (state) => ok(state.hintsPending),
    'hint.nodes': (state) =>
      ok(Object.fromEntries([...state.hintsPerNode].filter(([, count]) => count > 0))),
    'hint.page': (_state, msg, ctx) => pageHints(ctx, msg.node, msg.after, msg.limit),
    'hint.done': (state, msg, ctx) => hintsDone(state, ctx, msg.hints),
    'hint.closed': (state, msg) => closeHints(state, msg.nodes),
    // Blobs: the scrubber's pages, reads, verdicts and replacements.
    'blob.list': listBlobs,
    'blob.read': readBlob,
    // Every shard takes the verdict (runtime/store-shards.ts): one commits it, the others find
    // it committed once the claim is theirs.
    'blob.mark': (state, msg, ctx) =>
      retryingClaims(ctx, msg.deadlineMs, () => markBlob(state, msg, ctx)),
    'blob.damaged': (state, msg, ctx) => {
      reportDamage(state, ctx, msg.sha256, msg.why)
      return ok(null)
    },
    'blob.replace': replaceBlob,
  },

  async stop(state) {
    state.stopping = true
    state.cancelExpiry()
    state.cancelAliveNote()
    state.catalog?.cancelSync()
    for (const sink of state.streams.values()) sink.abort('unavailable', 'replica-store stopping')
    // Tasks may start tasks (a commit starts garbage removal): wait until none is left.
    while (state.tasks.size > 0) await Promise.allSettled([...state.tasks])
  },
}

/** Requests that free space, retried on a full volume (see `handle`) until their deadline, at
 * most this often (a call's whole deadline: RocksDB looks for room to resume every 5 s). */
const FREEING_KINDS: ReadonlySet<StoreMsg['kind']> = new Set([
  'object.delete',
  'object.delete-many',
  'bucket.delete',
  'upload.abort',
])
const FREEING_RETRY_MS = 200
const FREEING_RETRIES_MAX = CALL_TIMEOUT_MS / FREEING_RETRY_MS

async function handleOnce<T>(
  state: StoreState,
  msg: StoreMsg,
  ctx: Context,
  next: () => Handled<T>,
): Promise<Result<T>> {
  try {
    const chosen = checkChosen(msg)
    if (!chosen.ok) return chosen
    const result = await next()
    // In cluster mode a catalog change is in force on the other nodes before it answers.
    const keys = state.catalog !== null && result.ok ? catalogKeysOf(msg) : []
    if (keys.length === 0) return result
    const published = await publishCatalog(state, ctx, keys, msg.deadlineMs)
    return published.ok ? result : published
  } catch (error) {
    // Operating errors unwound from deep frames (corrupt records, stream aborts) become Results.
    if (error instanceof ServiceError) return fail(error.code, error.message)
    throw error
  }
}

/** A replica's request from a peer, answered as the local one (no catalog publication: the
 * calling node's store publishes what its own request changed). */
function answerLocally(state: StoreState, msg: StoreMsg, ctx: Context): Handled<PeerAnswer> {
  const chosen = checkChosen(msg)
  if (!chosen.ok) return chosen
  return byKind('replica-store', replicaStore.handlers, state, msg, ctx)
}

/** What a coordinator chose for every replica (a stamp, an upload id) is checked before anything
 * is read: the store derives keys and version tokens from them. */
function checkChosen(msg: StoreMsg): Result<null> {
  const stamp = 'stamp' in msg ? msg.stamp : undefined
  if (stamp !== undefined && (typeof stamp !== 'string' || !isStamp(stamp))) {
    return fail('invalid_request', `${msg.kind}: a malformed stamp`)
  }
  if (msg.kind === 'upload.create' && msg.uploadId !== undefined && !isUploadId(msg.uploadId)) {
    return fail('invalid_request', 'upload.create: a malformed upload id')
  }
  return ok(null)
}

/** The catalog keys a successful request changed, which cluster mode publishes (a creation
 * publishes its own bucket, after its claims). */
function catalogKeysOf(msg: StoreMsg): string[] {
  switch (msg.kind) {
    case 'bucket.delete':
      return [
        bucketKey(msg.bucket),
        ...BUCKET_SETTING_NAMES.map((name) => bucketSettingKey(msg.bucket, name)),
      ]
    case 'bucket.versioning.put':
      return [bucketKey(msg.bucket)]
    case 'bucket.setting.put':
    case 'bucket.setting.delete':
      return [bucketSettingKey(msg.bucket, msg.name)]
    case 'system.put':
    case 'system.delete':
      return [systemKey(msg.name)]
    default:
      return []
  }
}

/** A body sent with a local answer (an inline blob) cannot travel in a peer's JSON answer: a read
 * gets it on the call's stream, as a file blob's bytes come, and a head goes without it. */
function answerPeer(
  state: StoreState,
  call: PeerRequestMsg,
  result: Result<PeerAnswer>,
  ctx: Context,
): Result<PeerAnswer> {
  if (!result.ok || typeof result.value !== 'object' || result.value === null) return result
  const { body, ...answer } = result.value as { body?: Uint8Array }
  if (body === undefined) return result
  if (call.method === 'Replica.Read' && call.stream !== undefined) {
    const sink = ctx.sink(call.stream, call.deadlineMs)
    track(state, ctx, 'inline read', sendInline(sink, body))
  }
  return ok(answer)
}

async function sendInline(sink: ByteSink, body: Uint8Array): Promise<void> {
  const range = await sink.demand()
  if (range === null) return
  if (range.end >= range.start) await sink.write(body.slice(range.start, range.end + 1))
  sink.end()
}

/** A call of another node (grpc-ingress hands it over): the catalog's, or a replica's. */
async function servePeer(
  state: StoreState,
  msg: PeerRequestMsg,
  ctx: Context,
): Promise<Result<PeerAnswer>> {
  if (state.catalog === null) return fail('invalid_request', 'this node is not in cluster mode')
  const body = (msg.body ?? {}) as never
  switch (msg.method) {
    case 'Catalog.Apply':
      return applyCatalog(state, ctx, body, msg.deadlineMs)
    case 'Catalog.Snapshot':
      return snapshotPage(ctx, body)
    case 'Catalog.Claim':
      return claimBucket(state, ctx, body)
    case 'Catalog.Release':
      return releaseClaim(state, body)
    case 'Replica.Op':
    case 'Replica.Write':
    case 'Replica.Read': {
      const local = replicaMessage(msg)
      if (!local.ok) return local
      return answerPeer(state, msg, await answerLocally(state, local.value, ctx), ctx)
    }
    default:
      return fail('invalid_request', `replica-store does not serve ${msg.method}`)
  }
}
