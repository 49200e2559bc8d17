/** @module BlobFiles on the local file system (node:fs/promises).
 *
 * Layout under the data directory: temporary files in `tmp/<id>`, permanent ones in
 * `blobs/<first two characters of id>/<id>` (a fan-out of 256 directories keeps each directory
 * small). Ids are chosen by the store and must be lower-case hex: anything else is refused before
 * it can become part of a path, so no object key or client input ever names a file.
 *
 * Durability: a writer's `commit` fsyncs the file and then the `tmp/` directory, because the store
 * commits metadata that references the temporary file before promoting it, and a crash in between
 * must find the file where the metadata says. `promote` links the file into `blobs/`, fsyncs the
 * fan-out directory (and `blobs/` when it had to create the fan-out directory), then unlinks the
 * temporary name; it never replaces a different file with the same id. `open` falls back to `tmp/`
 * for a file whose metadata committed but whose promotion did not happen.
 *
 * Space: each chunk is counted against the data volume before it is written (runtime/
 * data-volume.ts), and a write the volume has no room for, or that fails with ENOSPC, fails with
 * `insufficient_storage`: the store discards the file and answers 507. */
import assert from 'node:assert/strict'
import { closeSync, fdatasync, fsync, linkSync, openSync, unlinkSync, writeSync } from 'node:fs'
import { mkdir, open, readdir, stat, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { BlobFiles, BlobReader, BlobWriter, WriteLoan } from '../protocol/actor.js'
import { ServiceError } from '../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../protocol/limits.js'
import { takeChunk } from './chunk-pool.js'
import { isNoSpace } from './data-volume.js'

/** Store-chosen ids: hex, long enough to be unique, short enough to be a file name. */
const BLOB_ID_PATTERN = /^[0-9a-f]{16,128}$/

export interface LocalBlobFiles extends BlobFiles {
  createLent(id: string): Promise<WriteLoan>
  /** Closes every file handle still open (writers and readers left by a crashed flow). */
  close(): Promise<void>
}

/** What blob files ask of the data volume (runtime/data-volume.ts). */
export interface BlobSpace {
  admits(bytes: number, counted?: boolean): Promise<boolean>
  /** Counts bytes about to be written; false (or a promise of it) when there is no room. */
  spend(bytes: number): true | Promise<boolean>
  /** A write failed with ENOSPC. */
  exhausted(): void
}

export async function openBlobFiles(dir: string, space: BlobSpace): Promise<LocalBlobFiles> {
  const files = new LocalFiles(dir, space)
  await mkdir(files.temporaryDir, { recursive: true })
  await mkdir(files.permanentDir, { recursive: true })
  return files
}

/** The file of a lent write (ByteSource.lendWrite), opened by the thread the store lent it to: the
 * store created it and counted its bytes against the volume when it lent it, and removes it if
 * the write fails; `commit` syncs it and `tmp/` as the store's own writer does. */
export function openLentWriter(loan: WriteLoan): BlobWriter {
  let fd: number
  try {
    fd = openSync(loan.path, 'r+')
  } catch (error) {
    throw noSpaceAs(error, COUNTED_SPACE)
  }
  return new FileWriter(fd, loan.path, dirname(loan.path), COUNTED_SPACE, () => undefined)
}

/** The space of a lent file's writes: counted by the store that lent it. */
const COUNTED_SPACE: BlobSpace = {
  admits: () => Promise.resolve(true),
  spend: () => true,
  exhausted: () => undefined,
}

function checkId(id: string): void {
  if (!BLOB_ID_PATTERN.test(id)) throw new Error(`blob-files: refused id ${JSON.stringify(id)}`)
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT'
}

/** fsync of a directory, so that an entry created or renamed in it survives a crash. Opening and
 * closing are synchronous (see FileWriter), the fsync is not. */
async function syncDirectory(path: string): Promise<void> {
  const fd = openSync(path, 'r')
  try {
    await syncFile(fd, 'all')
  } finally {
    closeSync(fd)
  }
}

class LocalFiles implements LocalBlobFiles {
  readonly temporaryDir: string
  readonly permanentDir: string
  /** Handles open now, closed by `close` if their owner never did. */
  private readonly handles = new Set<FileHandle>()
  /** Fan-out directories known to exist (and synced into blobs/). */
  private readonly fanOuts = new Set<string>()
  /** Writers open now, whose files `close` closes like the handles. */
  private readonly writers = new Set<FileWriter>()

  constructor(
    dir: string,
    private readonly space: BlobSpace,
  ) {
    this.temporaryDir = join(dir, 'tmp')
    this.permanentDir = join(dir, 'blobs')
  }

  private temporaryPath(id: string): string {
    checkId(id)
    return join(this.temporaryDir, id)
  }

  private fanOutDir(id: string): string {
    checkId(id)
    return join(this.permanentDir, id.slice(0, 2))
  }

  private permanentPath(id: string): string {
    return join(this.fanOutDir(id), id)
  }

  create(id: string): Promise<BlobWriter> {
    const path = this.temporaryPath(id)
    let fd: number
    try {
      // 'wx': an id is used once; an existing file means a bug in how ids are chosen.
      fd = openSync(path, 'wx')
    } catch (error) {
      throw this.noSpaceAs(error)
    }
    const writer: FileWriter = new FileWriter(fd, path, this.temporaryDir, this.space, () =>
      this.writers.delete(writer),
    )
    this.writers.add(writer)
    return Promise.resolve(writer)
  }

  async createLent(id: string): Promise<WriteLoan> {
    const path = this.temporaryPath(id)
    try {
      closeSync(openSync(path, 'wx'))
    } catch (error) {
      throw this.noSpaceAs(error)
    }
    return { file: id, path }
  }

  async promote(id: string): Promise<void> {
    const source = this.temporaryPath(id)
    const target = this.permanentPath(id)
    const fanOut = this.fanOutDir(id)
    // Each of the 256 fan-out directories is made (and synced into its parent) once per start.
    const created = this.fanOuts.has(fanOut) ? undefined : await mkdir(fanOut, { recursive: true })
    // link + unlink rather than rename: a rename would silently replace a permanent file that
    // has the same id, and a clash of ids must fail, not lose a blob. Both are synchronous, as
    // the writer's calls are.
    try {
      linkSync(source, target)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT' && (await statOrNull(target)) !== null) return // already promoted
      if (code !== 'EEXIST') throw error
      // Both names exist: a crash between link and unlink (same file), or a clash (another).
      const [before, after] = await Promise.all([statOrNull(source), statOrNull(target)])
      if (before !== null && (before.ino !== after?.ino || before.dev !== after.dev)) {
        throw new Error(`blob-files: id ${id} is already taken by another file`)
      }
    }
    if (created !== undefined) await syncDirectory(this.permanentDir)
    this.fanOuts.add(fanOut)
    await syncDirectory(fanOut)
    // A crash before this unlink leaves a second name in tmp/; recovery promotes it again, which
    // lands here through EEXIST with the same file and removes it.
    unlinkIfPresent(source)
  }

  async open(id: string): Promise<BlobReader | undefined> {
    const permanent = await this.openPath(this.permanentPath(id))
    if (permanent !== undefined) return permanent
    return this.openPath(this.temporaryPath(id))
  }

  pathsOf(id: string): string[] {
    return [this.permanentPath(id), this.temporaryPath(id)]
  }

  private async openPath(path: string): Promise<FileReader | undefined> {
    let handle: FileHandle
    try {
      handle = await open(path, 'r')
    } catch (error) {
      if (isMissing(error)) return undefined
      throw error
    }
    this.handles.add(handle)
    try {
      const { size } = await handle.stat()
      return new FileReader(handle, size, () => this.handles.delete(handle))
    } catch (error) {
      this.handles.delete(handle)
      await handle.close()
      throw error
    }
  }

  async remove(id: string): Promise<void> {
    unlinkIfPresent(this.permanentPath(id))
    // A blob dereferenced before it was promoted still sits in tmp/.
    unlinkIfPresent(this.temporaryPath(id))
  }

  async listTemporary(): Promise<string[]> {
    const names = await readdir(this.temporaryDir)
    // Anything that is not one of our ids was not put there by us: leave it alone.
    return names.filter((name) => BLOB_ID_PATTERN.test(name)).sort()
  }

  async removeTemporary(id: string): Promise<void> {
    unlinkIfPresent(this.temporaryPath(id))
  }

  admits(bytes: number, counted = false): Promise<boolean> {
    return this.space.admits(bytes, counted)
  }

  private noSpaceAs(error: unknown): unknown {
    return noSpaceAs(error, this.space)
  }

  async close(): Promise<void> {
    const open = [...this.handles]
    this.handles.clear()
    for (const writer of this.writers) writer.closeFile()
    this.writers.clear()
    await Promise.allSettled(open.map((handle) => handle.close()))
  }
}

/** ENOSPC (or a quota) becomes `insufficient_storage`, and the volume is looked at again. */
function noSpaceAs(error: unknown, space: BlobSpace): unknown {
  if (!isNoSpace(error)) return error
  space.exhausted()
  return roomless()
}

function roomless(): ServiceError {
  return new ServiceError('insufficient_storage', 'no room on the data volume for the blob file')
}

async function statOrNull(path: string): Promise<{ ino: number; dev: number } | null> {
  try {
    return await stat(path)
  } catch (error) {
    if (isMissing(error)) return null
    throw error
  }
}

function unlinkIfPresent(path: string): void {
  try {
    unlinkSync(path)
  } catch (error) {
    if (!isMissing(error)) throw error
  }
}

/** A writer flushes what it has written every this many bytes, in the background, so the disk
 * writes while the rest arrives and the fsync before the commit has little left to do (a 1 GiB
 * object would otherwise spend seconds in that one fsync). */
const WRITE_BEHIND_BYTES = 32 * 1024 * 1024

/** Writes go to the page cache synchronously, on the store's thread; only the syncs wait on
 * libuv's pool: for a file's open, writes and close, a hand-off to the pool and back costs the
 * calling thread as much as the page cache's copy it carries, and the pool more besides. The
 * price is that a write the kernel throttles (the volume's dirty pages at their limit) holds the
 * store's thread while it lasts, as nginx's writes of request bodies hold its worker. */
class FileWriter implements BlobWriter {
  private position = 0
  private finished = false
  private flushedUpTo = 0
  /** The background flush in progress, at most one. */
  private flushing: Promise<void> | null = null
  /** The first write that failed: every later call reports it. */
  private failure: unknown = null

  /** Null once closed: a descriptor's number is reused by the next open, so it is closed once. */
  private fd: number | null

  constructor(
    fd: number,
    private readonly path: string,
    private readonly directory: string,
    private readonly space: BlobSpace,
    private readonly release: () => void,
  ) {
    this.fd = fd
  }

  /** Closes the file now, once (the adapters close it at a crash; the writer at its end). */
  closeFile(): void {
    if (this.fd === null) return
    const fd = this.fd
    this.fd = null
    closeSync(fd)
  }

  private get openFd(): number {
    if (this.fd === null) throw new Error("blob-files: the writer's file was closed")
    return this.fd
  }

  /** Writes `chunk` at the end of the file; `written` is called once its bytes are in the file,
   * after which the caller may reuse its buffer. */
  async write(chunk: Uint8Array, written?: () => void): Promise<void> {
    assert(!this.finished, 'blob writer used after commit or discard')
    this.throwIfFailed()
    const allowed = this.space.spend(chunk.byteLength)
    if (allowed !== true && !(await allowed)) throw roomless()
    try {
      writeFully(this.openFd, chunk, this.position)
    } catch (error) {
      this.failure ??= error
      this.throwIfFailed()
    }
    this.position += chunk.byteLength
    written?.()
    if (this.position - this.flushedUpTo >= WRITE_BEHIND_BYTES && this.flushing === null) {
      this.flushedUpTo = this.position
      // Errors surface at commit, whose own fsync reports the same failure.
      this.flushing = syncFile(this.openFd, 'data').then(
        () => {
          this.flushing = null
        },
        () => {
          this.flushing = null
        },
      )
    }
  }

  async commit(): Promise<void> {
    assert(!this.finished, 'blob writer committed twice')
    this.finished = true
    await this.flushing // Never rejects: its failure is the fsync's below.
    try {
      this.throwIfFailed()
      await syncFile(this.openFd, 'all')
    } catch (error) {
      throw noSpaceAs(error, this.space)
    } finally {
      this.release()
      this.closeFile()
    }
    await syncDirectory(this.directory)
  }

  async discard(): Promise<void> {
    if (this.finished) return
    this.finished = true
    this.release()
    await this.flushing
    this.closeFile()
    unlinkIfPresent(this.path)
  }

  private throwIfFailed(): void {
    if (this.failure !== null) throw noSpaceAs(this.failure, this.space)
  }
}

/** Writes all of `chunk` at `position`: a regular file takes it in one call in practice, the loop
 * makes it a rule. */
function writeFully(fd: number, chunk: Uint8Array, position: number): void {
  let written = 0
  // Bounded: every turn writes at least one byte, or throws.
  while (written < chunk.byteLength) {
    const bytes = writeSync(fd, chunk, written, chunk.byteLength - written, position + written)
    assert(bytes > 0)
    written += bytes
  }
}

/** fdatasync ('data') or fsync ('all') on libuv's pool. */
function syncFile(fd: number, what: 'data' | 'all'): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error: NodeJS.ErrnoException | null): void =>
      error === null ? resolve() : reject(error)
    if (what === 'data') fdatasync(fd, done)
    else fsync(fd, done)
  })
}

class FileReader implements BlobReader {
  private closed = false

  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
    private readonly release: () => void,
  ) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    assert(!this.closed, 'blob reader used after close')
    assert(Number.isInteger(offset) && offset >= 0)
    assert(Number.isInteger(length) && length >= 0)
    // Never from Buffer's shared pool: callers transfer the chunk's buffer to another thread. A
    // whole stream chunk reuses a released buffer when there is one.
    const bytes = length === STREAM_CHUNK_BYTES ? takeChunk() : new Uint8Array(length)
    let filled = 0
    while (filled < length) {
      const result = await this.handle.read(bytes, filled, length - filled, offset + filled)
      if (result.bytesRead === 0) break
      filled += result.bytesRead
    }
    return filled === length ? bytes : bytes.subarray(0, filled)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.release()
    await this.handle.close()
  }
}
