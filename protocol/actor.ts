/** @module Actor contracts: what an actor is, and the context through which it does every effect.
 * An actor owns private state and handles one message at a time between awaits; the runtime hosts
 * it on a worker thread (or, in a simulation, in one thread with fakes behind the same
 * interfaces). */
import type { Peers } from './cluster.js'
import { fail, type ErrorCode, type Result } from './errors.js'
import type { AbsentResult, GetResult, LentFile, MarkerResult, ReplicaRead } from './messages.js'
import type { BodyDigests, ChecksumAlgorithm } from './objects.js'
import type { Handled, KindOf, MessageOf, MessageTo, Protocols, ReplyOf } from './protocols.js'

/** Every request one actor may send another. */
export type AnyMsg = { [Name in ActorName]: MessageTo<Name> }[ActorName]

export type ActorName =
  | 'http-ingress'
  | 'iam'
  | 'coordinator'
  | 'replica-store'
  // Cluster mode: calls from other nodes come in through grpc-ingress, which hands Membership.*
  // to the gossiper, Catalog.* and Replica.* to replica-store, and Iam.* to iam.
  | 'grpc-ingress'
  | 'gossiper'
  // Cluster mode: delivers the hints this node keeps to replicas that come back.
  | 'hint-queue'
  // Storage nodes (single and cluster mode): checks every blob's CRC32, heals corrupt copies.
  | 'scrubber'
  // Cluster mode: compares this node's replicas with its peers' and syncs what differs.
  | 'anti-entropy'
  // Storage nodes: runs the buckets' lifecycle rules (expiry, aborts) in the background.
  | 'lifecycle'

/** The actor an ingress sends object and bucket requests to: in a cluster the coordinator, which
 * owns the quorum path; on a single node the store itself, where a coordinator would only pass
 * each request on (a hop less: two thread crossings per request, a cost of their own on every
 * small GET). */
export function objectActor(
  config: Readonly<Record<string, string>>,
): 'replica-store' | 'coordinator' {
  const mode = config['SVC_MODE'] ?? 'single'
  return mode === 'single' ? 'replica-store' : 'coordinator'
}

/** Every request between actors carries these. `deadlineMs` is absolute, on ctx.now()'s clock. */
export interface Request {
  requestId: string
  deadlineMs: number
}

/** An opaque handle to a byte stream (a MessagePort in the threaded runtime). It travels inside a
 * message and is transferred, so exactly one actor holds each end. */
export type StreamHandle = { readonly __stream: unique symbol } | object

export interface Actor<State, Name extends ActorName> {
  name: Name
  /** Opens the actor's resources. A restart is exactly a new `init`. */
  init(ctx: Context): Promise<State> | State
  /** Answers each request by its kind: the returned value is the reply. */
  handlers: Handlers<State, Name>
  /** Runs around every handler, whatever its kind (what the actor does for each request): `next`
   * runs the kind's handler. */
  around?<K extends KindOf<Name>>(
    state: State,
    msg: MessageOf<Name, K>,
    ctx: Context,
    next: () => Handled<ReplyOf<Name, K>>,
  ): Handled<ReplyOf<Name, K>>
  /** Called on a graceful stop; releases what init opened. */
  stop?(state: State, ctx: Context): Promise<void> | void
}

/** An actor's handlers: one for each kind of its protocol, none missing and none extra. */
export type Handlers<State, Name extends ActorName> = {
  [K in KindOf<Name>]: (
    state: State,
    msg: MessageOf<Name, K>,
    ctx: Context,
  ) => Handled<ReplyOf<Name, K>>
}

/** Answers one request: the handler of its kind, inside the actor's `around`. A kind the actor has
 * no handler for fails `invalid_request` (a link's kinds are checked when the node starts). */
