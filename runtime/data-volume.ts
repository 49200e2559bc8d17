/** @module The data volume: how much room the file system of the data directory has left, and the
 * rule by which object writes are refused before it runs out, so that a full disk is an answer
 * (`insufficient_storage`, S3 507) rather than a crash.
 *
 * Room for object data = free space - the floor - the part of the reserve not held. The floor
 * stays free for what must go on when object writes stop: deletes, the metadata database's own
 * writes (WAL, memtable flushes, compactions) and what a look at the volume misses until the next.
 * The reserve is a file of RESERVE_BYTES in the data directory, written while there is room and
 * deleted once there is none: the metadata database then has that much more to write in (it stops
 * on a failed write and resumes by itself once it sees enough free space), and a restart on a full
 * volume finds room to open it. The rule counts the reserve as held whether it is or not, so
 * deleting it never lets more object data in.
 *
 * `DataVolume` runs in replica-store's thread: a look (statfs) every SAMPLE_INTERVAL_MS, and one
 * at once when the estimate (the last look less the blob bytes written since) comes near the edge
 * or a write failed with ENOSPC. A blob write may dig into the upper half of the floor (writes
 * admitted together, bodies of unknown size) but never into the lower half. The ingress reads the
 * same rule with `readVolumeStatus` for /health and /metrics. */
