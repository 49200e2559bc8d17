/** Goal: an actor thread gives its heap back once a burst is over, and leaves a busy thread alone.
 * Method: the policy is driven with samples of load and heap size; then a real worker thread runs
 * the reducer, makes ~40 MB of garbage in a burst and goes quiet: its heap must shrink within a
 * few seconds, long before V8's own memory reducer (8 s) would. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { setFlagsFromString } from 'node:v8'
import { Worker } from 'node:worker_threads'
import { HeapReducerPolicy } from '../../runtime/heap-reducer.js'
import {
  HEAP_REDUCE_CHECK_MS,
  HEAP_REDUCE_GROWTH_BYTES,
  HEAP_SHRINK_QUIET_MS,
} from '../../runtime/knobs.js'

setFlagsFromString('--expose-gc') // The reducer collects with `gc`, as in the node.

const MIB = 1024 * 1024
const busy = (heapBytes: number) => ({ utilization: 0.9, heapBytes })
const quiet = (heapBytes: number) => ({ utilization: 0.01, heapBytes })

test('a busy thread is never collected, however its heap grows', () => {
  const policy = new HeapReducerPolicy(10 * MIB)
  for (let i = 1; i <= 100; i++) assert.not.ok(policy.shouldCollect(busy(10 * MIB + i * MIB)))
})

test('a quiet thread whose heap grew is collected, and not again until it grows again', () => {
  const policy = new HeapReducerPolicy(10 * MIB)
  assert.not.ok(policy.shouldCollect(quiet(10 * MIB + HEAP_REDUCE_GROWTH_BYTES - 1)))
  assert.ok(policy.shouldCollect(quiet(10 * MIB + HEAP_REDUCE_GROWTH_BYTES)))
  policy.collected(11 * MIB)
  assert.not.ok(policy.shouldCollect(quiet(12 * MIB)))
  assert.ok(policy.shouldCollect(quiet(11 * MIB + HEAP_REDUCE_GROWTH_BYTES)))
})

test('growth is measured from the smallest heap since the last collection', () => {
  const policy = new HeapReducerPolicy(20 * MIB)
  assert.not.ok(policy.shouldCollect(quiet(8 * MIB))) // V8 shrank it on its own.
  assert.ok(policy.shouldCollect(quiet(8 * MIB + HEAP_REDUCE_GROWTH_BYTES)))
})

test('after a burst, one more collection once the thread has been quiet long enough', () => {
  const policy = new HeapReducerPolicy(10 * MIB)
  const quietChecks = Math.ceil(HEAP_SHRINK_QUIET_MS / HEAP_REDUCE_CHECK_MS)
  for (let i = 1; i < quietChecks * 2; i++) assert.not.ok(policy.shouldCollect(quiet(10 * MIB)))
  assert.not.ok(policy.shouldCollect(busy(10 * MIB))) // A burst that left the heap as it was.
  for (let i = 1; i < quietChecks; i++) assert.not.ok(policy.shouldCollect(quiet(10 * MIB)), `${i}`)
  assert.ok(policy.shouldCollect(quiet(10 * MIB)))
  policy.collected(10 * MIB)
  for (let i = 0; i < quietChecks * 2; i++) assert.not.ok(policy.shouldCollect(quiet(10 * MIB)))
  assert.not.ok(policy.shouldCollect(busy(10 * MIB)))
  assert.not.ok(policy.shouldCollect(busy(10 * MIB))) // Busy again: the quiet time starts over.
  for (let i = 1; i < quietChecks; i++) assert.not.ok(policy.shouldCollect(quiet(10 * MIB)))
  assert.ok(policy.shouldCollect(quiet(10 * MIB)))
})

// A burst of ~40 MB of objects that survive a while (like requests in flight), then quiet.
const BURSTY_WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const { getHeapSpaceStatistics } = require('node:v8')
const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_size
let collections = 0
import(workerData.reducer).then(({ startHeapReducer }) => {
  startHeapReducer(() => collections++)
  const end = Date.now() + 600
  let live = []
  while (Date.now() < end) {
    for (let i = 0; i < 1000; i++) live.push({ id: i, name: 'object ' + i, tags: [i, i + 1] })
    if (live.length > 200000) live = live.slice(100000)
  }
  live = null
  parentPort.postMessage(oldSpace())
  parentPort.on('message', (what) =>
    parentPort.postMessage(what === 'collections' ? collections : oldSpace()),
  )
})
`

test('a real thread gives back its old generation soon after a burst', async () => {
  const reducer = new URL('../../runtime/heap-reducer.js', import.meta.url).href
  const worker = new Worker(BURSTY_WORKER, { eval: true, workerData: { reducer } })
  const next = () => new Promise<number>((resolve) => worker.once('message', resolve))
  try {
    const afterBurst = await next()
    assert.ok(afterBurst > 20 * MIB, `the burst grew the old generation (${afterBurst} bytes)`)
    let now = afterBurst
    // Bounded: 3 s, well under the 8 s after which V8's own memory reducer may run.
    for (let i = 0; i < 30 && now > afterBurst / 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      worker.postMessage('size')
      now = await next()
    }
    assert.ok(now <= afterBurst / 2, `old generation ${afterBurst} -> ${now} bytes`)
    worker.postMessage('collections')
    assert.ok((await next()) >= 1, 'the collection was reported')
  } finally {
    await worker.terminate()
  }
})

test.run()
