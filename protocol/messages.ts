/** @module Messages between actors. Ingress speaks the object protocol to the coordinator, which in
 * single mode forwards it unchanged to replica-store (in cluster mode it fans out to replicas).
 *
 * Stamps. In cluster mode a change of an object key carries `stamp`, an hlcString the coordinator
 * chose above every stamp a read quorum of the key's replicas held, so that acknowledged changes of
 * a key are ordered whatever the clocks' skew. Every replica derives the same Last-Modified (the
 * stamp's wall clock) and version id (stampToken) from it, applies a change only if it is newer
 * than the newest change of the key it holds (an older one becomes an older version, or nothing),
 * and keeps the stamp of the newest change of each key, deletions included, as a tombstone. */
import type { Request, StreamHandle } from './actor.js'
import type { AntiEntropyMsg } from './anti-entropy.js'
import type { NodePhase, PeerRequestMsg } from './cluster.js'
import type { WriteConditions } from './s3-rules/conditions.js'
import type { ErrorCode } from './errors.js'
import type { CorsConfiguration } from './cors.js'
import type { UploadChecksum } from './multipart-checksum.js'
import type {
  BucketInfo,
  BucketListing,
  Checksums,
  ChecksumType,
  Conditions,
  Expectations,
  HttpMeta,
  ListPage,
  ListRequest,
  ObjectInfo,
  ObjectSummary,
} from './objects.js'
import type { Role } from './identity.js'
import type { BlobMsg } from './scrubbing.js'
import type { Tag } from './tagging.js'

/** The trailer that carries a part's stamp at the end of its body, cluster mode only: of two
 * uploads of one part, the last to end counts. A message without a stamp ignores it, so a
 * client's own trailer of that name means nothing. */
export const END_STAMP_TRAILER = 'x-svc-stamp'

export interface PutResult {
  etag: string
  lastModifiedMs: number
  checksums: ObjectInfo['checksums']
  /** Set for a multipart object's checksum (FULL_OBJECT, or COMPOSITE `<base64>-N`). */
  checksumType?: ChecksumType
  /** The new version's id when the bucket has versioning configured (`null` when suspended). */
  versionId?: string
  /** CopyObject from a bucket with versioning: the version that was copied. */
  sourceVersionId?: string
  /** Cluster mode: the replica already held a newer change of the key, so this write did not
   * become current (it was kept as an older version, or dropped where no versions are kept). */
  stale?: true
}
export interface GetResult {
  info: ObjectInfo
  /** The inclusive byte range of the part the request named (partNumber), with the part's own
   * checksum when it has one. */
  part?: { start: number; end: number; checksums?: Checksums }
  /** Whole body of a small object, sent with the reply; otherwise the bytes come on the stream
   * after the receiver asks for a range. */
  body?: Uint8Array
  /** A multipart object's parts, when the request asked (withParts). */
  parts?: { size: number; checksums: Checksums }[]
  /** The blob's file, lent to the caller (a `lend` request): it reads the bytes itself. */
  lent?: LentFile
  /** Cluster mode (`stamped` requests): the stamp of the newest change of the key this replica
   * holds, deletions included; null when it holds none. */
  keyStamp?: string | null
}
/** A blob file lent to another thread of the store's process, which opens and reads it itself:
 * the store keeps the file from removal as garbage for LOAN_PIN_MS, time enough to open it (an
 * open file stays readable once removed). */
export interface LentFile {
  /** Where the file is (BlobFiles.pathsOf): the first that opens is it. */
  paths: string[]
  sha256: string
  size: number
  crc32: number
}
/** What a replica holds of a key, for a merged listing: the stamp of the key's newest change here
 * (null: none), and the current object with its write stamp (null: none, or deleted). */
