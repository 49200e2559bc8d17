/** @module The data volume: how much room the file system of the data directory has left, and the
 * rule by which object writes are refused before it runs out, so that a full disk is an answer
 * (`insufficient_storage`, S3 507) rather than a crash.
 *
 * Room for object data = free space - the floor - the part of the reserve not held. The floor
 * stays free for what must go on when object writes stop: deletes, the metadata database's own
 * writes (WAL, memtable flushes, compactions) and what a look at the volume misses until the next.
 * The reserve is a file in the data directory holding the room the metadata database needs to
 * open (runtime/rocks-kv.ts `openRoomBytes`): it is deleted at start before the database opens,
 * so that a restart on a full volume finds that room, and written back once the database is open
 * and the floor stays free beside it. While the node runs it is deleted only when the database
 * itself found no room (it stops on a failed write and resumes by itself once it sees enough free
 * space). The rule counts the reserve as held whether it is or not, so deleting it never lets more
 * object data in. The memtable budget, the floor and the reserve follow the volume's size: on a
 * small volume a small budget, so that object data still has most of it.
 *
 * `DataVolume` runs in replica-store's thread: a look (statfs) every SAMPLE_INTERVAL_MS, and one
 * at once when the estimate (the last look less the blob bytes written since) comes near the edge
 * or a write failed with ENOSPC. A blob write may dig into the upper half of the floor (writes
 * admitted together, bodies of unknown size) but never into the lower half. The ingress reads the
 * same rule with `readVolumeStatus` for /health and /metrics. */
import { open, stat, statfs, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { VolumeStatus } from '../protocol/actor.js'
import { METADATA_MEMTABLE_BYTES_MAX, memtablesMaxBytes, openRoomBytes } from './rocks-kv.js'

const MIB = 1024 * 1024
/** The memtable budget's step: four write buffers of a whole MiB. */
const MEMTABLE_STEP_BYTES = 4 * MIB
/** The floor: 1% of the volume, at least the memtables' most (one and a half budgets) and at most
 * FLOOR_BYTES_MAX. Small objects live inline in the metadata database, and a flush writes its
 * memtables out while their WAL files still hold the same bytes. With half of the budget a run of
 * inline writes left too little for the flush, which then failed on every retry while nothing
 * could free space; with the budget, the same happened when flushes lagged on a busy machine. */
const FLOOR_BYTES_MAX = 256 * MIB
export const RESERVE_FILE = 'space.reserve'
/** The volume counts as full, and every object write is refused, once less room than this is left
 * (a write larger than the room is refused before that). */
export const FULL_ROOM_BYTES = MIB
/** How often the volume is looked at, and how old a look may be when a write asks for room. */
export const SAMPLE_INTERVAL_MS = 1_000
/** The reserve is written in chunks of this size. */
const RESERVE_CHUNK_BYTES = MIB
/** After the metadata database took the reserve, it is not written back for this long: RocksDB
 * refuses every write until it has resumed, which its SstFileManager decides every 5 s, and each
 * refusal asks for the reserve again (writing it back at once went round every look). */
const RESERVE_HOLD_OFF_MS = 30_000

/** The metadata database's memtable budget: a sixteenth of the volume in whole steps, at least
 * one step and at most METADATA_MEMTABLE_BYTES_MAX. A small volume gets small write buffers, and
 * with them a small floor and reserve. */
export function memtableBytes(sizeBytes: number): number {
  const steps = Math.floor(sizeBytes / 16 / MEMTABLE_STEP_BYTES)
  return Math.min(METADATA_MEMTABLE_BYTES_MAX, Math.max(1, steps) * MEMTABLE_STEP_BYTES)
}

export function floorBytes(sizeBytes: number): number {
  const memtables = memtablesMaxBytes(memtableBytes(sizeBytes))
  return Math.min(FLOOR_BYTES_MAX, Math.max(memtables, Math.floor(sizeBytes / 100)))
}

/** The reserve: the room the metadata database needs to open, in whole chunks. */
export function reserveBytes(sizeBytes: number): number {
  const room = openRoomBytes(memtableBytes(sizeBytes))
  return Math.ceil(room / RESERVE_CHUNK_BYTES) * RESERVE_CHUNK_BYTES
}

/** Deletes the reserve before the metadata database opens (its room to open) and answers the
 * database's memtable budget on this volume. The store's DataVolume writes the reserve back. */
export async function releaseReserveToOpen(dataDir: string): Promise<number> {
  const { sizeBytes } = await look(dataDir)
  await unlink(join(dataDir, RESERVE_FILE)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error
  })
  return memtableBytes(sizeBytes)
}

/** Bytes object writes may still take (negative past the edge); see the module comment. */
export function objectRoomBytes(sizeBytes: number, freeBytes: number, reserveHeld: number): number {
  const reserve = reserveBytes(sizeBytes)
  return freeBytes - floorBytes(sizeBytes) - (reserve - Math.min(reserveHeld, reserve))
}