export function handle<State, Name extends ActorName, K extends KindOf<Name>>(
  actor: Actor<State, Name>,
  state: State,
  msg: MessageOf<Name, K> & { kind: K },
  ctx: Context,
): Handled<ReplyOf<Name, K>> {
  const next = (): Handled<ReplyOf<Name, K>> => byKind(actor.name, actor.handlers, state, msg, ctx)
  return actor.around === undefined ? next() : actor.around(state, msg, ctx, next)
}

/** Answers one request by the handler of its kind alone (no `around`). */
export function byKind<State, Name extends ActorName, K extends KindOf<Name>>(
  name: Name,
  handlers: Handlers<State, Name>,
  state: State,
  msg: MessageOf<Name, K> & { kind: K },
  ctx: Context,
): Handled<ReplyOf<Name, K>> {
  const table: Partial<Handlers<State, Name>> = handlers
  const handler = Object.hasOwn(table, msg.kind) ? table[msg.kind] : undefined
  if (handler === undefined) return fail('invalid_request', `${name} takes no ${msg.kind}`)
  return handler(state, msg, ctx)
}

/** Sorted byte-keyed metadata store (RocksDB in production). Reads are synchronous and see every
 * write handed to `commit`, including ones whose sync is still in flight; `commit` resolves once
 * the batch is on stable storage. Keys are strings compared as UTF-8 bytes. */
/** Exclusion among the shards of a node's store: SVC_STORE_SHARDS store threads share one
 * metadata database, each owning a part of the key space, and what several of them read and write
 * (a blob's record, which keys of every shard may name; a bucket's record, which every shard's
 * writes into it check) is changed by one shard at a time. A name (the caller namespaces them: a
 * blob's by its sha256, a bucket's by its name) is hashed onto one of a fixed set of stripes, so
 * two names may share one: claiming a name is claiming its stripe. Claims are taken at once or not
 * at all, so a mutation claims what it reads as it reads it, synchronously; one that cannot waits
 * for the stripe to change and prepares again. A shard's own claims never exclude each other: its
 * requests see each other's batches through its kv (mutation.ts). A claim lasts until the batch
 * that relied on it is durable, so the next shard to claim reads what it wrote. */
export interface ShardLocks {
  /** This shard's index, from 0, and how many shards the node runs. */
  readonly shard: number
  readonly shards: number
  /** Claims `name` unless another shard holds it exclusively, or (`exclusive`) at all. */
  claim(name: string, mode: ClaimMode): boolean
  release(name: string, mode: ClaimMode): void
  /** A shard that found `name` taken waits for it: while it does, the holders take no new claim
   * of it, so that they drain and it gets its turn. It stops waiting when a claim of it is
   * granted, or by this, when it gives up. */
  stopWaiting(name: string): void
  /** A count that moves whenever a claim on `name`'s stripe is released. */
  version(name: string): number
  /** Resolves once `name`'s stripe's version is no longer `seen`, or at `deadlineMs`. */
  changed(name: string, seen: number, deadlineMs: number): Promise<void>
  /** A file some reader of any shard will still open: its removal as garbage waits. */
  pin(fileId: string): void
  unpin(fileId: string): void
  /** Whether any shard pins `fileId` (or a file on its stripe: its removal then waits too). */
  pinned(fileId: string): boolean
  /** At a shard's start: drops every claim and pin its previous incarnation held (a killed thread
   * cannot release them; its batches in flight have landed or failed by then). */
  releaseAll(): void
}

export type ClaimMode = 'shared' | 'exclusive'

/** Reads of the metadata database. */
export interface KvReader {
  get(key: string): Uint8Array | undefined
  getMany(keys: readonly string[]): (Uint8Array | undefined)[]
  /** Entries with gte <= key < lt (or gt < key), ascending, at most `limit`. */
  scan(range: KvRange): [string, Uint8Array][]
  /** `scan` with each value decoded as UTF-8, for ranges of JSON records: RocksDB hands out
   * strings far cheaper than a Buffer per row. */
  scanText(range: KvRange): [string, string][]
}
export interface KvStore extends KvReader {
  commit(ops: readonly KvOp[]): Promise<void>
}
export interface KvRange {
  gte?: string
  gt?: string
  lt: string
  limit: number
}
export type KvOp = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string }