export interface KeyHead {
  stamp: string | null
  object: (ObjectSummary & { stamp: string; contentType: string }) | null
}
/** A `stamped` GET of a key or version this replica does not hold (never held, or deleted). */
export interface AbsentResult {
  absent: true
  keyStamp: string | null
}
/** A part as UploadPart and UploadPartCopy answer it, and as ListParts lists it. */
export interface PartInfo {
  partNumber: number
  size: number
  /** Quoted hex MD5 of the part's bytes. */
  etag: string
  lastModifiedMs: number
  checksums: ObjectInfo['checksums']
  /** Cluster mode: the stamp of the upload of this part (a part uploaded again replaces it). */
  stamp?: string
}
export interface UploadCreated {
  uploadId: string
}
export interface UploadSummary {
  key: string
  uploadId: string
  initiatedMs: number
}
export interface UploadListing {
  uploads: UploadSummary[]
  commonPrefixes: string[]
  truncated: boolean
  /** Where the next page starts: after this key and upload id (both null when not truncated). */
  nextKeyMarker: string | null
  nextUploadIdMarker: string | null
}
export interface PartListing {
  parts: PartInfo[]
  truncated: boolean
  /** The last part number of this page, or the marker when the page is empty. */
  nextPartNumberMarker: number
  initiatedMs: number
  http: HttpMeta
  checksum?: UploadChecksum
}
/** A part of a CompleteMultipartUpload request: its number and the ETag the client kept, and the
 * checksums it names. */
export interface CompletedPart {
  partNumber: number
  etag: string
  checksums?: Checksums
}

/** An object version's tags, and which version it was when the bucket has versioning. */
export interface TaggingResult {
  tags: Tag[]
  versionId?: string
}

/** A delete marker where an object was asked for. */
export interface MarkerResult {
  marker: {
    versionId: string
    lastModifiedMs: number
    /** The request named this version by id (S3 answers 405), or wanted the current one (404). */
    byId: boolean
  }
  /** As GetResult.keyStamp. */
  keyStamp?: string | null
}

/** What a delete did: the version it removed (by id), or the delete marker it added. */
export interface DeleteResult {
  versionId?: string
  deleteMarker: boolean
  /** Cluster mode: as PutResult.stale (the marker was kept as an older version, or dropped). */
  stale?: true
}

export interface DeletedEntry extends DeleteResult {
  key: string
  /** The version id the request named, if any. */
  requestedVersionId?: string
}

export interface VersionEntry {
  key: string
  versionId: string
  isLatest: boolean
  deleteMarker: boolean
  size: number
  etag: string
  lastModifiedMs: number
}

export interface VersionListing {
  versions: VersionEntry[]
  commonPrefixes: string[]
  truncated: boolean
  nextKeyMarker: string | null
  nextVersionIdMarker: string | null
}

export interface DeleteManyResult {
  deleted: DeletedEntry[]
  /** Keys not deleted, each with its ErrorCode: the S3 surface maps it to S3's Code and Message. */
  errors: { key: string; code: ErrorCode; detail: string }[]
}

