/** Goal: the node gives back native memory its threads freed, which glibc alone keeps resident.
 * Method: a worker thread mallocs (through koffi, as V8's backing stores do through glibc) large
 * blocks between small ones it keeps, and frees the large ones. Blocks of a stream chunk or more
 * never enter an arena: freed, they leave the process at once, even after glibc saw a large mapped
 * block freed (which raises its threshold by default). Smaller ones stay resident in the thread's
 * arena until a trim, which must give most of them back. free() and malloc_trim() are synchronous
 * and the periodic trimmer is not running, so no collector, sweeper or timer decides what a
 * reading sees, however busy the machine. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import { TRIM_GROWTH_BYTES, TRIM_RETRY_CHECKS } from '../../runtime/knobs.js'
import {
  dueForTrim,
  loadTrimNow,
  mapLargeAllocations,
  trimmed,
  type TrimWatch,
} from '../../runtime/native-trim.js'

const KOFFI = createRequire(import.meta.url).resolve('koffi')

/** A worker that mallocs `count` blocks of `bytes` (touched, so resident), each followed by a
 * 512-byte block it keeps, so that no freed block reaches its arena's top. It answers 'filled',
 * then frees the large blocks on the first message and answers 'freed'. With `raise`, it first
 * frees one 4 MiB mapped block, after which glibc would by default serve such blocks from the
 * arena. */
function blockWorker(count: number, bytes: number, raise: boolean): Worker {
  return new Worker(
    `
const { parentPort } = require('node:worker_threads')
const koffi = require(${JSON.stringify(KOFFI)})
const libc = koffi.load('libc.so.6')
const malloc = libc.func('void *malloc(size_t)')
const free = libc.func('void free(void *)')
const memset = libc.func('void *memset(void *, int, size_t)')
const take = (bytes) => { const block = malloc(bytes); memset(block, 1, bytes); return block }
if (${raise}) free(take(4 * 1024 * 1024))
const large = []
const kept = []
for (let i = 0; i < ${count}; i++) {
  large.push(take(${bytes}))
  kept.push(take(512))
}
parentPort.postMessage('filled')
parentPort.once('message', () => {
  for (const block of large) free(block)
  parentPort.postMessage('freed')
})
`,
    { eval: true },
  )
}

/** Runs `worker` to 'filled', frees its large blocks, and returns RSS at both points. */
async function fillAndFree(worker: Worker): Promise<{ filled: number; freed: number }> {
  const next = (): Promise<unknown> => new Promise((resolve) => worker.once('message', resolve))
  assert.is(await next(), 'filled')
  const filled = process.memoryUsage.rss()
  worker.postMessage('free')
  assert.is(await next(), 'freed')
  return { filled, freed: process.memoryUsage.rss() }
}

// First: a thread that ends leaves its arena's free space to the next thread, which would take its
// chunks from there whatever the threshold.
test('freed stream chunks leave the process without a trim', async () => {
  assert.ok(await mapLargeAllocations(STREAM_CHUNK_BYTES), 'glibc takes the threshold')
  const CHUNKS = 400
  const worker = blockWorker(CHUNKS, STREAM_CHUNK_BYTES, true)
  try {
    const { filled, freed } = await fillAndFree(worker)
    const chunkBytes = CHUNKS * STREAM_CHUNK_BYTES
    const dropped = filled - freed
    assert.ok(dropped > chunkBytes / 2, `RSS dropped ${dropped} of ${chunkBytes} freed bytes`)
  } finally {
    await worker.terminate()
  }
})

test('a trim gives back memory a thread freed inside its arena', async () => {
  const trimNow = await loadTrimNow()
  assert.ok(trimNow, 'glibc is the C library here, so the trim loads')
  const HOLES = 1_200
  const HOLE_BYTES = 64 * 1024
  const worker = blockWorker(HOLES, HOLE_BYTES, false)
  try {
    const { filled, freed } = await fillAndFree(worker)
    const freedBytes = HOLES * HOLE_BYTES
    const droppedAlone = filled - freed
    assert.ok(droppedAlone < freedBytes / 4, `glibc kept the freed memory (${droppedAlone} bytes)`)
    const released = trimNow()
    assert.ok(released > freedBytes / 2, `released ${released} of ${freedBytes} freed bytes`)
  } finally {
    await worker.terminate()
  }
})

test('the trimmer trims after growth, and again while RSS stays above its floor', () => {
  const MB = 1024 * 1024
  const base = 200 * MB
  const watch: TrimWatch = { floor: base, lastAfter: base, checksSinceTrim: 0 }
  assert.not.ok(dueForTrim(watch, base + TRIM_GROWTH_BYTES - 1), 'less than the growth step')
  assert.ok(dueForTrim(watch, base + TRIM_GROWTH_BYTES), 'grown by the step')
  trimmed(watch, base + TRIM_GROWTH_BYTES) // The trim gave nothing back.
  const stuck = base + TRIM_GROWTH_BYTES
  const looks: boolean[] = []
  for (let i = 0; i < TRIM_RETRY_CHECKS; i++) looks.push(dueForTrim(watch, stuck))
  assert.equal(looks.indexOf(true), TRIM_RETRY_CHECKS - 1, 'a retry after TRIM_RETRY_CHECKS looks')
  trimmed(watch, base - 10 * MB)
  assert.is(watch.floor, base - 10 * MB, 'a lower trim lowers the floor')
  assert.not.ok(dueForTrim(watch, base), 'back near the floor: nothing to do')
})

test.run()