/** Blob files named by opaque ids the store chooses (never by object keys). A file is created under
 * a temporary name, synced, and promoted; ids of promoted and temporary files never collide. */
export interface BlobFiles {
  create(id: string): Promise<BlobWriter>
  /** Moves a synced temporary file to its permanent place; idempotent. */
  promote(id: string): Promise<void>
  /** Opens a permanent (or, after a crash before promotion, temporary) file for reading. */
  open(id: string): Promise<BlobReader | undefined>
  /** Where another thread of this process opens the file itself: its permanent path, then its
   * temporary one (as `open` looks). Absent where blobs are not files. */
  pathsOf?(id: string): string[]
  remove(id: string): Promise<void>
  /** Creates the empty temporary file `id` for another thread of this process to write (a lent
   * write, ByteSource.lendWrite). Absent where blobs are not files. */
  createLent?(id: string): Promise<WriteLoan>
  /** Ids of temporary files left by a previous run. */
  listTemporary(): Promise<string[]>
  removeTemporary(id: string): Promise<void>
  /** Whether `bytes` more of object data fit on the data volume, above the space kept free for
   * deletes and the metadata database's own writes. A write that finds no room while it runs
   * fails with `insufficient_storage` instead. `counted`: once admitted the bytes count as written
   * at once, since no file write of this thread will count them (they go to the metadata
   * database, or another thread writes them to a lent file). */
  admits(bytes: number, counted?: boolean): Promise<boolean>
}
export interface BlobWriter {
  /** Appends `chunk`. Writes may still be running when this resolves (a bounded number of them):
   * the chunk must stay untouched until `written` is called. A failure is reported by a later
   * call, `commit` at the latest. */
  write(chunk: Uint8Array, written?: () => void): Promise<void>
  /** fsync, then close. */
  commit(): Promise<void>
  /** Close and delete. */
  discard(): Promise<void>
}
export interface BlobReader {
  readonly size: number
  read(offset: number, length: number): Promise<Uint8Array>
  close(): Promise<void>
}

/** The receiving end of a byte stream. `next` grants credit to the sender as it consumes, so the
 * sender never runs more than a bounded window ahead. */
export interface ByteSource {
  /** The next chunk, or null at the end. Rejects with the sender's abort code or on timeout. */
  next(): Promise<Uint8Array | null>
  /** Trailing values the sender attached to the end of the stream (e.g. x-amz-checksum-*). */
  trailers(): Record<string, string>
  /** MD5 (hex) of every byte the stream carried, when the sender computed it and sent it with
   * the end; undefined otherwise (and before the end). */
  md5(): string | undefined
  /** Asks the sender for bytes start..end inclusive (streams that serve reads wait for this). */
  request(start: number, end: number): void
  /** Hands back a chunk `next` returned, once nothing reads it any more, so that its buffer is
   * reused rather than freed. Optional: a chunk never released is simply collected. */
  release(chunk: Uint8Array): void
  cancel(code: ErrorCode, detail: string): void
  /** Lends the temporary file of `loan` to the sender, which writes the bytes there itself and
   * hashes them, instead of sending them; resolves with what it wrote once the file is synced
   * and the stream ended (`md5` then holds its MD5, not the digests), and rejects as `next` does.
   * Only a stream between threads of one process takes it (absent elsewhere). */
  lendWrite?(loan: WriteLoan): Promise<BodyDigests>
}

/** A temporary blob file lent to the sender of a body (ByteSource.lendWrite). */
export interface WriteLoan {
  file: string
  path: string
}

