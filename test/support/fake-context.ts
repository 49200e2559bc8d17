/** @module A Context for unit tests: actors run in the test's own thread against in-memory twins of
 * every effect, so a test proves that actor code needs no threads, sockets or sleeps.
 *
 * - MemoryKv: a sorted KvStore (keys ordered as UTF-8 bytes, like RocksDB) with the same
 *   read-your-pending-writes semantics as the real adapter: a commit is visible at once and lands
 *   (becomes durable) later, in groups, on the next macrotask; `pause()` holds landings so a test
 *   can look at the in-between. `durableCopy()` is what a crash would leave.
 * - MemoryBlobs: BlobFiles in maps, with a view of temporary and permanent files, a counter of open
 *   readers, and `corrupt()` to flip a byte.
 * - memoryStream(): one byte stream whose test side feeds a put (push/end/abort) or reads a get
 *   (request/cancel/received), while the actor side is ctx.source / ctx.sink on its handle.
 * - A clock that moves only when told (timers from ctx.after fire in `advance`; contexts may share
 *   one, for the actors of several nodes in one test), seeded deterministic randomBytes, `call`
 *   answering 'unavailable' unless a handler is set (`callEach` asks it once per instance of the
 *   role), `peers.call` likewise unless `onPeerCall` set one, and a log that records entries. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type {
  ActorName,
  BlobFiles,
  BlobReader,
  BlobWriter,
  ByteSink,
  ByteSource,
  Context,
  KvOp,
  KvRange,
  KvStore,
  ShardLocks,
  Logger,
  Request,
  StreamHandle,
} from '../../protocol/actor.js'
import type { PeerMethod, PeerTarget } from '../../protocol/cluster.js'
import { fail, ServiceError, type ErrorCode, type Result } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import type { BlobSpace } from '../../runtime/blob-files.js'
import runPasswordTask from '../../runtime/password-task.js'
import { soleShardLocks } from '../../runtime/shard-locks.js'

// ---------------------------------------------------------------------------------------------
// Sorted in-memory kv

interface Entry {
  key: string
  encoded: Buffer
  value: Uint8Array
}

/** A map kept sorted by the UTF-8 bytes of its keys. Inserts cost O(n): fine for tests. Point
 * reads, most of a store's reads, go through a hash index beside the sorted entries. */
class SortedMap {
  private readonly entries: Entry[] = []
  private readonly byKey = new Map<string, Uint8Array>()

  /** Index of the first entry whose key is >= `encoded` (or > it, if `after`). */
  private lowerBound(encoded: Buffer, after = false): number {
    let low = 0
    let high = this.entries.length
    while (low < high) {
      const middle = (low + high) >>> 1
      const order = Buffer.compare((this.entries[middle] as Entry).encoded, encoded)
      if (order < 0 || (after && order === 0)) low = middle + 1
      else high = middle
    }
    return low
  }

  get(key: string): Uint8Array | undefined {
    return this.byKey.get(key)
  }

  apply(op: KvOp): void {
    const present = this.byKey.has(op.key)
    if (op.type === 'del' && !present) return
    const encoded = Buffer.from(op.key, 'utf8')
    const index = this.lowerBound(encoded)
    if (op.type === 'del') {
      this.entries.splice(index, 1)
      this.byKey.delete(op.key)
      return
    }
    this.byKey.set(op.key, op.value)
    const entry = { key: op.key, encoded, value: op.value }
    if (present) this.entries[index] = entry
    else this.entries.splice(index, 0, entry)
  }

  scan(range: KvRange): [string, Uint8Array][] {
    const lt = Buffer.from(range.lt, 'utf8')
    let index = 0
    if (range.gte !== undefined) index = this.lowerBound(Buffer.from(range.gte, 'utf8'))
    if (range.gt !== undefined) index = this.lowerBound(Buffer.from(range.gt, 'utf8'), true)
    const rows: [string, Uint8Array][] = []
    for (; index < this.entries.length && rows.length < range.limit; index++) {
      const entry = this.entries[index] as Entry
      if (Buffer.compare(entry.encoded, lt) >= 0) break
      rows.push([entry.key, entry.value])
    }
    return rows
  }

  copy(): SortedMap {
    const twin = new SortedMap()
    twin.entries.push(...this.entries)
    for (const [key, value] of this.byKey) twin.byKey.set(key, value)
    return twin
  }

  get size(): number {
    return this.entries.length
  }
}

export class MemoryKv implements KvStore {
  private readonly visible: SortedMap
  private durable: SortedMap
  private queue: { ops: KvOp[]; resolve: () => void }[] = []
  private landing = false
  private paused = false
  /** Batches landed so far, and how many commits each grouped (for group-commit tests). */
  readonly landed: number[] = []