export type ObjectMsg =
  /** `owner`: the user id of the principal that creates it (the S3 and admin APIs always name
   * one; without, the bucket is nobody's, as those made before owners were recorded). */
  | (Request & { kind: 'bucket.create'; bucket: string; owner?: string })
  | (Request & {
      kind: 'bucket.delete'
      bucket: string
      /** Remove every object and version first (uploads in progress go either way). */
      force?: true
    })
  | (Request & { kind: 'bucket.head'; bucket: string })
  /** Buckets named after `after` and starting with `prefix`, in name order, at most `limit`:
   * those of `owner` and those without one, or every bucket when `owner` is null. */
  | (Request & {
      kind: 'bucket.list'
      owner: string | null
      prefix: string
      after: string
      limit: number
    })
  | (Request & { kind: 'bucket.stats' })
  /** A bucket's CORS configuration, validated by the ingress (protocol/cors.ts). */
  | (Request & { kind: 'bucket.cors.put'; bucket: string; cors: CorsConfiguration })
  | (Request & { kind: 'bucket.cors.get'; bucket: string })
  | (Request & { kind: 'bucket.cors.delete'; bucket: string })
  | (Request & {
      kind: 'object.put'
      bucket: string
      key: string
      http: HttpMeta
      userMeta: Record<string, string>
      /** x-amz-tagging, validated by the ingress (protocol/tagging.ts). */
      tags?: Tag[]
      expect: Expectations
      /** Small bodies travel inline; larger ones on a stream. Exactly one is set. */
      body?: Uint8Array
      stream?: StreamHandle
      /** The sender hashes the streamed body with MD5 and sends the digest with the stream's end,
       * so the store need not: MD5 is the slowest of its hashes, and it then runs on another
       * thread while the store computes the rest. */
      streamMd5?: boolean
      /** If-Match, If-None-Match, If-Unmodified-Since: checked in the commit that writes the
       * object (protocol/s3-rules/conditions.ts). */
      conditions?: WriteConditions
      /** Cluster mode: the coordinator's stamp of this change (see the module comment). */
      stamp?: string
    })
  | (Request & {
      kind: 'object.get'
      bucket: string
      key: string
      /** Where the bytes of a blob file go. Absent: no body is streamed (HEAD, or a first look). */
      stream?: StreamHandle
      /** Without a stream: answer with the whole body if it is small enough to be kept inline, so
       * small GETs take one round trip and no stream; a large object is then read with a stream. */
      inline?: true
      /** With `inline`, from a thread of the store's own process (a single node's ingress): a
       * single-file blob is lent (GetResult.lent) rather than streamed, so the whole GET is one
       * round trip and its bytes never cross threads. */
      lend?: true
      /** GET/HEAD ?partNumber=N: the reply says which bytes part N holds. */
      partNumber?: number
      /** A version by id (`null` included); absent, the current version. */
      versionId?: string
      /** Answer with each part's size and checksums (GetObjectAttributes' ObjectParts). */
      withParts?: true
      /** Cluster mode: every answer carries the key's stamp, and a key or version this replica
       * does not hold answers AbsentResult rather than no_such_key or no_such_version. */
      stamped?: true
    })
  | (Request & {
      kind: 'object.delete'
      bucket: string
      key: string
      versionId?: string
      /** Cluster mode: the coordinator's stamp of this change (see the module comment). */
      stamp?: string
    })
  | (Request & {
      kind: 'object.delete-many'
      bucket: string
      objects: { key: string; versionId?: string }[]
      /** Cluster mode: one stamp for every key of the batch (each key is changed once). */
      stamp?: string
    })
  /** Cluster mode: the stamp of the newest change of each key this replica holds (null: none),
   * deletions included, so that a listing can tell a key deleted here from one never received. */
  | (Request & { kind: 'object.stamps'; bucket: string; keys: string[] })
  /** Cluster mode: a merged listing's point check of keys this replica did not list: each key's
   * newest change here and its current object, if any (KeyHead). */
  | (Request & { kind: 'object.heads'; bucket: string; keys: string[] })
  /** Cluster mode: whether each version was deleted by id here (its tombstone is kept). */
  | (Request & {
      kind: 'object.versions-deleted'
      bucket: string
      versions: { key: string; versionId: string }[]
    })
  | (Request & { kind: 'bucket.versioning.put'; bucket: string; status: 'Enabled' | 'Suspended' })
  | (Request & { kind: 'bucket.versioning.get'; bucket: string })
  | (Request & {
      kind: 'object.list-versions'
      bucket: string
      prefix: string
      delimiter: string
      keyMarker: string
      versionIdMarker: string
      maxKeys: number
    })
  | (Request & {
      kind: 'object.copy'
      source: { bucket: string; key: string; versionId?: string }
      target: { bucket: string; key: string }
      /** Replacement metadata (REPLACE directive); absent means COPY. */
      replace?: { http: HttpMeta; userMeta: Record<string, string> }
      /** The copy's tags (x-amz-tagging-directive REPLACE); absent, the source's are kept. */
      tags?: Tag[]
      /** x-amz-copy-source-if-*: checked against the source. */
      conditions: Conditions
      /** If-Match, If-None-Match, If-Unmodified-Since: checked against the target's current
       * object, as object.put's conditions. */
      targetConditions?: WriteConditions
    })
  /** An object version's tags: replaced whole (an empty set deletes them); its bytes untouched. */
  | (Request & {
      kind: 'object.tagging.put'
      bucket: string
      key: string
      versionId?: string
      tags: Tag[]
      /** Cluster mode: the coordinator's stamp of this change (see the module comment). */
      stamp?: string
    })
  | (Request & { kind: 'object.tagging.get'; bucket: string; key: string; versionId?: string })
  /** A bucket's tags, validated by the ingress; an empty set deletes them. */
  | (Request & { kind: 'bucket.tagging.put'; bucket: string; tags: Tag[] })
  | (Request & { kind: 'bucket.tagging.get'; bucket: string })
  | (Request & { kind: 'object.list' } & ListRequest)
  | UploadMsg