import { open, stat, statfs, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import type { VolumeStatus } from '../protocol/actor.js'
import { METADATA_MEMTABLE_BYTES } from './rocks-kv.js'

const MIB = 1024 * 1024
/** The floor: 1% of the volume, at least FLOOR_BYTES_MIN and at most FLOOR_BYTES_MAX. The least
 * is the metadata database's whole memtable budget (rocks-kv.ts): small objects live inline there,
 * and a flush writes its memtables out while their WAL files still hold the same bytes. With half
 * of it (two write buffers) a run of inline writes left too little for the flush, which then
 * failed on every retry while nothing could free space. */
export const FLOOR_BYTES_MIN = METADATA_MEMTABLE_BYTES
const FLOOR_BYTES_MAX = 256 * MIB
/** The reserve file: two write buffers of the metadata database, which resumes after a failed
 * write only once it sees one buffer free. */
export const RESERVE_BYTES = 16 * MIB
export const RESERVE_FILE = 'space.reserve'
/** The volume counts as full, and every object write is refused, once less room than this is left
 * (a write larger than the room is refused before that). */
export const FULL_ROOM_BYTES = MIB
/** How often the volume is looked at, and how old a look may be when a write asks for room. */
export const SAMPLE_INTERVAL_MS = 1_000
/** The reserve is written back only when this much room is left beyond it, so that a volume at
 * the edge does not write and delete it over and over. */
const RESERVE_REWRITE_ROOM_BYTES = RESERVE_BYTES
/** The reserve is written in chunks of this size. */
const RESERVE_CHUNK_BYTES = MIB

export function floorBytes(sizeBytes: number): number {
  return Math.min(FLOOR_BYTES_MAX, Math.max(FLOOR_BYTES_MIN, Math.floor(sizeBytes / 100)))
}

/** Bytes object writes may still take (negative past the edge); see the module comment. */
export function objectRoomBytes(sizeBytes: number, freeBytes: number, reserveHeld: number): number {
  return freeBytes - floorBytes(sizeBytes) - (RESERVE_BYTES - Math.min(reserveHeld, RESERVE_BYTES))
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

export class DataVolume {
  /** Blob bytes handed to writes since the last look. */
  private writtenSince = 0
  private reserveHeld: number
  private looking: Promise<void> | null = null
  private reserveWork: Promise<void> | null = null
  private closed = false
  private wasFull = false
  private readonly timer: NodeJS.Timeout
  private readonly reservePath: string

  /** Looks at the volume and, when it is full, deletes the reserve before anything else opens. */
  static async open(dataDir: string, log: VolumeLog): Promise<DataVolume> {
    const reservePath = join(dataDir, RESERVE_FILE)
    const sample = { ...(await look(dataDir)), atMs: Date.now() }
    const volume = new DataVolume(dataDir, log, sample, await reserveSize(reservePath))
    // Writing the reserve waits for the first look: a start does not wait for 16 MiB of writes.
    await volume.releaseReserveIfFull()
    return volume
  }

  private constructor(
    private readonly dataDir: string,
    private readonly log: VolumeLog,
    private sample: Sample,
    reserveHeld: number,
  ) {
    this.reservePath = join(dataDir, RESERVE_FILE)
    this.reserveHeld = reserveHeld
    this.timer = setInterval(() => void this.refresh(), SAMPLE_INTERVAL_MS)
    this.timer.unref()
  }

  /** Room for object data by the estimate. */
  private room(): number {
    const { sizeBytes, freeBytes } = this.sample
    return objectRoomBytes(sizeBytes, freeBytes - this.writtenSince, this.reserveHeld)
  }

  /** Whether `bytes` of object data fit; a fresh look decides when the last is old or the
   * estimate says no. Admitted `inline` bytes (bound for the metadata database) count as written
   * at once: without it, small writes a second apart from a look went unseen, and a fast run of
   * them took the floor the database needed to flush. */
  async admits(bytes: number, inline = false): Promise<boolean> {
    const fits = (): boolean => this.room() >= Math.max(bytes, FULL_ROOM_BYTES)
    const fresh = Date.now() - this.sample.atMs <= SAMPLE_INTERVAL_MS
    if (!fresh || !fits()) await this.refresh()
    if (!fits()) return false
    if (inline) this.writtenSince += bytes
    return true
  }

  /** Counts `bytes` about to be written to a blob file. True while they stay out of the lower
   * half of the floor; otherwise a fresh look decides (a promise). */
  spend(bytes: number): true | Promise<boolean> {
    this.writtenSince += bytes
    if (this.room() > -this.halfFloor()) return true
    return this.refresh().then(() => this.room() > -this.halfFloor())
  }

  /** A write failed for lack of space: look again now (which lets the reserve go). */
  exhausted(): void {
    void this.refresh()
  }

  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.timer)
    await this.looking
    await this.reserveWork
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
      const writtenBefore = this.writtenSince
      const seen = await look(this.dataDir)
      this.sample = { ...seen, atMs: Date.now() }
      // Bytes counted while the look ran may not have been in it yet.
      this.writtenSince = Math.max(0, this.writtenSince - writtenBefore)
    } catch (error) {
      this.log.warn({ err: String(error) }, 'data volume: statfs failed')
      return
    }
    this.reportEdge()
    if (this.reserveWork !== null || this.closed) return
    // Inside the look: a look begun before the reserve went would otherwise miss its bytes.
    await this.releaseReserveIfFull()
    if (this.room() >= RESERVE_REWRITE_ROOM_BYTES && this.reserveHeld < RESERVE_BYTES) {
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

  /** Deletes the reserve when the volume is full (it is written back, in the background, once
   * there is room beyond it). */
  private async releaseReserveIfFull(): Promise<void> {
    if (this.room() >= FULL_ROOM_BYTES || this.reserveHeld === 0) return
    await unlink(this.reservePath).catch(() => undefined)
    this.sample.freeBytes += this.reserveHeld
    this.log.warn({ bytes: this.reserveHeld }, 'data volume full: reserve released')
    this.reserveHeld = 0
  }

  /** Writes the reserve from its start; `reserveHeld` follows each chunk, so the room stays what
   * it was while the file grows. A failure leaves no reserve (the next look tries again). */
  private async writeReserve(): Promise<void> {
    const zeros = new Uint8Array(RESERVE_CHUNK_BYTES)
    let handle: FileHandle | undefined
    try {
      handle = await open(this.reservePath, 'w')
      this.reserveHeld = 0
      for (let at = 0; at < RESERVE_BYTES && !this.closed; at += RESERVE_CHUNK_BYTES) {
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
