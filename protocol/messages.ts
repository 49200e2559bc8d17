/** @module Messages between actors. Ingress speaks the object protocol to the coordinator, which in
 * single mode forwards it unchanged to replica-store (in cluster mode it fans out to replicas).
 *
 * Stamps. In cluster mode a change of an object key carries `stamp`, an hlcString the coordinator
 * chose above every stamp a read quorum of the key's replicas held, so that acknowledged changes of
 * a key are ordered whatever the clocks' skew. Every replica derives the same Last-Modified (the
 * stamp's wall clock) and version id (stampToken) from it, applies a change only if it is newer
 * than the newest change of the key it holds (an older one becomes an older version, or nothing),
 * and keeps the stamp of the newest change of each key, deletions included, as a tombstone. */
import type { z } from 'zod'
import type { Request, StreamHandle } from './actor.js'
import type { AntiEntropyMsg } from './anti-entropy.js'
import type { NodePhase, PeerRequestMsg, PeerTarget } from './cluster.js'
import type { WriteConditions } from './s3-rules/conditions.js'
import type {
  BucketSettingName,
  BucketSettingValue,
  NamedBucketSetting,
} from './bucket-settings.js'
import type { BucketInfo, BucketListing, Conditions, HttpMeta, ListPage } from './objects.js'
import type { Role } from './identity.js'
import type { ObjectAttributes } from './object-attributes.js'
import type { BlobMsg } from './scrubbing.js'
import type { decidedVersioning, Fields } from './wire/fields.js'
import type * as answers from './wire/replica-answers.js'
import type * as wire from './wire/replica.js'

/** The trailer that carries a part's stamp at the end of its body, cluster mode only: of two
 * uploads of one part, the last to end counts. A message without a stamp ignores it, so a
 * client's own trailer of that name means nothing. */
export const END_STAMP_TRAILER = 'x-svc-stamp'

/* The answers a replica gives a peer too have their schemas in wire/replica-answers.ts, which says
 * what each field means; their types are those schemas'. */
export type PutResult = z.infer<typeof answers.putResult>
/** A bucket's versioning as a stamped change's coordinator decided it (null: never configured). */
export type DecidedVersioning = z.infer<typeof decidedVersioning>
export type GetResult = z.infer<typeof answers.getResult> & {
  /** Whole body of a small object, sent with a local reply (to a peer, on the call's stream);
   * otherwise the bytes come on the stream after the receiver asks for a range. */
  body?: Uint8Array
  /** The blob's file, lent to the caller (a `lend` request): it reads the bytes itself. */
  lent?: LentFile
  /** Where the caller reads the bytes itself (a `direct` request whose newest copy is on another
   * node): nothing comes on the request's stream. */
  readFrom?: ReplicaRead
}
/** A read of a version's bytes from the node that holds it (Replica.Read): the replica, the read
 * pinned to the version a quorum found, and the key stamp its answer must carry (else the key
 * changed meanwhile, and the read is not that version's). */