/** Multipart uploads (S3's CreateMultipartUpload ... CompleteMultipartUpload). */
export type UploadMsg =
  | (Request & {
      kind: 'upload.create'
      bucket: string
      key: string
      http: HttpMeta
      userMeta: Record<string, string>
      /** x-amz-checksum-algorithm and -type: every part must carry that checksum. */
      checksum?: UploadChecksum
      /** The object's tags once completed (x-amz-tagging). */
      tags?: Tag[]
      /** Cluster mode: the stamp, and the upload id the coordinator chose (equal everywhere). */
      stamp?: string
      uploadId?: string
    })
  | (Request & {
      kind: 'upload.part'
      bucket: string
      key: string
      uploadId: string
      partNumber: number
      expect: Expectations
      /** As in object.put: small bodies inline, larger ones on a stream; exactly one is set. */
      body?: Uint8Array
      stream?: StreamHandle
      /** As in object.put. */
      streamMd5?: boolean
      /** Cluster mode: the coordinator's stamp of this change (see the module comment). */
      stamp?: string
    })
  | (Request & {
      kind: 'upload.part-copy'
      bucket: string
      key: string
      uploadId: string
      partNumber: number
      source: { bucket: string; key: string; versionId?: string }
      /** Inclusive byte range of the source (x-amz-copy-source-range); absent: all of it. */
      range?: { start: number; end: number }
      conditions: Conditions
    })
  | (Request & {
      kind: 'upload.complete'
      bucket: string
      key: string
      uploadId: string
      parts: CompletedPart[]
      /** As in object.put. */
      conditions?: WriteConditions
      /** Cluster mode, with `conditions`: the key's current object as the coordinator's quorum
       * read found it (null: none), which the conditions are checked against instead of the
       * replica's own, in the place a single node checks them. */
      judgedOn?: { etag: string; lastModifiedMs: number } | null
      /** The whole object's checksum the client expects (x-amz-checksum-* on Complete). */
      expect?: Checksums
      /** Cluster mode: the coordinator's stamp of this change (see the module comment). */
      stamp?: string
    })
  | (Request & {
      kind: 'upload.abort'
      bucket: string
      key: string
      uploadId: string
      /** Cluster mode: the coordinator's stamp of this change (see the module comment). */
      stamp?: string
    })
  /** Cluster mode: the state of each upload here: in progress, ended (completed or aborted, its
   * record kept), or unknown to this replica. */
  | (Request & { kind: 'upload.states'; bucket: string; uploadIds: string[] })
  /** Cluster mode: a conditional write of a key first holds it on a majority of its replicas
   * (each grants one live claim per key), so that of two racing conditional writes one waits for
   * the other and then sees its object. */
  | (Request & { kind: 'key.claim'; bucket: string; key: string; claimant: string })
  | (Request & { kind: 'key.release'; bucket: string; key: string; claimant: string })
  /** Cluster mode: changes that replicas missed, kept durably by the coordinator's node until
   * repair brings them (a newer hint of a key for a node replaces an older one). */
  | (Request & { kind: 'hint.put'; hints: Hint[] })
  /** Cluster mode: how many hints this node keeps. */
  | (Request & { kind: 'hint.count' })
  /** Cluster mode: wipe this node's object data and sync it from its peers (a node down longer
   * than SVC_MAX_REJOIN_DOWNTIME_DAYS, or a replacement); answers the job at once. */
  | (Request & { kind: 'node.bootstrap' })
  /** Cluster mode: the last bootstrap job of this node. */
  | (Request & { kind: 'node.bootstrap-status' })
  /** Cluster mode: how many hints this node keeps for each replica (those with none left out). */
  | (Request & { kind: 'hint.nodes' })
  /** Cluster mode: the hints kept for `node`, after the one named `after` (bucket and key; none:
   * from the first), at most `limit`, in order. */
  | (Request & {
      kind: 'hint.page'
      node: string
      after: { bucket: string; key: string } | null
      limit: number
    })
  /** Cluster mode: hints delivered or expired: each is removed unless a newer one replaced it. */
  | (Request & { kind: 'hint.done'; hints: Hint[] })
  | (Request & {
      kind: 'upload.list-parts'
      bucket: string
      key: string
      uploadId: string
      afterPartNumber: number
      maxParts: number
    })
  | (Request & {
      kind: 'upload.list'
      bucket: string
      prefix: string
      delimiter: string
      keyMarker: string
      uploadIdMarker: string
      maxUploads: number
    })

