/** Goal: fan-out sends each chunk of one body to sinks of both kinds without a copy per copying
 * sink: the copying sinks (a remote replica's) take the chunk before the transferring one (the
 * local store's stream port) detaches it, whatever order the sinks come in; and a copying sink
 * whose writes stop resolving is cut off at the lag bound while the quorum ends the body.
 * Method: fan-out's own code over hand-made sinks in this thread: a transferring sink detaches
 * what it is given (as a port's postMessage does), a copying one records copies. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { ByteSink, ByteSource } from '../../protocol/actor.js'
import type { CopyingSink } from '../../protocol/cluster.js'
import type { ErrorCode } from '../../protocol/errors.js'
import { fanOut, LAG_BYTES_MAX } from '../../actors/coordinator/fan-out.js'

const CHUNK_BYTES = 256 * 1024

interface Recorded {
  bytes: number[]
  /** The chunks written, as given (a transferring sink's are detached by then). */
  chunks: Uint8Array[]
  ended: Record<string, string> | null
  aborted: ErrorCode | null
}

function recorded(): Recorded {
  return { bytes: [], chunks: [], ended: null, aborted: null }
}

function sinkRecording(into: Recorded, write: (chunk: Uint8Array) => Promise<void>): ByteSink {
  return {
    write,
    buffer: () => new Uint8Array(CHUNK_BYTES),
    giveBack: () => undefined,
    end: (trailers = {}) => {
      into.ended = trailers
    },
    abort: (code) => {
      into.aborted = code
    },
    demand: () => Promise.resolve(null),
  }
}

/** Detaches each chunk it is given, as a stream port's write does; records the first byte. */
function transferringSink(into: Recorded): ByteSink {
  return sinkRecording(into, (chunk) => {
    into.chunks.push(chunk)
    const moved = structuredClone(chunk, { transfer: [chunk.buffer as ArrayBuffer] })
    into.bytes.push(moved[0] ?? -1)
    return Promise.resolve()
  })
}

/** Copies each chunk as it takes it; `resolving` says whether its writes ever resolve. */
function copyingSink(into: Recorded, resolving = true): CopyingSink {
  const write = (chunk: Uint8Array): Promise<void> => {
    into.bytes.push(chunk.length === 0 ? -1 : (chunk.slice()[0] as number))
    return resolving ? Promise.resolve() : new Promise(() => undefined)
  }
  return { ...sinkRecording(into, write), copies: true }
}

/** A turn of the event loop: the transferring sink's pump ends it after fanOut returned. */
function pumped(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/** `count` chunks, the n-th filled with the byte n; `made` gets each chunk it hands out. */
function sourceOf(count: number, made: Uint8Array[] = []): ByteSource {
  return {
    next: () => {
      if (made.length === count) return Promise.resolve(null)
      const chunk = new Uint8Array(CHUNK_BYTES).fill(made.length)
      made.push(chunk)
      return Promise.resolve(chunk)
    },
    trailers: () => ({ 'x-amz-checksum-crc32': 'AAAAAA==' }),
    md5: () => undefined,
    release: () => undefined,
    request: () => undefined,
    cancel: () => undefined,
  }
}

test('copying sinks take each chunk before the transferring sink takes it, uncopied', async () => {
  const local = recorded()
  const remotes = [recorded(), recorded()]
  const sinks = [transferringSink(local), ...remotes.map((into) => copyingSink(into))]
  const made: Uint8Array[] = []
  const result = await fanOut(sourceOf(8, made), sinks, 3)
  assert.equal(result, { ok: true, value: null })
  await pumped()
  const expected = [0, 1, 2, 3, 4, 5, 6, 7]
  for (const into of [local, ...remotes]) {
    assert.equal(into.bytes, expected)
    assert.equal(into.ended, { 'x-amz-checksum-crc32': 'AAAAAA==' })
  }
  // No copy was made for the one sink that takes the buffer.
  assert.ok(local.chunks.every((chunk, n) => chunk === made[n]))
})

test('a copying sink that stops taking chunks is cut off; the quorum ends the body', async () => {
  const local = recorded()
  const fast = recorded()
  const stuck = recorded()
  const sinks = [copyingSink(stuck, false), transferringSink(local), copyingSink(fast)]
  const chunks = (2 * LAG_BYTES_MAX) / CHUNK_BYTES
  const result = await fanOut(sourceOf(chunks), sinks, 2)
  assert.equal(result, { ok: true, value: null })
  await pumped()
  assert.is(stuck.aborted, 'timeout')
  assert.is(stuck.ended, null)
  assert.ok(stuck.bytes.length * CHUNK_BYTES <= LAG_BYTES_MAX + CHUNK_BYTES, 'bounded queue')
  for (const into of [local, fast]) {
    assert.is(into.bytes.length, chunks)
    assert.ok(into.ended !== null)
  }
})

test.run()