/** The sending end of a byte stream. */
export interface ByteSink {
  /** Resolves once the chunk is handed over and the window allows more. The chunk's buffer is
   * transferred: the caller must not touch it afterwards. Rejects if the receiver cancelled. */
  write(chunk: Uint8Array): Promise<void>
  /** A buffer of STREAM_CHUNK_BYTES to fill and write, reused from released chunks when one is
   * free (its old bytes are still in it). */
  buffer(): Uint8Array
  /** Takes back a buffer from `buffer()` that will not be written, for the next `buffer()`. */
  giveBack(buffer: Uint8Array): void
  /** Ends the stream; `md5Hex` is the MD5 of every byte written, if the sender computed it. */
  end(trailers?: Record<string, string>, md5Hex?: string): void
  abort(code: ErrorCode, detail: string): void
  /** Resolves with the receiver's read request: which bytes it wants, or null if it cancelled. */
  demand(): Promise<{ start: number; end: number } | null>
}

export interface Logger {
  info(fields: Record<string, unknown>, message: string): void
  warn(fields: Record<string, unknown>, message: string): void
  error(fields: Record<string, unknown>, message: string): void
  /** Plain text for the operator, outside the structured log stream (generated credentials shown
   * once must not be kept by whatever collects the logs). */
  notice(text: string): void
}

/** argon2id password hashing. The runtime runs it on the node's CPU pool, never on the actor's own
 * thread: native work in flight on a thread that is killed would abort the process. Fails with a
 * ServiceError (`busy`, `timeout`) when the pool is saturated. */
export interface PasswordHasher {
  hash(password: string, salt: Uint8Array): Promise<string>
  /** False for a wrong password and for a malformed stored hash alike. */
  verify(storedHash: string, password: string): Promise<boolean>
}

export interface Context {
  readonly self: ActorName
  now(): number
  randomBytes(length: number): Uint8Array
  /** Sends a request to another actor of this node and waits for its reply until `deadlineMs`.
   * A full mailbox answers `busy`, a dead actor `unavailable`, a late reply `timeout`.
   * The reply's type follows from `to` and `msg.kind` (protocols.ts); a kind `to` does not take
   * fails to compile. */
  call<To extends ActorName, K extends KindOf<To>>(
    to: To,
    msg: MessageOf<To, K> & { kind: K },
  ): Promise<Result<ReplyOf<To, K>>>
  /** Sends the request to every running instance of a role that may run several (the ingress),
   * and waits for all their replies; none when no instance is running. */
  callEach<To extends ActorName, K extends KindOf<To>>(
    to: To,
    msg: MessageOf<To, K> & { kind: K },
  ): Promise<Result<ReplyOf<To, K>>[]>
  /** Runs `task` after `ms`, unless cancelled. */
  after(ms: number, task: () => void): () => void
  readonly kv: KvStore
  readonly blobs: BlobFiles
  /** The store's: its shard and the exclusion among the node's store shards. */
  readonly shardLocks: ShardLocks
  readonly passwords: PasswordHasher
  /** Other nodes of the cluster; in single mode every call answers `unavailable`. */
  readonly peers: Peers
  /** A new stream: keep one end, send the other inside a message (it is transferred). */
  openStream(): [StreamHandle, StreamHandle]
  /** Wraps the handle of a stream this actor receives bytes from. */
  source(handle: StreamHandle, deadlineMs: number): ByteSource
  /** Wraps the handle of a stream this actor sends bytes to. */
  sink(handle: StreamHandle, deadlineMs: number): ByteSink
  readonly log: Logger
  /** Per-actor settings from the environment, already validated by the runtime. */
  readonly config: Readonly<Record<string, string>>
}

/** What the HTTP ingress may use of its context: requests to actors, streams, the node's
 * supervisor (chaos kills, metrics), clock and randomness. It never touches storage. */
export interface Mesh extends Pick<
  Context,
  'call' | 'callEach' | 'openStream' | 'source' | 'sink' | 'now' | 'randomBytes' | 'log' | 'config'