/** A change of a key that replica `node` missed: its stamp, newest kept. */
export interface Hint {
  node: string
  bucket: string
  key: string
  stamp: string
}

/** An upload as one replica knows it (`upload.states`). */
export type UploadState = 'open' | 'ended' | 'unknown'

/** A message without the fields every request carries, which the sender's helper adds (distributes
 * over a union). */
export type Unaddressed<M> = M extends unknown ? Omit<M, 'requestId' | 'deadlineMs'> : never

export type ObjectReply = {
  'bucket.create': BucketInfo
  'bucket.delete': null
  'bucket.head': BucketInfo
  'bucket.list': BucketListing
  'bucket.stats': BucketStats[]
  'bucket.cors.put': null
  'bucket.cors.get': CorsConfiguration
  'bucket.cors.delete': null
  'object.put': PutResult
  'object.get': GetResult | MarkerResult | AbsentResult
  'object.delete': DeleteResult
  'object.delete-many': DeleteManyResult
  'object.stamps': (string | null)[]
  'object.heads': KeyHead[]
  'object.versions-deleted': boolean[]
  'upload.states': UploadState[]
  'key.claim': { granted: boolean }
  'key.release': null
  'hint.put': null
  'hint.count': number
  'node.bootstrap': BootstrapJob
  'node.bootstrap-status': BootstrapJob
  'hint.nodes': Record<string, number>
  'hint.page': Hint[]
  'hint.done': number
  'object.copy': PutResult
  'object.list': ListPage
  'object.tagging.put': TaggingResult
  'object.tagging.get': TaggingResult
  'bucket.tagging.put': null
  'bucket.tagging.get': Tag[]
  'bucket.versioning.put': null
  'bucket.versioning.get': { status: 'Enabled' | 'Suspended' | null }
  'object.list-versions': VersionListing
  'upload.create': UploadCreated
  'upload.part': PartInfo
  'upload.part-copy': PartInfo
  'upload.complete': PutResult
  'upload.abort': null
  'upload.list-parts': PartListing
  'upload.list': UploadListing
}

