/** Goal: the node gives back native memory its threads freed, which glibc alone keeps resident.
 * Method: a worker thread fills its arena with 64 KiB buffers between small ones it keeps, frees
 * the large ones; the freed memory stays resident until the trimmer's trim, which must give most
 * of it back. Blocks of a stream chunk or more never enter an arena: freed, they are gone at once,
 * even after glibc saw a large mapped block freed (which raises its threshold by default). */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { setFlagsFromString } from 'node:v8'
import { Worker } from 'node:worker_threads'
import { mapLargeAllocations, startNativeTrimmer } from '../../runtime/native-trim.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import { sleep } from '../support/wait.js'

setFlagsFromString('--expose-gc') // The worker below frees its buffers with a collection.

const HOLES = 1_200
const HOLE_BYTES = 64 * 1024

// Each large buffer sits between two kept small ones, so no freed block reaches an arena's top.
const FRAGMENTING_WORKER = `
const { parentPort } = require('node:worker_threads')
let large = []
const kept = []
for (let i = 0; i < ${HOLES}; i++) {
  large.push(Buffer.allocUnsafeSlow(${HOLE_BYTES}).fill(1))
  kept.push(Buffer.allocUnsafeSlow(512).fill(2))
}
large = null
globalThis.gc()
parentPort.postMessage('freed')
parentPort.on('message', () => parentPort.postMessage(kept.length))
`

const CHUNKS = 400

// One large mapped block freed first: by default glibc then serves chunk-sized blocks from the
// arena. Each chunk sits between two kept small buffers, so a freed one cannot reach the top.
const CHUNK_WORKER = `
const { parentPort } = require('node:worker_threads')
let raise = Buffer.allocUnsafeSlow(4 * 1024 * 1024).fill(1)
raise = null
globalThis.gc()
let chunks = []
const kept = []
for (let i = 0; i < ${CHUNKS}; i++) {
  chunks.push(Buffer.allocUnsafeSlow(${STREAM_CHUNK_BYTES}).fill(1))
  kept.push(Buffer.allocUnsafeSlow(512).fill(2))
}
parentPort.postMessage('filled')
parentPort.once('message', () => {
  chunks = null
  globalThis.gc()
  parentPort.postMessage(kept.length)
})
`

// First: a thread that ends leaves its arena's free space to the next thread, which would take its
// chunks from there whatever the threshold.
test('freed stream chunks leave the process without a trim', async () => {
  assert.ok(await mapLargeAllocations(STREAM_CHUNK_BYTES), 'glibc takes the threshold')
  const worker = new Worker(CHUNK_WORKER, { eval: true })
  try {
    const next = () => new Promise((resolve) => worker.once('message', resolve))
    assert.is(await next(), 'filled')
    const filled = process.memoryUsage.rss()
    worker.postMessage('free')
    assert.is(await next(), CHUNKS)
    await sleep(300) // Backing stores are released by the collector's sweeper, maybe later.
    const dropped = filled - process.memoryUsage.rss()
    const chunkBytes = CHUNKS * STREAM_CHUNK_BYTES
    assert.ok(dropped > chunkBytes / 2, `RSS dropped ${dropped} of ${chunkBytes} freed bytes`)
  } finally {
    await worker.terminate()
  }
})

test('a trim gives back memory a thread freed inside its arena', async () => {
  const trimmer = await startNativeTrimmer()
  assert.ok(trimmer, 'glibc is the C library here, so the trimmer starts')
  const worker = new Worker(FRAGMENTING_WORKER, { eval: true })
  try {
    const freed = new Promise((resolve) => worker.once('message', resolve))
    assert.is(await freed, 'freed')
    await sleep(300) // Backing stores are released by the collector's sweeper, maybe later.
    const before = process.memoryUsage.rss()
    await sleep(300)
    const freedBytes = HOLES * HOLE_BYTES
    const droppedAlone = before - process.memoryUsage.rss()
    assert.ok(droppedAlone < freedBytes / 4, `glibc kept the freed memory (${droppedAlone} bytes)`)
    const released = trimmer.trim()
    assert.ok(released > freedBytes / 2, `released ${released} of ${freedBytes} freed bytes`)
    // The small buffers between the holes are untouched.
    const kept = new Promise((resolve) => worker.once('message', resolve))
    worker.postMessage('count')
    assert.is(await kept, HOLES)
  } finally {
    trimmer.stop()
    await worker.terminate()
  }
})

test.run()