  /** `land` runs a landing later: the next macrotask by default, an event of the simulator's
   * virtual time in a simulation. */
  constructor(
    initial: SortedMap = new SortedMap(),
    private readonly land: (task: () => void) => void = (task) => setImmediate(task),
  ) {
    this.visible = initial.copy()
    this.durable = initial.copy()
  }

  get(key: string): Uint8Array | undefined {
    return this.visible.get(key)
  }

  getMany(keys: readonly string[]): (Uint8Array | undefined)[] {
    return keys.map((key) => this.visible.get(key))
  }

  scan(range: KvRange): [string, Uint8Array][] {
    assert(range.gte === undefined || range.gt === undefined, 'scan takes gte or gt, not both')
    assert(Number.isInteger(range.limit) && range.limit >= 0)
    return this.visible.scan(range)
  }

  scanText(range: KvRange): [string, string][] {
    return this.scan(range).map(([key, value]) => [key, Buffer.from(value).toString('utf8')])
  }

  commit(ops: readonly KvOp[]): Promise<void> {
    // Values are copied as the real adapter's are (it clones them to its writer thread).
    const owned = ops.map((op): KvOp =>
      op.type === 'put' ? { ...op, value: new Uint8Array(op.value) } : op,
    )
    for (const op of owned) this.visible.apply(op)
    return new Promise((resolve) => {
      this.queue.push({ ops: owned, resolve })
      this.schedule()
    })
  }

  /** Holds landings: commits stay visible but not durable until `resume`. */
  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    this.schedule()
  }

  get pendingCommits(): number {
    return this.queue.length
  }

  /** What a crash now would leave: only landed batches (landing later by `land`, when given). */
  durableCopy(land?: (task: () => void) => void): MemoryKv {
    return new MemoryKv(this.durable, land ?? this.land)
  }

  get durableSize(): number {
    return this.durable.size
  }

  private schedule(): void {
    if (this.landing || this.paused || this.queue.length === 0) return
    this.landing = true
    // One macrotask later, every commit queued by then lands as one group.
    this.land(() => {
      this.landing = false
      if (this.paused) return
      const group = this.queue
      this.queue = []
      for (const commit of group) for (const op of commit.ops) this.durable.apply(op)
      this.landed.push(group.length)
      for (const commit of group) commit.resolve()
      this.schedule()
    })
  }
}

// ---------------------------------------------------------------------------------------------
// In-memory blob files

const BLOB_ID_PATTERN = /^[0-9a-f]{16,128}$/

function missing(what: string): Error {
  return Object.assign(new Error(`ENOENT: ${what}`), { code: 'ENOENT' })
}

export interface TemporaryFile {
  chunks: Uint8Array[]
  synced: boolean
}

/** A data volume that always has room, for blob files on disk in tests not about space. */
export const ROOMY_VOLUME: BlobSpace = {
  admits: () => Promise.resolve(true),
  spend: () => true,
  exhausted: () => undefined,
}

export class MemoryBlobs implements BlobFiles {
  readonly temporary = new Map<string, TemporaryFile>()
  readonly permanent = new Map<string, Uint8Array>()
  /** Readers opened and not yet closed. */
  openReaders = 0

  create(id: string): Promise<BlobWriter> {
    assert(BLOB_ID_PATTERN.test(id), 'bad blob id')
    assert(!this.temporary.has(id) && !this.permanent.has(id), 'blob id reused')
    const file: TemporaryFile = { chunks: [], synced: false }
    this.temporary.set(id, file)
    let finished = false
    return Promise.resolve({
      write: (chunk) => {
        assert(!finished, 'write after commit or discard')
        file.chunks.push(new Uint8Array(chunk))
        return Promise.resolve()
      },
      commit: () => {
        assert(!finished, 'commit twice')
        finished = true
        file.synced = true
        return Promise.resolve()
      },
      discard: () => {
        finished = true
        if (this.temporary.get(id) === file) this.temporary.delete(id)
        return Promise.resolve()
      },
    })
  }

  promote(id: string): Promise<void> {
    const file = this.temporary.get(id)
    if (file === undefined) {
      return this.permanent.has(id) ? Promise.resolve() : Promise.reject(missing(`tmp/${id}`))
    }
    this.temporary.delete(id)
    this.permanent.set(id, Buffer.concat(file.chunks))
    return Promise.resolve()
  }