/** The replica-store also keeps small system records for other actors (iam) in its own keyspace. */
export type SystemMsg =
  | (Request & { kind: 'system.get'; name: string })
  | (Request & { kind: 'system.put'; name: string; value: Uint8Array })
  | (Request & { kind: 'system.delete'; name: string })
  /** Every record whose name starts with `prefix`, ascending by name. */
  | (Request & { kind: 'system.list'; prefix: string })
  | (Request & { kind: 'system.stats' })
  /** Cluster mode: the replicas away longer than SVC_HINT_TTL_HOURS, as the hint queue sees them
   * (all of them, replacing the last list): no hint is recorded for them until they are back. */
  | (Request & { kind: 'hint.closed'; nodes: string[] })
  /** The node's phase as the store knows it: `joining` until a cluster node's first catalog pull,
   * `serving` after (and always on a single node). Gossip asks it when it (re)starts. */
  | (Request & { kind: 'system.phase' })
  /** Records of this node alone (the scrubber's cursor), outside the catalog: a cluster never
   * publishes them. */
  | (Request & { kind: 'system.local-get'; name: string })
  | (Request & { kind: 'system.local-put'; name: string; value: Uint8Array })

export type SystemReply = {
  'system.get': Uint8Array | null
  'system.put': null
  'system.delete': null
  'system.list': SystemRecord[]
  'system.stats': StoreStats
  'hint.closed': null
  'system.phase': NodePhase
  'system.local-get': Uint8Array | null
  'system.local-put': null
}

export interface SystemRecord {
  name: string
  value: Uint8Array
}

/** Per-bucket counters, kept by the same batches that change the bucket's objects. */
export interface BucketStats {
  name: string
  createdMs: number
  objectsCount: number
  storageUsedBytes: number
}

export interface StoreStats {
  bucketsCount: number
  objectsCount: number
  storageUsedBytes: number
  uniqueBlobs: number
  totalReferences: number
}

/** What the store takes: also the scrubber's requests, and in cluster mode the catalog and
 * replica calls of other nodes and anti-entropy's questions. */
export type StoreMsg = ObjectMsg | SystemMsg | BlobMsg | PeerRequestMsg | AntiEntropyMsg

/** What a cluster node's coordinator counted since it started. */
export interface CoordinatorCounters {
  quorumWrites: number
  quorumReads: number
  /** Client requests answered 503 (or busy) because too few replicas acknowledged. */
  quorumWriteFailures: number
  quorumReadFailures: number
  readRepairs: number
}

/** What the coordinator takes: object requests, and the node's storage counters for /api/stats
 * (in a cluster, the coordinator is where counters of several replicas would be combined). */
export type CoordinatorMsg =
  | ObjectMsg
  | Extract<SystemMsg, { kind: 'system.stats' }>
  /** Cluster mode: what the coordinator counted (quorum reads and writes, read repairs), for
   * /metrics. */
  | (Request & { kind: 'coordinator.counters' })
  /** Cluster mode: brings replica `node` of a key up to the newest state the key's reachable
   * replicas hold, which must be at least the hinted change `stamp` (a hint's delivery). */
  | (Request & { kind: 'key.bring'; bucket: string; key: string; node: string; stamp: string })
  /** Cluster mode: anti-entropy found replicas `nodes` (two) of a key holding different records;
   * each is given what the other holds and it lacks. */
  | (Request & { kind: 'key.sync'; bucket: string; key: string; nodes: string[] })

export type CoordinatorReply = ObjectReply & {
  'system.stats': StoreStats
  'coordinator.counters': CoordinatorCounters
  'key.bring': KeyBrought
  'key.sync': KeySynced
}

/** A bootstrap of this node (actors/replica-store/replication/rejoin.ts): `idle` when none ran
 * since start. */
export interface BootstrapJob {
  id: string
  state: 'idle' | 'running' | 'done' | 'failed'
  startedMs?: number
  finishedMs?: number
  keysSynced?: number
  error?: string
}

