/** @module RocksKv: the KvStore contract on @nxtedition/rocksdb, with group commit.
 *
 * Reads are synchronous (MultiGet and a native iterator driven with its synchronous `nextv`) and
 * merge an in-memory overlay of every op handed to `commit` whose batch is not yet durable, so a
 * caller sees its own writes at once and can prepare the next batch from them.
 *
 * The binding's batch write is synchronous: a `sync: true` write would block this thread for an
 * fsync (the store's whole event loop, GET streams included). So synced writes run on a small
 * writer thread that shares the open database through the binding's native handle (RocksDB is
 * thread-safe). While one write is in flight, further commits queue; when it lands, the queue
 * goes out as ONE synced batch (group commit), bounded by BATCH_OPS_MAX and BATCH_BYTES_MAX:
 * commits past the bound wait for the next write. Each commit resolves once its ops are durable.
 * The queue itself is bounded by the callers: the store awaits every commit it starts and handles
 * at most MAILBOX_DEPTH_MAX (512) requests at once, each with one commit outstanding.
 *
 * A failed write poisons the store: its commits and all queued ones reject, the overlay is dropped
 * (reads show what is durable) and every later commit rejects, until the owner reopens it.
 *
 * Except a write that failed for lack of space: RocksDB then stops writing by itself (a "hard"
 * background error: the batch is not in the memtable, and it flushes the memtables before it
 * takes writes again, which retires the WAL holding the failed record) and resumes once its
 * SstFileManager sees a write buffer's worth of free space (it looks every 5 s). Those commits
 * and the queued ones (prepared from reads that saw them) reject with `insufficient_storage`,
 * the overlay is dropped, and later commits go to RocksDB, which refuses them the same way until
 * it has resumed. Reads go on meanwhile. */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { KvOp, KvRange, KvReader, KvStore } from '../protocol/actor.js'
import { ServiceError } from '../protocol/errors.js'

/** Ops in one synced batch. 512 concurrent puts of about 8 ops each fit in one write. */
export const BATCH_OPS_MAX = 4096
/** Key and value bytes in one synced batch: 256 inline bodies of 64 KiB. A single commit larger
 * than either bound is written alone. */
export const BATCH_BYTES_MAX = 16 * 1024 * 1024
/** RocksDB's status for ENOSPC (and for writes refused until it resumed from one). */
const NO_SPACE_PATTERN = /No space left on device|NoSpace/
const MIB = 1024 * 1024
/** RocksDB's memtable budget at most, of four write buffers (8 MiB each); the data volume sizes it
 * to the volume (runtime/data-volume.ts). */
export const METADATA_MEMTABLE_BYTES_MAX = 32 * MIB
/** Write buffers a budget is cut into, and how many the binding's level-style options let RocksDB
 * hold before it stalls writes (`max_write_buffer_number`): while flushes lag (a busy machine),
 * memtables reach one and a half budgets. */
const WRITE_BUFFERS_PER_BUDGET = 4
const WRITE_BUFFERS_MAX = 6

/** The most a budget's memtables hold before RocksDB stalls writes: a flush may have that much to
 * write, while the WAL files still hold the same bytes. */
export function memtablesMaxBytes(memtableBytes: number): number {
  return (memtableBytes / WRITE_BUFFERS_PER_BUDGET) * WRITE_BUFFERS_MAX
}
/** What RocksDB preallocates for a new MANIFEST (its default `manifest_preallocation_size`, which
 * the binding does not set): on tmpfs, and any file system with fallocate, the bytes are taken. */
const MANIFEST_PREALLOCATION_BYTES = 4 * MIB
/** A new WAL is preallocated 1.1 write buffers at a time (RocksDB's GetWalPreallocateBlockSize). */
const WAL_PREALLOCATION_RATIO = 1.1
/** Rows fetched per native call while scanning. */
const SCAN_ROWS_PER_CALL = 1024

export interface RocksKv extends KvStore {
  /** Commits made and synced batches written so far: their ratio is the group-commit factor. */
  readonly counts: { commits: number; batches: number }
  /** Waits for queued commits to land, stops the writer thread and closes the database. */
  close(): Promise<void>
}