/** The volume as the rule sees it, from a fresh look: for /health and /metrics. */
export async function readVolumeStatus(dataDir: string): Promise<VolumeStatus> {
  const [{ sizeBytes, freeBytes }, reserveHeld] = await Promise.all([
    look(dataDir),
    reserveSize(join(dataDir, RESERVE_FILE)),
  ])
  const room = objectRoomBytes(sizeBytes, freeBytes, reserveHeld)
  return { sizeBytes, freeBytes, full: room < FULL_ROOM_BYTES }
}

async function look(dir: string): Promise<{ sizeBytes: number; freeBytes: number }> {
  const stats = await statfs(dir)
  return { sizeBytes: stats.blocks * stats.bsize, freeBytes: stats.bavail * stats.bsize }
}

async function reserveSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size
  } catch {
    return 0
  }
}

/** Whether an error is the file system's "no space" (or the user's quota). */
export function isNoSpace(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code
  return code === 'ENOSPC' || code === 'EDQUOT'
}

interface Sample {
  sizeBytes: number
  freeBytes: number
  atMs: number
}

export interface VolumeLog {
  info(fields: Record<string, unknown>, message: string): void
  warn(fields: Record<string, unknown>, message: string): void
}

/** The count of bytes written that the store's shards share (DataVolume.open). */
export function createVolumeMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT)
}

export class DataVolume {
  /** Bytes every shard of the store handed to writes (a count in memory they share, shared by
   * none when the store runs alone), and its value when this shard last looked: the difference
   * is what the look cannot have seen yet, whichever shard admitted it. */
  private readonly written: BigInt64Array
  private writtenAtLook = 0n
  private reserveHeld: number
  /** False until the metadata database is open: the reserve is its room to open. */
  private databaseOpen = false
  /** The reserve is not written back before this (see RESERVE_HOLD_OFF_MS). */
  private holdOffUntilMs = 0
  private looking: Promise<void> | null = null
  private reserveWork: Promise<void> | null = null
  private closed = false
  private wasFull = false
  private readonly timer: NodeJS.Timeout
  private readonly reservePath: string

  /** Looks at the volume, once the runtime opened the metadata database. Of a sharded store,
   * shard 0 `keepsReserve`: the others only delete it when the database finds no
   * room (any shard's write may be the one that finds it), and look at its size, as the keeper
   * does, at every look. */
  static async open(
    dataDir: string,
    log: VolumeLog,
    shards: { keepsReserve: boolean; written: SharedArrayBuffer } = {
      keepsReserve: true,
      written: createVolumeMemory(),
    },
  ): Promise<DataVolume> {
    const { keepsReserve } = shards
    const reservePath = join(dataDir, RESERVE_FILE)
    const written = new BigInt64Array(shards.written)
    const before = Atomics.load(written, 0)
    const sample = { ...(await look(dataDir)), atMs: Date.now() }
    const held = await reserveSize(reservePath)
    // The runtime deleted the reserve before it opened the database (releaseReserveToOpen), which
    // outlives the store: a store that starts again keeps the reserve it finds.
    return new DataVolume(dataDir, log, sample, held, keepsReserve, written, before)
  }

  private constructor(
    private readonly dataDir: string,
    private readonly log: VolumeLog,
    private sample: Sample,
    reserveHeld: number,
    private readonly keepsReserve: boolean,
    written: BigInt64Array,
    writtenAtLook: bigint,
  ) {
    this.written = written
    this.writtenAtLook = writtenAtLook
    this.reservePath = join(dataDir, RESERVE_FILE)
    this.reserveHeld = reserveHeld
    this.timer = setInterval(() => void this.refresh(), SAMPLE_INTERVAL_MS)
    this.timer.unref()
  }

  /** The metadata database is open: the reserve is written back (in the background: a start
   * does not wait for its writes) once the floor stays free beside it. */
  databaseOpened(): void {
    this.databaseOpen = true
    void this.refresh()
  }

  /** Room for object data by the estimate. */
  private room(): number {
    const { sizeBytes, freeBytes } = this.sample
    return objectRoomBytes(sizeBytes, freeBytes - this.writtenSince(), this.reserveHeld)
  }

  /** Whether `bytes` of object data fit; a fresh look decides when the last is old or the
   * estimate says no. Admitted `counted` bytes (bound for the metadata database, or for a file
   * another thread writes) count as written at once: without it, small writes a second apart from
   * a look went unseen, and a fast run of them took the floor the database needed to flush. */
  async admits(bytes: number, counted = false): Promise<boolean> {
    const fits = (): boolean => this.room() >= Math.max(bytes, FULL_ROOM_BYTES)
    const fresh = Date.now() - this.sample.atMs <= SAMPLE_INTERVAL_MS
    if (!fresh || !fits()) await this.refresh()
    if (!fits()) return false
    if (counted) this.count(bytes)
    return true
  }