/** What anti-entropy's bootstrap round did: the keys it synced, and the peers it could not
 * compare with (the bootstrap fails while any is left). */
export interface BootstrapSynced {
  keysSynced: number
  unreached: string[]
}

/** What `key.sync` did: the merges that changed either replica (`replayed`). */
export interface KeySynced {
  replayed: number
  /** Bytes of the objects copied (what anti-entropy's throttle counts). */
  bytes: number
}

/** What `key.bring` did: the replica held the newest state already, or was brought to it. */
export type KeyBrought = 'current' | 'repaired'

/** What the hint queue counted since it started, for /metrics and repair-status. */
export interface HintQueueCounters {
  delivered: number
  expired: number
}

/** Requests to the hint queue. */
export type HintQueueMsg = Request & { kind: 'hint-queue.counters' }

export type HintQueueReply = { 'hint-queue.counters': HintQueueCounters }

/** Requests to iam: the key lookup behind SigV4, and the admin API's identity operations. Ingress
 * checks a bearer token with iam.authorize before it sends any other admin request. */
export type IamMsg =
  | (Request & { kind: 'iam.lookup-key'; accessKey: string })
  | (Request & {
      kind: 'iam.login'
      username: string
      password: string
      /** The client's network address, for throttling repeated failures. */
      clientAddress: string
    })
  | (Request & { kind: 'iam.authorize'; token: string })
  | (Request & { kind: 'iam.user.list' })
  | (Request & { kind: 'iam.user.create'; username: string; password: string; role: Role })
  | (Request & { kind: 'iam.user.get'; userId: string })
  | (Request & {
      kind: 'iam.user.update'
      userId: string
      password?: string
      role?: Role
      isActive?: boolean
    })
  | (Request & { kind: 'iam.user.delete'; userId: string })
  | (Request & { kind: 'iam.credentials.create'; userId: string })
  | (Request & { kind: 'iam.credentials.delete'; userId: string })
  /** The store applied records another node changed (their system record names): reload them. */
  | (Request & { kind: 'iam.records-changed'; names: string[] })
  /** Cluster mode: the store's first catalog pull is done; create the root user if none exists. */
  | (Request & { kind: 'iam.catalog-synced' })
  /** Cluster mode: Iam.LoginOutcome from another storage node. */
  | PeerRequestMsg

export type IamReply = {
  'iam.lookup-key': KeyLookup
  'iam.login': LoginGrant
  'iam.authorize': Principal
  'iam.user.list': UserView[]
  'iam.user.create': UserView
  'iam.user.get': UserView
  'iam.user.update': UserView
  'iam.user.delete': null
  'iam.credentials.create': IssuedCredentials
  'iam.credentials.delete': null
  'iam.records-changed': null
  'iam.catalog-synced': null
  'peer.request': null
}

export interface LoginGrant {
  token: string
  /** The token's `exp` claim, in milliseconds. */
  expiresAtMs: number
}

/** A user as the admin API shows it: never a password hash or a secret key. */
export interface UserView {
  id: string
  username: string
  role: Role
  isActive: boolean
  createdMs: number
  /** The access key of the user's S3 credentials, if issued (the secret is never shown again). */
  accessKey: string | null
}

export interface IssuedCredentials {
  accessKey: string
  secretKey: string
}

export interface Principal {
  userId: string
  role: Role
}
export interface KeyLookup {
  secretKey: string
  principal: Principal
  /** iam's change counter when this answer was made: the ingress caches an answer only if no
   * newer change has been announced to it (answers and announcements travel on different links). */
  generation: number
}

/** iam tells the ingress that an access key changed (revoked, replaced, its user deactivated):
 * the ingress drops its cached lookup before iam's own request returns. */
export type IngressMsg = Request & {
  kind: 'ingress.forget-key'
  accessKey: string
  generation: number
}

export type IngressReply = { 'ingress.forget-key': null }
