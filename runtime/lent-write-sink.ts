/** @module The sender's end of a lent write (ByteSource.lendWrite): a single node's ingress writes
 * a PUT's or a part's body to the temporary file the store lends it, hashing it on the way
 * (SHA-256, CRC32 and the checksums the client named; pumpBody adds MD5), so that neither the bytes
 * nor their hashes cost the store's thread, which every request of the node shares. The stream
 * carries the loan one way and, the other way, a `written` frame at most every PROGRESS_EVERY_MS
 * (the store's idle timer restarts on each: a frame per chunk cost the store's thread a wake-up
 * each, most of a large PUT's cost there) and the end with the digests, sent once the file and
 * `tmp/` are synced. The store created the file and counted its bytes against the volume; it
 * removes it when the write fails, the stream breaks or it commits a duplicate. A store that dies
 * closes the port, which fails the next write here at once. */
import type { BlobWriter, ByteSink, StreamHandle, WriteLoan } from '../protocol/actor.js'
import { BodyHasher } from '../protocol/body-hasher.js'
import { asServiceError, ServiceError, type ErrorCode } from '../protocol/errors.js'
import type { ChecksumAlgorithm } from '../protocol/objects.js'
import { openLentWriter } from './blob-files.js'
import { recycleChunk, takeChunk } from './chunk-pool.js'
import { asPort, Waiter, type ToSink, type ToSource } from './stream-port.js'

/** Well inside the stream's idle timeout (STREAM_IDLE_TIMEOUT_MS). */
const PROGRESS_EVERY_MS = 5_000

export class LentWriteSink implements ByteSink {
  private readonly port
  private writer: BlobWriter | null = null
  private loan: WriteLoan | null = null
  private failure: ServiceError | null = null
  private finished = false
  /** MD5 is pumpBody's, sent with the end. */
  private readonly hasher: BodyHasher
  private readonly lent = new Waiter<void>()
  private progressAtMs: number

  constructor(
    handle: StreamHandle,
    private readonly sizeMax: number,
    algorithms: readonly ChecksumAlgorithm[],
    private readonly now: () => number,
  ) {
    this.progressAtMs = now()
    this.port = asPort(handle)
    this.hasher = new BodyHasher(algorithms, false)
    this.port.on('message', (frame: ToSink) => this.onFrame(frame))
    this.port.on('close', () => {
      if (!this.finished) this.fail(new ServiceError('unavailable', 'stream peer gone'))
    })
  }

  private onFrame(frame: ToSink): void {
    if (frame.t === 'lend') {
      this.loan = frame.loan
      this.lent.wake()
    } else if (frame.t === 'cancel') {
      this.fail(new ServiceError(frame.code, frame.detail))
    }
    // Credit and demand concern streams that carry bytes.
  }

  private fail(error: ServiceError): void {
    if (this.failure !== null) return
    this.failure = error
    this.lent.fail(error)
    void this.writer?.discard()
  }

  async write(chunk: Uint8Array): Promise<void> {
    while (this.loan === null) {
      if (this.failure !== null) throw this.failure
      await this.lent.wait('the store to lend a file')
    }
    if (this.failure !== null) throw this.failure
    if (this.hasher.size + chunk.byteLength > this.sizeMax) {
      throw new ServiceError('incomplete_body', `body longer than the ${this.sizeMax} announced`)
    }
    this.hasher.update(chunk)
    try {
      this.writer ??= openLentWriter(this.loan)
      await this.writer.write(chunk, () => recycleChunk(chunk))
    } catch (error) {
      const failed = asServiceError(error)
      this.fail(failed)
      throw failed
    }
    if (this.now() - this.progressAtMs >= PROGRESS_EVERY_MS) {
      this.progressAtMs = this.now()
      this.post({ t: 'written' })
    }
  }

  buffer(): Uint8Array {
    return takeChunk()
  }

  giveBack(buffer: Uint8Array): void {
    recycleChunk(buffer)
  }

  end(trailers: Record<string, string> = {}, md5Hex?: string): void {
    if (this.finished || this.failure !== null) return
    this.finished = true
    void this.finish(trailers, md5Hex)
  }

  /** Syncs the file and sends the digests; a failure goes to the store as an abort. */
  private async finish(trailers: Record<string, string>, md5Hex: string | undefined) {
    try {
      // An empty body never waited for its file: the store lends it all the same.
      while (this.loan === null) await this.lent.wait('the store to lend a file')
      this.writer ??= openLentWriter(this.loan)
      await this.writer.commit()
      const frame: ToSource = { t: 'end', trailers, written: await this.hasher.digests() }
      if (md5Hex !== undefined) frame.md5 = md5Hex
      this.post(frame)
    } catch (error) {
      const failed = asServiceError(error)
      this.failure ??= failed
      void this.writer?.discard()
      this.post({ t: 'abort', code: failed.code, detail: failed.message })
      this.port.close()
    }
  }

  abort(code: ErrorCode, detail: string): void {
    if (this.finished) return
    this.finished = true
    this.fail(new ServiceError(code, detail))
    this.post({ t: 'abort', code, detail })
    this.port.close()
  }

  demand(): Promise<null> {
    return Promise.resolve(null)
  }

  private post(frame: ToSource): void {
    try {
      this.port.postMessage(frame)
    } catch {
      // Closed: the store has gone, and the close handler said so.
    }
  }
}
