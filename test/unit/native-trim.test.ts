/** Goal: the node gives back native memory its threads freed, which glibc alone keeps resident.
 * Method: a worker thread fills its arena with 64 KiB buffers between small ones it keeps, frees
 * the large ones; the freed memory stays resident until the trimmer's trim, which must give most
 * of it back. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { setFlagsFromString } from 'node:v8'
import { Worker } from 'node:worker_threads'
import { startNativeTrimmer } from '../../runtime/native-trim.js'

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

const settle = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

test('a trim gives back memory a thread freed inside its arena', async () => {
  const trimmer = await startNativeTrimmer()
  assert.ok(trimmer, 'glibc is the C library here, so the trimmer starts')
  const worker = new Worker(FRAGMENTING_WORKER, { eval: true })
  try {
    const freed = new Promise((resolve) => worker.once('message', resolve))
    assert.is(await freed, 'freed')
    await settle(300) // Backing stores are released by the collector's sweeper, maybe later.
    const before = process.memoryUsage.rss()
    await settle(300)
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