export interface ReplicaRead {
  target: PeerTarget
  msg: Omit<Extract<ObjectMsg, { kind: 'object.get' }>, 'stream' | 'inline' | 'direct'>
  keyStamp: string | null | undefined
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
export type KeyHead = z.infer<typeof answers.keyHead>
export type AbsentResult = z.infer<typeof answers.absentResult>
export type PartInfo = z.infer<typeof answers.partInfo>
export type UploadCreated = z.infer<typeof answers.uploadCreated>
export type UploadSummary = z.infer<typeof answers.uploadSummary>
export type UploadListing = z.infer<typeof answers.uploadListing>
export type PartListing = z.infer<typeof answers.partListing>
/** A part of a CompleteMultipartUpload request: its number and the ETag the client kept, and the
 * checksums it names. */
export type CompletedPart = z.infer<typeof wire.completedPart>

export type AttributesResult = z.infer<typeof answers.attributesResult>
export type MarkerResult = z.infer<typeof answers.markerResult>
export type DeleteResult = z.infer<typeof answers.deleteResult>
export type DeletedEntry = z.infer<typeof answers.deletedEntry>
export type VersionEntry = z.infer<typeof answers.versionEntry>
export type VersionListing = z.infer<typeof answers.versionListing>
export type DeleteManyResult = z.infer<typeof answers.deleteManyResult>

/** Requests of buckets and objects. Those a replica takes from a peer (Replica.*) have their
 * fields, and what each means, in the schemas of wire/replica.ts, with their body or stream added
 * here. */
export type ObjectMsg =
  /** `owner`: the user id of the principal that creates it (the S3 and admin APIs always name
   * one; without, the bucket is nobody's, as those made before owners were recorded). */
  | (Request & { kind: 'bucket.create'; bucket: string; owner?: string })
  | (Request & Fields<typeof wire.bucketDelete>)
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
  | (Request & Fields<typeof wire.bucketStats>)
  /** A bucket setting (protocol/bucket-settings.ts), its value validated by the ingress. A put
   * of an empty value deletes a setting whose rules say so; a delete of one the bucket does not
   * have succeeds, as in S3. */
  | (Request & { kind: 'bucket.setting.put'; bucket: string } & NamedBucketSetting)
  | (Request & { kind: 'bucket.setting.get'; bucket: string; name: BucketSettingName })
  | (Request & { kind: 'bucket.setting.delete'; bucket: string; name: BucketSettingName })
  /** Small bodies travel inline; larger ones on a stream. Exactly one is set. */
  | (Request & Fields<typeof wire.objectPut> & { body?: Uint8Array; stream?: StreamHandle })
  | (Request &
      Fields<typeof wire.objectGet> & {
        /** Where the bytes of a blob file go. Absent: no body is streamed (HEAD, or a first
         * look). */
        stream?: StreamHandle
        /** Without a stream: answer with the whole body if it is small enough to be kept inline,
         * so small GETs take one round trip and no stream; a large object is then read with a
         * stream. */
        inline?: true
        /** With `inline`, from a thread of the store's own process (a single node's ingress): a
         * single-file blob is lent (GetResult.lent) rather than streamed, so the whole GET is one
         * round trip and its bytes never cross threads. */
        lend?: true
        /** With a stream, to a cluster's coordinator: bytes of another node are not relayed
         * through it; the answer says where to read them (GetResult.readFrom). */
        direct?: true
      })
  | (Request & Fields<typeof wire.objectDelete>)
  | (Request & Fields<typeof wire.objectDeleteMany>)
  | (Request & Fields<typeof wire.objectStamps>)
  | (Request & Fields<typeof wire.objectHeads>)
  | (Request & Fields<typeof wire.objectVersionsDeleted>)
  | (Request & { kind: 'bucket.versioning.put'; bucket: string; status: 'Enabled' | 'Suspended' })
  | (Request & { kind: 'bucket.versioning.get'; bucket: string })
  | (Request & Fields<typeof wire.objectListVersions>)
  | (Request & {
      kind: 'object.copy'
      source: { bucket: string; key: string; versionId?: string }
      target: { bucket: string; key: string }
      /** Replacement metadata (REPLACE directive); absent means COPY. */
      replace?: { http: HttpMeta; userMeta: Record<string, string> }
      /** The attributes the request names; the others as S3's copy rule says
       * (protocol/object-attributes.ts). */
      attributes?: ObjectAttributes
      /** x-amz-copy-source-if-*: checked against the source. */
      conditions: Conditions
      /** If-Match, If-None-Match, If-Unmodified-Since: checked against the target's current
       * object, as object.put's conditions. */
      targetConditions?: WriteConditions
    })
  | (Request & Fields<typeof wire.objectAttributesPut>)
  | (Request & Fields<typeof wire.objectAttributesGet>)
  | (Request & Fields<typeof wire.objectList>)
  | UploadMsg

/** Multipart uploads (S3's CreateMultipartUpload ... CompleteMultipartUpload). */
export type UploadMsg =
  | (Request & Fields<typeof wire.uploadCreate>)
  /** As in object.put: small bodies inline, larger ones on a stream; exactly one is set. */
  | (Request & Fields<typeof wire.uploadPart> & { body?: Uint8Array; stream?: StreamHandle })
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
  | (Request & Fields<typeof wire.uploadComplete>)
  | (Request & Fields<typeof wire.uploadAbort>)
  | (Request & Fields<typeof wire.uploadStates>)
  | (Request & Fields<typeof wire.keyClaim>)
  | (Request & Fields<typeof wire.keyRelease>)
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
  | (Request & Fields<typeof wire.uploadListParts>)
  | (Request & Fields<typeof wire.uploadList>)

/** A change of a key that replica `node` missed: its stamp, newest kept. */
export interface Hint {
  node: string
  bucket: string
  key: string
  stamp: string
}

/** An upload as one replica knows it (`upload.states`). */
export type UploadState = z.infer<typeof answers.uploadState>

/** A message without the fields every request carries, which the sender's helper adds (distributes
 * over a union). */
export type Unaddressed<M> = M extends unknown ? Omit<M, 'requestId' | 'deadlineMs'> : never

export type ObjectReply = {
  'bucket.create': BucketInfo
  'bucket.delete': null
  'bucket.head': BucketInfo
  'bucket.list': BucketListing
  'bucket.stats': BucketStats[]
  'bucket.setting.put': null
  'bucket.setting.get': BucketSettingValue
  'bucket.setting.delete': null
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
  'object.attributes.put': AttributesResult
  'object.attributes.get': AttributesResult
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
  | (Request & Fields<typeof wire.systemStats>)
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
export type BucketStats = z.infer<typeof answers.bucketStats>
export type StoreStats = z.infer<typeof answers.storeStats>

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
  /** The user's name, which a bucket policy may name it by (the bootstrap key's has none). */
  username?: string
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