  open(id: string): Promise<BlobReader | undefined> {
    const temporary = this.temporary.get(id)
    const bytes = this.permanent.get(id) ?? (temporary && Buffer.concat(temporary.chunks))
    if (bytes === undefined) return Promise.resolve(undefined)
    this.openReaders++
    let closed = false
    return Promise.resolve({
      size: bytes.byteLength,
      read: (offset, length) => {
        assert(!closed, 'read after close')
        return Promise.resolve(new Uint8Array(bytes.subarray(offset, offset + length)))
      },
      close: () => {
        if (!closed) this.openReaders--
        closed = true
        return Promise.resolve()
      },
    })
  }

  remove(id: string): Promise<void> {
    this.permanent.delete(id)
    this.temporary.delete(id)
    return Promise.resolve()
  }

  listTemporary(): Promise<string[]> {
    return Promise.resolve([...this.temporary.keys()].sort())
  }

  removeTemporary(id: string): Promise<void> {
    this.temporary.delete(id)
    return Promise.resolve()
  }

  /** Set to make the volume full: object writes are then refused. */
  full = false

  admits(): Promise<boolean> {
    return Promise.resolve(!this.full)
  }

  /** Flips one bit of a permanent file (a disk fault the scrubber and GET must catch). */
  corrupt(id: string, offset = 0): void {
    const bytes = this.permanent.get(id)
    assert(bytes !== undefined && offset < bytes.byteLength)
    bytes[offset] = (bytes[offset] ?? 0) ^ 1
  }

  /** What a crash now would leave: every file as it is (unsynced bytes may survive too). */
  afterCrash(): MemoryBlobs {
    const twin = new MemoryBlobs()
    for (const [id, file] of this.temporary) {
      twin.temporary.set(id, { chunks: [...file.chunks], synced: file.synced })
    }
    for (const [id, bytes] of this.permanent) twin.permanent.set(id, bytes)
    return twin
  }
}

// ---------------------------------------------------------------------------------------------
// Byte streams

export type StreamOutcome =
  | { ended: true; bytes: Uint8Array; trailers: Record<string, string> }
  | { ended: false; bytes: Uint8Array; code: ErrorCode; detail: string }

interface Waiters {
  wake(): void
  wait(): Promise<void>
}

function waiters(): Waiters {
  let pending: (() => void)[] = []
  return {
    wake() {
      const woken = pending
      pending = []
      for (const resolve of woken) resolve()
    },
    wait() {
      return new Promise((resolve) => pending.push(resolve))
    },
  }
}

/** One in-memory stream; the test holds this object, the actor gets `handle` (the stream itself,
 * so any fake context can wrap it). */
export class MemoryStream {
  get handle(): StreamHandle {
    return this
  }
  private readonly queue: Uint8Array[] = []
  private readonly sent: Uint8Array[] = []
  private trailerValues: Record<string, string> | null = null
  private md5Hex: string | undefined = undefined
  private abortedWith: { code: ErrorCode; detail: string } | null = null
  private demanded: { start: number; end: number } | null | undefined = undefined
  /** Set when the receiving side cancelled (the actor's source, or the test reading a get). */
  cancelled: { code: ErrorCode; detail: string } | null = null
  /** Chunks sent and not yet read by the source: a refused put's body stays unread. */
  get unread(): number {
    return this.queue.length
  }
  private readonly changed = waiters()

  // Test side, feeding a put.
  push(chunk: Uint8Array): void {
    assert(this.trailerValues === null && this.abortedWith === null, 'push after end')
    this.queue.push(new Uint8Array(chunk))
    this.changed.wake()
  }

  end(trailers: Record<string, string> = {}, md5Hex?: string): void {
    this.trailerValues = trailers
    this.md5Hex = md5Hex
    this.changed.wake()
  }

  abort(code: ErrorCode, detail: string): void {
    this.abortedWith = { code, detail }
    this.changed.wake()
  }

  // Test side, reading a get.
  request(start: number, end: number): void {
    this.demanded = { start, end }
    this.changed.wake()
  }

  cancel(code: ErrorCode = 'internal', detail = 'receiver cancelled'): void {
    this.cancelled = { code, detail }
    if (this.demanded === undefined) this.demanded = null
    this.changed.wake()
  }

  /** Resolves once the sender ended or aborted, with every byte it sent. */
  async received(): Promise<StreamOutcome> {
    while (this.trailerValues === null && this.abortedWith === null) await this.changed.wait()
    const bytes = Buffer.concat(this.sent)
    if (this.abortedWith !== null) return { ended: false, bytes, ...this.abortedWith }
    return { ended: true, bytes, trailers: this.trailerValues ?? {} }
  }