> {
  /** Terminates an actor's thread (chaos testing), restarting it no sooner than `downMs` later;
   * false when chaos is off or the actor unknown. */
  kill(actor: string, downMs: number): Promise<boolean>
  /** Records one finished HTTP request for /metrics. */
  observeRequest(sample: RequestSample): void
  /** The node's metrics in Prometheus text format: every actor's registry merged. */
  metricsText(): Promise<string>
  /** The data volume's size and free space, and whether object writes are refused for lack of
   * space (a look at most about a second old). */
  volumeStatus(): Promise<VolumeStatus>
  /** Every actor of the node: whether it is up, its restarts and its mailbox depth. */
  actorHealth(): Promise<Record<string, ActorHealth>>
  /** Every actor's figures, the actor table's links and the node's HTTP totals. */
  nodeFigures(): Promise<NodeFigures>
  /** Cluster chaos: drops all node-to-node traffic with these peers (none: heals). */
  partition(peers: readonly string[]): Promise<void>
  /** Reads a blob file the store lent (GetResult.lent) as a byte source: the range asked for, in
   * pooled chunks, its CRC32 checked on a whole read before the last chunk goes (a mismatch, or a
   * file gone, fails `corrupt` and is reported to the store). */
  lentSource(lent: LentFile, deadlineMs: number): ByteSource
  /** A single node's current version of `bucket/key`, read from the metadata database on this
   * thread: its info, with the bytes of a small (inline) object when `withBody`. Null where the
   * store must answer (actors/replica-store/local-read.ts), and always off a single node. */
  readCurrent(bucket: string, key: string, withBody: boolean): GetResult | null
  /** A cluster's read of `range` of a version's bytes from the node that holds it
   * (GetResult.readFrom), on this thread: the replica's answer (its head, before any byte), and
   * the bytes. */
  readReplica(
    read: ReplicaRead,
    range: { start: number; end: number },
    deadlineMs: number,
  ): { answer: Promise<Result<GetResult | MarkerResult | AbsentResult>>; source: ByteSource }
  /** The sending end of a stream whose receiver lends a file (ByteSource.lendWrite): each chunk is
   * hashed (SHA-256, CRC32 and the `checksums` named) and written to the file on this thread, at
   * most `size` bytes; the end syncs the file and sends the digests. */
  lentWriteSink(
    handle: StreamHandle,
    size: number,
    checksums: readonly ChecksumAlgorithm[],
  ): ByteSink
}

/** One actor instance's figures, as the console's Actors page shows them. */
export interface ActorFigures {
  /** The actor's role: `replica-store` for the instance `replica-store-2`. */
  role: string
  up: boolean
  restarts: number
  mailbox_depth: number
  /** Messages the actor handled since the node started (svc_actor_messages_total, every kind). */
  messages_total: number
  /** CPU seconds of the actor's thread since the node started, restarts included. */
  cpu_seconds: number
}

/** What a node's actors are doing now: every instance's figures, the links of the actor table
 * between roles, and the HTTP requests the node answered (every ingress thread's). */
export interface NodeFigures {
  actors: Record<string, ActorFigures>
  /** Directed links [caller role, callee role] (runtime/actor-table.ts of the node's mode). */
  links: [string, string][]
  http: {
    /** Requests answered since the node started. */
    requests: number
    /** Of those, answered 5xx. */
    errors: number
    /** Of those, answered 4xx. */
    client_errors: number
    /** Sum of their durations in seconds (svc_http_request_duration_seconds_sum). */
    seconds_sum: number
  }
}

export interface ActorHealth {
  up: boolean
  restarts: number
  mailbox_depth: number
}

export interface VolumeStatus {
  sizeBytes: number
  freeBytes: number
  /** True while object writes answer `insufficient_storage`. */
  full: boolean
}

/** One finished HTTP request, as /metrics counts it. */
export interface RequestSample {
  /** The S3 operation (PutObject, ListObjectsV2...), or the name of a non-S3 endpoint. */
  operation: string
  method: string
  status: number
  seconds: number
  requestBytes: number
  responseBytes: number
}
