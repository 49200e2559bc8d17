/** @module One body, several replicas: the client's bytes are read once and each chunk goes to
 * every replica's sink: first to the sinks that copy it as they take it (a remote replica's,
 * Peers.openWrite), then to those that transfer it (the local store's stream port), copied for
 * all of these but the last, whose write takes the buffer. Each sink has
 * its own queue, so the pace is set by the `need`-th fastest replica (the write quorum), not the
 * slowest: a replica that falls more than LAG_BYTES_MAX behind is cut off (its write fails, and
 * the quorum goes on without it). The queues are bounded by that same lag. */
import type { ByteSink, ByteSource } from '../../protocol/actor.js'
import { isCopyingSink } from '../../protocol/cluster.js'
import { fail, ok, ServiceError, type ErrorCode, type Result } from '../../protocol/errors.js'

/** How far a replica may fall behind the quorum's pace before it is cut off (CLUSTER.md 5). */
export const LAG_BYTES_MAX = 4 * 2 ** 20
/** Queued bytes at or below which a replica counts as keeping pace. */
const PACE_BYTES = 256 * 2 ** 10

/** One sink's queue. A copying sink is written at once (it takes the bytes before `write`
 * returns, in order, and holds back its writer through the promise), so its lane counts the bytes
 * whose write has not resolved; a transferring sink is written one chunk at a time by a pump. */
class Lane {
  private readonly queue: Uint8Array[] = []
  queuedBytes = 0
  failed: { code: ErrorCode; detail: string } | null = null
  readonly copies: boolean
  private pumping: Promise<void> | null = null
  private wake: (() => void) | null = null
  private ending: { trailers: Record<string, string>; md5: string | undefined } | null = null

  constructor(readonly sink: ByteSink) {
    this.copies = isCopyingSink(sink)
  }

  push(chunk: Uint8Array): void {
    if (this.failed !== null) return
    this.queuedBytes += chunk.byteLength
    if (this.copies) {
      void this.write(chunk)
      return
    }
    this.queue.push(chunk)
    this.pumping ??= this.pump()
  }

  end(trailers: Record<string, string>, md5: string | undefined): void {
    if (this.copies) {
      if (this.failed === null) this.sink.end(trailers, md5)
      return
    }
    this.ending = { trailers, md5 }
    this.pumping ??= this.pump()
  }

  cut(code: ErrorCode, detail: string): void {
    if (this.failed !== null) return
    this.failed = { code, detail }
    this.queue.length = 0
    this.queuedBytes = 0
    this.sink.abort(code, detail)
    this.notify()
  }

  /** Resolves at the next change of this lane's queue. */
  changed(): Promise<void> {
    return new Promise((resolve) => (this.wake = resolve))
  }

  private notify(): void {
    const wake = this.wake
    this.wake = null
    wake?.()
  }

  /** Writes one chunk; false once the sink failed (the lane is cut). */
  private async write(chunk: Uint8Array): Promise<boolean> {
    const size = chunk.byteLength
    try {
      await this.sink.write(chunk)
    } catch (error) {
      const code = error instanceof ServiceError ? error.code : 'unavailable'
      this.cut(code, `replica stopped reading: ${String(error)}`)
      return false
    }
    if (this.failed !== null) return false
    this.queuedBytes -= size
    this.notify()
    return true
  }

  private async pump(): Promise<void> {
    for (;;) {
      const chunk = this.queue.shift()
      if (chunk === undefined) {
        if (this.ending !== null && this.failed === null) {
          this.sink.end(this.ending.trailers, this.ending.md5)
        }
        this.pumping = null
        return
      }
      if (!(await this.write(chunk))) {
        this.pumping = null
        return
      }
    }
  }
}

/** Copies `source` to every sink until its end, then ends each with the source's trailers and
 * MD5. Fails (aborting every sink) when fewer than `need` sinks are left, or the source fails. */
export async function fanOut(
  source: ByteSource,
  sinks: readonly ByteSink[],
  need: number,
  endTrailers: () => Record<string, string> = () => ({}),
): Promise<Result<null>> {
  // Copying sinks first: a transferring sink's write detaches the chunk.
  const lanes = sinks
    .map((sink) => new Lane(sink))
    .sort((a, b) => Number(b.copies) - Number(a.copies))
  const live = (): Lane[] => lanes.filter((lane) => lane.failed === null)
  try {
    for (;;) {
      const chunk = await source.next()
      if (chunk === null) break
      const current = live()
      // The last lane is the last transferring one, if any: it alone may take the chunk itself.
      const last = current.length - 1
      current.forEach((lane, i) => lane.push(lane.copies || i === last ? chunk : chunk.slice()))
      for (;;) {
        const paced = live().filter((lane) => lane.queuedBytes <= PACE_BYTES)
        if (live().length < need) return abortAll(lanes, source, 'too few replicas took the body')
        if (paced.length >= need) break
        await Promise.race(live().map((lane) => lane.changed()))
      }
      for (const lane of live()) {
        if (lane.queuedBytes > LAG_BYTES_MAX) lane.cut('timeout', 'replica fell too far behind')
      }
    }
  } catch (error) {
    const code = error instanceof ServiceError ? error.code : 'incomplete_body'
    for (const lane of lanes) lane.cut(code, `the body failed: ${String(error)}`)
    return fail(code, `the body failed: ${String(error)}`)
  }
  const trailers = { ...withoutOurs(source.trailers()), ...endTrailers() }
  const md5 = source.md5()
  for (const lane of live()) lane.end(trailers, md5)
  return live().length >= need ? ok(null) : fail('unavailable', 'too few replicas took the body')
}

function abortAll(lanes: readonly Lane[], source: ByteSource, detail: string): Result<null> {
  for (const lane of lanes) lane.cut('unavailable', detail)
  source.cancel('unavailable', detail)
  return fail('unavailable', detail)
}

/** Sends an inline body to every sink as one chunk, then ends each with `trailers`. */
export async function sendInline(
  body: Uint8Array,
  sinks: readonly ByteSink[],
  trailers: Record<string, string> = {},
): Promise<void> {
  await Promise.allSettled(
    sinks.map(async (sink) => {
      if (body.byteLength > 0) await sink.write(isCopyingSink(sink) ? body : body.slice())
      sink.end(trailers)
    }),
  )
}

/** A client's trailers without any named like the ones the cluster adds (x-svc-*). */
function withoutOurs(trailers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(trailers).filter(([name]) => !name.startsWith('x-svc-')))
}