  // Actor side.
  asSource(): ByteSource {
    return {
      next: async () => {
        for (;;) {
          const chunk = this.queue.shift()
          if (chunk !== undefined) return chunk
          if (this.abortedWith !== null) {
            throw new ServiceError(this.abortedWith.code, this.abortedWith.detail)
          }
          if (this.cancelled !== null) throw new ServiceError(this.cancelled.code, 'cancelled')
          if (this.trailerValues !== null) return null
          await this.changed.wait()
        }
      },
      trailers: () => this.trailerValues ?? {},
      md5: () => this.md5Hex,
      release: () => undefined,
      request: (start, end) => this.request(start, end),
      cancel: (code, detail) => this.cancel(code, detail),
    }
  }

  asSink(): ByteSink {
    return {
      write: (chunk) => {
        if (this.cancelled !== null) {
          return Promise.reject(new ServiceError(this.cancelled.code, this.cancelled.detail))
        }
        const copy = new Uint8Array(chunk)
        this.sent.push(copy)
        // An actor that holds both ends (ctx.openStream) reads what it wrote.
        this.queue.push(copy)
        this.changed.wake()
        return Promise.resolve()
      },
      buffer: () => new Uint8Array(STREAM_CHUNK_BYTES),
      giveBack: () => undefined,
      end: (trailers = {}, md5Hex) => {
        if (this.trailerValues === null && this.abortedWith === null) this.end(trailers, md5Hex)
      },
      abort: (code, detail) => {
        if (this.trailerValues === null && this.abortedWith === null) this.abort(code, detail)
      },
      demand: async () => {
        while (this.demanded === undefined) {
          // A sender that ended or aborted itself will not be asked for anything any more.
          if (this.trailerValues !== null || this.abortedWith !== null) return null
          await this.changed.wait()
        }
        return this.demanded
      },
    }
  }
}

export function memoryStream(): MemoryStream {
  return new MemoryStream()
}

// ---------------------------------------------------------------------------------------------
// The context

export interface LogEntry {
  level: 'info' | 'warn' | 'error' | 'notice'
  fields: Record<string, unknown>
  message: string
}

/** Answers a call; `instance` (from 1) tells which instance of `to` a `callEach` reached. */
export type CallHandler = (
  to: ActorName,
  msg: { kind: string } & Request,
  instance: number,
) => Promise<Result<unknown>> | Result<unknown>

/** Answers a call to another node (ctx.peers); `stream` is the handle of openWrite's body (a
 * memory stream, its sink the one openWrite returns) or the one given to callForBody,
 * `deadlineMs` the call's own. */
export type PeerCallHandler = (
  to: PeerTarget,
  method: PeerMethod,
  body: object,
  stream: StreamHandle | undefined,
  deadlineMs: number,
) => Promise<Result<unknown>> | Result<unknown>

export interface FakeContext extends Context {
  readonly kv: MemoryKv
  readonly blobs: MemoryBlobs
  readonly logs: LogEntry[]
  /** Moves the clock and fires the timers that fall due, in order. */
  advance(ms: number): void
  setNow(ms: number): void
  onCall(handler: CallHandler | null): void
  onPeerCall(handler: PeerCallHandler | null): void
}

export interface FakeContextOptions {
  self?: ActorName
  /** A store shard's locks (default: those of a store that runs alone). */
  shardLocks?: ShardLocks
  kv?: MemoryKv
  blobs?: MemoryBlobs
  nowMs?: number
  /** A clock shared with other contexts (then `nowMs` is not used). */
  clock?: ManualClock
  seed?: number
  config?: Record<string, string>
  /** How many instances of a role `callEach` reaches (1 when not given). */
  instances?: Partial<Record<ActorName, number>>
}

/** 2023-11-14T22:13:20Z: a fixed, realistic start for the clock. */
const DEFAULT_NOW_MS = 1_700_000_000_000

/** A clock that moves only when told; timers from `after` fire, in order, inside `advance`. */
export class ManualClock {
  private readonly timers: { dueMs: number; order: number; task: () => void }[] = []
  private timerOrder = 0

  constructor(public nowMs: number = DEFAULT_NOW_MS) {}

  after(ms: number, task: () => void): () => void {
    const timer = { dueMs: this.nowMs + ms, order: this.timerOrder++, task }
    this.timers.push(timer)
    return () => {
      const at = this.timers.indexOf(timer)
      if (at >= 0) this.timers.splice(at, 1)
    }
  }