/** The part of the binding's iterator we drive (abstract-level's public API is callback-only). */
interface NativeIterator {
  /** Keys and values alternate, each in the encoding the iterator was opened with. */
  _nextvSync(size: number, options: object): { rows: (Buffer | string)[]; finished: boolean }
  close(callback: () => void): void
}
type RowEncoding = 'buffer' | 'utf8'
interface IteratorOptions {
  gte?: Buffer
  gt?: Buffer
  lt: Buffer
  limit: number
  keyEncoding: RowEncoding
  valueEncoding: RowEncoding
}
interface RocksLevelDb {
  open(options: {
    createIfMissing: boolean
    compaction?: string
    memtableMemoryBudget?: number
  }): Promise<void>
  close(): Promise<void>
  readonly handle: bigint
  _getManySync(keys: Buffer[], options?: object): (Buffer | null | undefined)[]
  iterator(options: IteratorOptions): NativeIterator
}
type RocksLevelClass = new (location: string | bigint, options: object) => RocksLevelDb

const require = createRequire(import.meta.url)

/** The writer thread, evaluated as a CommonJS script: it attaches to the database by handle (the
 * binding neither closes nor owns a database attached that way) and writes each batch it is given
 * with sync, answering with the batch's number. */
const WRITER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const binding = require(workerData.bindingPath)
const database = binding.db_init(workerData.handle)
parentPort.on('message', (message) => {
  const batch = binding.batch_init()
  try {
    for (const op of message.ops) {
      if (op.value === undefined) binding.batch_del(batch, op.key, {})
      else binding.batch_put(batch, op.key, op.value, {})
    }
    binding.batch_write(database, batch, { sync: true })
    parentPort.postMessage({ batch: message.batch, error: null })
  } catch (error) {
    parentPort.postMessage({ batch: message.batch, error: String(error && error.stack || error) })
  } finally {
    binding.batch_clear(batch)
  }
})
`

interface WireOp {
  key: Uint8Array
  value?: Uint8Array
}
interface WriterReply {
  batch: number
  error: string | null
}
interface OverlayEntry {
  encoded: Buffer
  /** null: deleted. */
  value: Uint8Array | null
  /** Number of the commit that wrote it; a landed batch drops entries no later commit replaced. */
  commit: number
}
interface PendingCommit {
  number: number
  keys: string[]
  ops: WireOp[]
  bytes: number
  resolve: () => void
  reject: (error: Error) => void
}

export interface RocksKvOptions {
  /** Called when a write failed for lack of space. */
  onNoSpace?: () => void
  /** The memtable budget (four write buffers); METADATA_MEMTABLE_BYTES_MAX when not given. */
  memtableBytes?: number
  /** The writer thread's name: `kv-writer`, numbered as its store shard is when there are
   * several. */
  writerName?: string
}

/** The room RocksDB writes in to open: a new MANIFEST and a new WAL (both preallocated), and the
 * recovery's flush of what the old WALs hold and no SST does yet, at most the memtables' most;
 * OPTIONS and the like are small. */
export function openRoomBytes(memtableBytes: number): number {
  const walPreallocation = Math.ceil(
    (memtableBytes / WRITE_BUFFERS_PER_BUDGET) * WAL_PREALLOCATION_RATIO,
  )
  return MANIFEST_PREALLOCATION_BYTES + walPreallocation + memtablesMaxBytes(memtableBytes)
}

/** The metadata database, opened by the node's runtime, which owns it: actors' threads attach to
 * it by `handle` (attachRocksKv, attachKvReader), and no thread's death closes it or frees
 * memory another thread reads. */
export interface MetadataDb {
  readonly handle: bigint
  close(): Promise<void>
}

function rocksLevel(): RocksLevelClass {
  return (require('@nxtedition/rocksdb') as { RocksLevel: RocksLevelClass }).RocksLevel
}

export async function openMetadataDb(dir: string, memtableBytes?: number): Promise<MetadataDb> {
  const db = new (rocksLevel())(dir, {})
  await db.open({
    createIfMissing: true,
    // Level compaction with a memtable budget of at most 32 MiB (8 MiB write buffers) instead of
    // the default 64 MiB buffers: small objects live inline in RocksDB and the node's memory must
    // stay bounded.
    compaction: 'level',
    memtableMemoryBudget: memtableBytes ?? METADATA_MEMTABLE_BYTES_MAX,
  })
  return { handle: db.handle, close: () => db.close() }
}

/** Attaches to an open database by its handle: the binding neither closes nor owns a database
 * attached that way. */
async function attach(handle: bigint): Promise<RocksLevelDb> {
  const db = new (rocksLevel())(handle, {})
  // Opening an attached database only reads its column families.
  await db.open({ createIfMissing: false })
  return db
}

/** The store's KvStore on the runtime's database; its close stops the writer thread. */
export function attachRocksKv(handle: bigint, options: RocksKvOptions = {}): Promise<RocksKv> {
  return startKv(handle, options, null)
}

/** A KvStore with its writer thread; `owned`, the database it closes with it. */
async function startKv(
  handle: bigint,
  options: RocksKvOptions,
  owned: MetadataDb | null,
): Promise<RocksKv> {
  const writer = new Worker(WRITER_SOURCE, {
    eval: true,
    name: options.writerName ?? 'kv-writer',
    // It only unpacks batches: V8's default young generation let it hold far more under load.
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
    workerData: { handle, bindingPath: require.resolve('@nxtedition/rocksdb/binding.js') },
  })
  writer.unref()
  const onNoSpace = options.onNoSpace ?? (() => undefined)
  return new RocksKvStore(await attach(handle), writer, onNoSpace, owned)
}

/** Reads of what is durable in the runtime's database, for threads that never write (a single
 * node's ingress serves small objects from it). */
export async function attachKvReader(handle: bigint): Promise<KvReader> {
  return new RocksKvReader(await attach(handle))
}

/** A database of the caller's own, opened and closed with its KvStore (tools and tests). */
export async function openRocksKv(dir: string, options: RocksKvOptions = {}): Promise<RocksKv> {
  const owned = await openMetadataDb(dir, options.memtableBytes)
  return startKv(owned.handle, options, owned)
}

/** Point reads and scans of what the database holds. The store's subclass adds its overlay of
 * commits not yet durable. */
class RocksKvReader implements KvReader {
  constructor(protected readonly db: RocksLevelDb) {}

  /** Ops handed to commit and not yet durable: none for a reader. */
  protected overlayOf(_key: string): OverlayEntry | undefined {
    return undefined
  }

  protected overlayIn(_bounds: EncodedRange): OverlayEntry[] {
    return []
  }

  protected checkOpen(): void {}

  get(key: string): Uint8Array | undefined {
    return this.getMany([key])[0]
  }

  getMany(keys: readonly string[]): (Uint8Array | undefined)[] {
    this.checkOpen()
    const result: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(keys.length)
    const missing: Buffer[] = []
    const missingAt: number[] = []
    keys.forEach((key, index) => {
      const entry = this.overlayOf(key)
      if (entry !== undefined) {
        result[index] = entry.value ?? undefined
      } else {
        missing.push(Buffer.from(key, 'utf8'))
        missingAt.push(index)
      }
    })
    if (missing.length > 0) {
      const values = this.db._getManySync(missing)
      assert.equal(values.length, missing.length)
      values.forEach((value, position) => {
        // null means RocksDB aborted or timed out the read: never mistake that for "absent".
        if (value === null) throw new Error('rocks-kv: read aborted')
        const index = missingAt[position]
        assert(index !== undefined)
        result[index] = value
      })
    }
    return result
  }

  scan(range: KvRange): [string, Uint8Array][] {
    return this.scanAs(range, BUFFER_ROWS)
  }

  /** The binding makes strings natively, far cheaper than a Buffer per key and value. */
  scanText(range: KvRange): [string, string][] {
    return this.scanAs(range, TEXT_ROWS)
  }

  protected scanAs<V, K extends V & (Buffer | string)>(
    range: KvRange,
    rows: RowForm<K, V>,
  ): [string, V][] {
    this.checkOpen()
    assert(range.gte === undefined || range.gt === undefined, 'scan takes gte or gt, not both')
    assert(Number.isInteger(range.limit) && range.limit >= 0)
    if (range.limit === 0) return []
    const bounds = encodeRange(range)
    const pending = this.overlayIn(bounds)
    // Each overlay entry can hide or replace at most one stored row, so this many stored rows
    // always cover the first `limit` entries of the merged view.
    const stored = this.scanStored<K>(bounds, range.limit + pending.length, rows.encoding)
    return mergeRows(stored, pending, range.limit, rows)
  }

  /** Stored rows as the iterator gives them: keys and values both in `encoding`. */
  protected scanStored<K extends Buffer | string>(
    bounds: EncodedRange,
    limit: number,
    encoding: RowEncoding,
  ): [K, K][] {
    const options: IteratorOptions = {
      lt: bounds.lt,
      limit,
      keyEncoding: encoding,
      valueEncoding: encoding,
    }
    if (bounds.gte !== undefined) options.gte = bounds.gte
    if (bounds.gt !== undefined) options.gt = bounds.gt
    const iterator = this.db.iterator(options)
    const rows: [K, K][] = []
    try {
      for (;;) {
        const size = Math.min(SCAN_ROWS_PER_CALL, limit - rows.length)
        const batch = iterator._nextvSync(size, {})
        for (let index = 0; index + 1 < batch.rows.length; index += 2) {
          rows.push([batch.rows[index] as K, batch.rows[index + 1] as K])
        }
        if (batch.finished || rows.length >= limit) break
      }
    } finally {
      iterator.close(() => undefined)
    }
    return rows
  }
}

class RocksKvStore extends RocksKvReader implements RocksKv {
  private readonly overlay = new Map<string, OverlayEntry>()
  private readonly queue: PendingCommit[] = []
  private inFlight: { number: number; commits: PendingCommit[] } | null = null
  private commitsStarted = 0
  private batchesStarted = 0
  private failure: Error | null = null
  private closed = false
  private drained: (() => void) | null = null

  constructor(
    db: RocksLevelDb,
    private readonly writer: Worker,
    private readonly onNoSpace: () => void,
    /** The database, when this store opened it itself (openRocksKv): its close closes it. */
    private readonly owned: MetadataDb | null,
  ) {
    super(db)
    writer.on('message', (reply: WriterReply) => this.landed(reply))
    writer.on('error', (error) => this.poison(error))
    writer.on('exit', (code) => {
      if (!this.closed) this.poison(new Error(`rocks-kv writer thread exited with ${code}`))
    })
  }

  get counts(): { commits: number; batches: number } {
    return { commits: this.commitsStarted, batches: this.batchesStarted }
  }

  commit(ops: readonly KvOp[]): Promise<void> {
    assert(!this.closed, 'rocks-kv is closed')
    if (this.failure !== null) return Promise.reject(this.failure)
    const number = ++this.commitsStarted
    const keys: string[] = []
    const wire: WireOp[] = []
    let bytes = 0
    for (const op of ops) {
      const encoded = Buffer.from(op.key, 'utf8')
      const value = op.type === 'put' ? op.value : null
      bytes += encoded.length + (value?.byteLength ?? 0)
      this.overlay.set(op.key, { encoded, value, commit: number })
      keys.push(op.key)
      wire.push(value === null ? { key: encoded } : { key: encoded, value })
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ number, keys, ops: wire, bytes, resolve, reject })
      this.flush()
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    if (this.inFlight !== null || this.queue.length > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve
      })
    }
    this.closed = true
    await this.writer.terminate()
    this.overlay.clear()
    await this.owned?.close()
  }

  /** Starts the next synced write with as many queued commits as the bounds allow. */
  private flush(): void {
    if (this.inFlight !== null || this.failure !== null) return
    if (this.queue.length === 0) {
      this.drained?.()
      this.drained = null
      return
    }
    const commits: PendingCommit[] = []
    let opsCount = 0
    let bytes = 0
    for (const next of this.queue) {
      const fits =
        opsCount + next.ops.length <= BATCH_OPS_MAX && bytes + next.bytes <= BATCH_BYTES_MAX
      if (commits.length > 0 && !fits) break
      commits.push(next)
      opsCount += next.ops.length
      bytes += next.bytes
    }
    this.queue.splice(0, commits.length)
    const number = ++this.batchesStarted
    this.inFlight = { number, commits }
    const ops = commits.flatMap((commit) => commit.ops)
    this.writer.ref()
    this.writer.postMessage({ batch: number, ops })
  }

  private landed(reply: WriterReply): void {
    const batch = this.inFlight
    if (batch === null || this.failure !== null) return
    assert.equal(reply.batch, batch.number)
    this.inFlight = null
    this.writer.unref()
    if (reply.error !== null && NO_SPACE_PATTERN.test(reply.error)) {
      this.refuseForSpace(batch.commits, reply.error)
      return
    }
    if (reply.error !== null) {
      this.poison(new Error(`rocks-kv: synced write failed: ${reply.error}`), batch.commits)
      return
    }
    const last = batch.commits[batch.commits.length - 1]?.number ?? 0
    for (const commit of batch.commits) {
      for (const key of commit.keys) {
        const entry = this.overlay.get(key)
        // A later commit still in the queue owns the entry; it leaves when that one lands.
        if (entry !== undefined && entry.commit <= last) this.overlay.delete(key)
      }
    }
    for (const commit of batch.commits) commit.resolve()
    this.flush()
  }

  /** The batch did not land; neither may the commits queued behind it (see the module comment). */
  private refuseForSpace(failed: PendingCommit[], detail: string): void {
    const error = new ServiceError('insufficient_storage', `rocks-kv: ${detail.split('\n')[0]}`)
    this.overlay.clear()
    for (const commit of [...failed, ...this.queue.splice(0)]) commit.reject(error)
    this.onNoSpace()
    this.flush()
  }

  private poison(error: Error, inFlight: PendingCommit[] = this.inFlight?.commits ?? []): void {
    if (this.failure !== null) return
    this.failure = error
    this.inFlight = null
    this.overlay.clear()
    for (const commit of [...inFlight, ...this.queue.splice(0)]) commit.reject(error)
    this.drained?.()
    this.drained = null
  }

  protected override checkOpen(): void {
    assert(!this.closed, 'rocks-kv is closed')
  }

  protected override overlayOf(key: string): OverlayEntry | undefined {
    return this.overlay.get(key)
  }

  /** Overlay entries inside the range, in key order. The overlay holds only ops not yet durable,
   * a few thousand at most, so a pass over it costs less than the scan it joins. */
  protected override overlayIn(bounds: EncodedRange): OverlayEntry[] {
    const hits: OverlayEntry[] = []
    for (const entry of this.overlay.values()) {
      if (inRange(entry.encoded, bounds)) hits.push(entry)
    }
    return hits.sort((left, right) => Buffer.compare(left.encoded, right.encoded))
  }
}

interface EncodedRange {
  gte?: Buffer
  gt?: Buffer
  lt: Buffer
}

function encodeRange(range: KvRange): EncodedRange {
  const bounds: EncodedRange = { lt: Buffer.from(range.lt, 'utf8') }
  if (range.gte !== undefined) bounds.gte = Buffer.from(range.gte, 'utf8')
  if (range.gt !== undefined) bounds.gt = Buffer.from(range.gt, 'utf8')
  return bounds
}

function inRange(key: Buffer, bounds: EncodedRange): boolean {
  if (Buffer.compare(key, bounds.lt) >= 0) return false
  if (bounds.gte !== undefined && Buffer.compare(key, bounds.gte) < 0) return false
  if (bounds.gt !== undefined && Buffer.compare(key, bounds.gt) <= 0) return false
  return true
}

/** How scanned rows come out. A stored value stays as the iterator gave it (in `encoding`); keys
 * become text, and overlay values (bytes) take the stored values' form. */
interface RowForm<K extends V, V> {
  encoding: RowEncoding
  keyBytes(key: K): Buffer
  keyText(key: K): string
  overlayValue(value: Uint8Array): V
}

const BUFFER_ROWS: RowForm<Buffer, Uint8Array> = {
  encoding: 'buffer',
  keyBytes: (key) => key,
  keyText: (key) => key.toString('utf8'),
  overlayValue: (value) => value,
}

const TEXT_ROWS: RowForm<string, string> = {
  encoding: 'utf8',
  keyBytes: (key) => Buffer.from(key, 'utf8'),
  keyText: (key) => key,
  overlayValue: (value) => Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString(),
}

/** Merges stored rows with overlay entries (which win on equal keys; deletions hide rows). */
function mergeRows<K extends V, V>(
  stored: [K, K][],
  pending: OverlayEntry[],
  limit: number,
  form: RowForm<K, V>,
): [string, V][] {
  const result: [string, V][] = []
  let storedAt = 0
  let pendingAt = 0
  while (result.length < limit) {
    const row = stored[storedAt]
    const entry = pending[pendingAt]
    if (row === undefined && entry === undefined) break
    const order =
      row === undefined
        ? 1
        : entry === undefined
          ? -1
          : Buffer.compare(form.keyBytes(row[0]), entry.encoded)
    if (order < 0 && row !== undefined) {
      result.push([form.keyText(row[0]), row[1]])
      storedAt++
      continue
    }
    if (order === 0) storedAt++
    pendingAt++
    if (entry?.value != null) {
      result.push([entry.encoded.toString('utf8'), form.overlayValue(entry.value)])
    }
  }
  return result
}