  /** Counts `bytes` about to be written to a blob file. True while they stay out of the lower
   * half of the floor; otherwise a fresh look decides (a promise). */
  spend(bytes: number): true | Promise<boolean> {
    this.count(bytes)
    if (this.room() > -this.halfFloor()) return true
    return this.refresh().then(() => this.room() > -this.halfFloor())
  }

  /** A blob write failed for lack of space: look again now. */
  exhausted(): void {
    void this.refresh()
  }

  /** The metadata database failed a write for lack of space: it gets the reserve, with which it
   * resumes (deletes on a full volume need it to), and the volume is looked at again. */
  databaseExhausted(): void {
    this.holdOffUntilMs = Date.now() + RESERVE_HOLD_OFF_MS
    this.reserveWork ??= this.releaseReserve('the metadata database found no room').finally(() => {
      this.reserveWork = null
    })
    void this.reserveWork.then(() => this.refresh())
  }

  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.timer)
    await this.looking
    await this.reserveWork
  }

  private writtenSince(): number {
    return Number(Atomics.load(this.written, 0) - this.writtenAtLook)
  }

  private count(bytes: number): void {
    Atomics.add(this.written, 0, BigInt(bytes))
  }

  private halfFloor(): number {
    return floorBytes(this.sample.sizeBytes) / 2
  }

  /** One look at a time; callers that come meanwhile wait for it. */
  private refresh(): Promise<void> {
    this.looking ??= this.lookAgain().finally(() => {
      this.looking = null
    })
    return this.looking
  }

  private async lookAgain(): Promise<void> {
    try {
      // Bytes counted while the look ran may not have been in it yet.
      const writtenBefore = Atomics.load(this.written, 0)
      const [seen, reserve] = await Promise.all([
        look(this.dataDir),
        this.reserveWork === null ? reserveSize(this.reservePath) : this.reserveHeld,
      ])
      this.sample = { ...seen, atMs: Date.now() }
      this.writtenAtLook = writtenBefore
      this.reserveSeen(reserve)
    } catch (error) {
      this.log.warn({ err: String(error) }, 'data volume: statfs failed')
      return
    }
    this.reportEdge()
    if (!this.keepsReserve) return
    if (this.reserveWork !== null || this.closed || !this.databaseOpen) return
    if (Date.now() < this.holdOffUntilMs) return
    // The reserve comes back only where the whole floor stays free beside it (a room of at least
    // zero): a volume at the edge keeps the floor for the database's own writes.
    if (this.room() >= 0 && this.reserveHeld < reserveBytes(this.sample.sizeBytes)) {
      this.reserveWork = this.writeReserve().finally(() => {
        this.reserveWork = null
      })
    }
  }

  private reportEdge(): void {
    const full = this.room() < FULL_ROOM_BYTES
    if (full === this.wasFull) return
    this.wasFull = full
    const fields = { freeBytes: this.sample.freeBytes, sizeBytes: this.sample.sizeBytes }
    if (full) this.log.warn(fields, 'data volume full: object writes are refused')
    else this.log.info(fields, 'data volume has room again: object writes are admitted')
  }

  /** The reserve's size as a look found it. Another shard deleted it for the metadata database,
   * if it is smaller than the keeper held: the keeper holds off writing it back, as after its own
   * release. */
  private reserveSeen(bytes: number): void {
    if (this.reserveWork !== null) return
    if (this.keepsReserve && bytes < this.reserveHeld) {
      this.holdOffUntilMs = Date.now() + RESERVE_HOLD_OFF_MS
    }
    this.reserveHeld = bytes
  }

  /** Deletes the reserve, for the metadata database (`why`). */
  private async releaseReserve(why: string): Promise<void> {
    if (this.reserveHeld === 0) return
    await unlink(this.reservePath).catch(() => undefined)
    this.sample.freeBytes += this.reserveHeld
    this.log.info({ bytes: this.reserveHeld }, `data volume: reserve released: ${why}`)
    this.reserveHeld = 0
  }

  /** Writes the reserve from its start; `reserveHeld` follows each chunk, so the room stays what
   * it was while the file grows. A failure leaves no reserve (the next look tries again). */
  private async writeReserve(): Promise<void> {
    const size = reserveBytes(this.sample.sizeBytes)
    const zeros = new Uint8Array(RESERVE_CHUNK_BYTES)
    let handle: FileHandle | undefined
    try {
      handle = await open(this.reservePath, 'w')
      this.reserveHeld = 0
      for (let at = 0; at < size && !this.closed; at += RESERVE_CHUNK_BYTES) {
        await handle.write(zeros, 0, zeros.byteLength, at)
        this.reserveHeld = at + RESERVE_CHUNK_BYTES
        this.sample.freeBytes -= RESERVE_CHUNK_BYTES
      }
    } catch (error) {
      this.log.warn({ err: String(error) }, 'data volume: the reserve could not be written')
      await unlink(this.reservePath).catch(() => undefined)
      this.reserveHeld = 0
    } finally {
      await handle?.close()
    }
  }
}