  advance(ms: number): void {
    assert(ms >= 0)
    const until = this.nowMs + ms
    for (;;) {
      this.timers.sort((left, right) => left.dueMs - right.dueMs || left.order - right.order)
      const next = this.timers[0]
      if (next === undefined || next.dueMs > until) break
      this.timers.shift()
      this.nowMs = next.dueMs
      next.task()
    }
    this.nowMs = until
  }
}

/** SHA-256 in counter mode over a seed: deterministic, and different on every call. */
export function seededRandomBytes(seed: number): (length: number) => Uint8Array {
  let counter = 0
  return (length) => {
    const out = new Uint8Array(length)
    for (let filled = 0; filled < length; filled += 32) {
      const block = createHash('sha256').update(`${seed}:${counter++}`).digest()
      out.set(block.subarray(0, Math.min(32, length - filled)), filled)
    }
    return out
  }
}

export function memoryLog(logs: LogEntry[]): Logger {
  const at =
    (level: LogEntry['level']) =>
    (fields: Record<string, unknown>, message: string): void => {
      logs.push({ level, fields, message })
    }
  const notice = (text: string): void => {
    logs.push({ level: 'notice', fields: {}, message: text })
  }
  return { info: at('info'), warn: at('warn'), error: at('error'), notice }
}

function streamOf(handle: StreamHandle): MemoryStream {
  assert(handle instanceof MemoryStream, 'stream handle not made by memoryStream()')
  return handle
}

export function fakeContext(options: FakeContextOptions = {}): FakeContext {
  const clock = options.clock ?? new ManualClock(options.nowMs)
  const logs: LogEntry[] = []
  let handler: CallHandler | null = null
  let peerHandler: PeerCallHandler | null = null
  const askPeer = <T>(
    to: PeerTarget,
    method: PeerMethod,
    body: object,
    deadlineMs: number,
    stream?: StreamHandle,
  ): Promise<Result<T>> => {
    if (peerHandler === null) {
      return Promise.resolve(fail<T>('unavailable', `no peer at ${to.grpcAddr}`))
    }
    const answer = peerHandler(to, method, body, stream, deadlineMs)
    return Promise.resolve(answer).then((result) => result as Result<T>)
  }
  return {
    self: options.self ?? 'replica-store',
    shardLocks: options.shardLocks ?? soleShardLocks(),
    now: () => clock.nowMs,
    randomBytes: seededRandomBytes(options.seed ?? 1),
    call<T>(to: ActorName, msg: { kind: string } & Request): Promise<Result<T>> {
      if (handler === null) return Promise.resolve(fail<T>('unavailable', `${to} is not wired`))
      return Promise.resolve(handler(to, msg, 1) as Result<T>)
    },
    callEach<T>(to: ActorName, msg: { kind: string } & Request): Promise<Result<T>[]> {
      const answer = handler
      if (answer === null) return Promise.resolve([])
      const count = options.instances?.[to] ?? 1
      const instances = Array.from({ length: count }, (_, i) => i + 1)
      return Promise.all(instances.map(async (n) => (await answer(to, msg, n)) as Result<T>))
    },
    after: (ms, task) => clock.after(ms, task),
    kv: options.kv ?? new MemoryKv(),
    blobs: options.blobs ?? new MemoryBlobs(),
    // The real argon2id of the password pool's task, run in this thread.
    peers: {
      call: (to, method, body, deadlineMs) => askPeer(to, method, body, deadlineMs),
      openWrite<T>(to: PeerTarget, method: PeerMethod, body: object, deadlineMs: number) {
        const stream = memoryStream()
        const answer = askPeer<T>(to, method, body, deadlineMs, stream.handle)
        // A memory stream's sink copies each chunk it is given, as the transport's does.
        return { sink: { ...stream.asSink(), copies: true as const }, answer }
      },
      callForBody: (to, method, body, sink, deadlineMs) =>
        askPeer(to, method, body, deadlineMs, sink),
    },
    passwords: {
      hash: async (password, salt) =>
        String(await runPasswordTask({ kind: 'hash', password, salt })),
      verify: async (storedHash, password) =>
        (await runPasswordTask({ kind: 'verify', storedHash, password })) === true,
    },
    openStream() {
      const created = memoryStream()
      return [created.handle, created.handle]
    },
    source: (handle) => streamOf(handle).asSource(),
    sink: (handle) => streamOf(handle).asSink(),
    log: memoryLog(logs),
    config: options.config ?? {},
    logs,
    advance: (ms) => clock.advance(ms),
    setNow(ms) {
      clock.nowMs = ms
    },
    onCall(next) {
      handler = next
    },
    onPeerCall(next) {
      peerHandler = next
    },
  }
}
