/** Goal: the store shards' locks exclude exactly what they must: an exclusive claim no other shard
 * holds in any mode, a shared one beside other shards' shared claims, a shard's own claims never
 * in its way; a release moves the stripe's version and wakes a waiter, also on another thread;
 * pins are seen by every shard; releaseAll frees what a dead shard held. Method: SharedShardLocks
 * of several shards on one memory, in this thread and in a worker thread. */
import { Worker } from 'node:worker_threads'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createShardLockMemory, SharedShardLocks } from '../../runtime/shard-locks.js'

const WAKE_MS = 10_000

function shards(count: number): SharedShardLocks[] {
  const memory = createShardLockMemory(count)
  return Array.from({ length: count }, (_, shard) => new SharedShardLocks(memory, shard, count))
}

/** The end of the synchronous step: a shard's claims of a stripe it took in the same step are
 * never refused (a check, then the change it decided). */
const nextStep = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

test('exclusive excludes every other shard, shared only exclusive; own claims never', async () => {
  const [a, b, c] = shards(3) as [SharedShardLocks, SharedShardLocks, SharedShardLocks]
  assert.ok(a.claim('H\0x', 'exclusive'))
  assert.ok(a.claim('H\0x', 'exclusive'), 'a shard claims again what it holds')
  assert.ok(a.claim('H\0x', 'shared'))
  assert.not.ok(b.claim('H\0x', 'exclusive'))
  assert.not.ok(b.claim('H\0x', 'shared'))
  assert.ok(a.claim('H\0x', 'exclusive'), 'in the step that took it, a claim is no new one')
  a.release('H\0x', 'exclusive')
  await nextStep()
  assert.not.ok(a.claim('H\0x', 'exclusive'), 'the holder takes no new claim while b waits')
  a.release('H\0x', 'shared')
  a.release('H\0x', 'exclusive')
  assert.not.ok(b.claim('H\0x', 'shared'), 'held until its last exclusive claim goes')
  a.release('H\0x', 'exclusive')
  assert.ok(b.claim('H\0x', 'exclusive'), "the waiter's turn")
  assert.not.ok(a.claim('H\0x', 'shared'))
  b.release('H\0x', 'exclusive')
  assert.ok(a.claim('H\0x', 'shared'), 'a waiter of a stripe no one holds takes it')
  assert.ok(b.claim('B\0bucket', 'shared'))
  assert.ok(c.claim('B\0bucket', 'shared'))
  assert.not.ok(a.claim('B\0bucket', 'exclusive'))
  await nextStep()
  assert.not.ok(b.claim('B\0bucket', 'shared'), 'no new shared claim while a writer waits')
  b.release('B\0bucket', 'shared')
  b.stopWaiting('B\0bucket')
  assert.not.ok(a.claim('B\0bucket', 'exclusive'), 'c still shares it')
  c.release('B\0bucket', 'shared')
  assert.ok(a.claim('B\0bucket', 'exclusive'))
  assert.ok(a.claim('B\0bucket', 'shared'), 'its own exclusive claim is no bar')
  assert.not.ok(c.claim('B\0bucket', 'shared'))
  c.stopWaiting('B\0bucket')
  assert.ok(a.claim('B\0bucket', 'exclusive'), 'no one waits once c gave up')
})

test('a release moves the version and wakes a waiter; a deadline ends the wait', async () => {
  const [a, b] = shards(2) as [SharedShardLocks, SharedShardLocks]
  assert.ok(a.claim('H\0y', 'exclusive'))
  const seen = b.version('H\0y')
  assert.not.ok(b.claim('H\0y', 'exclusive'))
  const woken = b.changed('H\0y', seen, Date.now() + WAKE_MS)
  a.release('H\0y', 'exclusive')
  await woken
  assert.is.not(b.version('H\0y'), seen)
  assert.ok(b.claim('H\0y', 'exclusive'))
  const startedMs = Date.now()
  await b.changed('H\0y', b.version('H\0y'), Date.now() + 50)
  assert.ok(Date.now() - startedMs < WAKE_MS)
})

test('pins are every shard’s; releaseAll drops a dead shard’s claims and pins', () => {
  const [a, b] = shards(2) as [SharedShardLocks, SharedShardLocks]
  a.pin('file-1')
  assert.ok(b.pinned('file-1'))
  a.pin('file-1')
  a.unpin('file-1')
  assert.ok(b.pinned('file-1'))
  assert.throws(() => b.unpin('file-1'), /not pinned/)
  assert.ok(a.claim('H\0z', 'exclusive'))
  assert.ok(a.claim('B\0w', 'shared'))
  const seen = b.version('H\0z')
  a.releaseAll()
  assert.not.ok(b.pinned('file-1'))
  assert.is.not(b.version('H\0z'), seen)
  assert.ok(b.claim('H\0z', 'exclusive'))
  assert.ok(b.claim('B\0w', 'exclusive'))
})

/** A shard in a worker thread: claims `name`, says so, releases it when told. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
import(workerData.module).then(({ SharedShardLocks }) => {
  const locks = new SharedShardLocks(workerData.memory, 1, 2)
  parentPort.postMessage(locks.claim(workerData.name, 'exclusive'))
  parentPort.once('message', () => {
    locks.release(workerData.name, 'exclusive')
    parentPort.postMessage('released')
  })
})
`

test('a claim in another thread excludes this one till it goes; its release wakes it', async () => {
  const memory = createShardLockMemory(2)
  const here = new SharedShardLocks(memory, 0, 2)
  const module = new URL('../../runtime/shard-locks.js', import.meta.url).href
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { memory, module, name: 'H\0thread' },
  })
  try {
    const messages: unknown[] = []
    const next = (): Promise<unknown> =>
      new Promise((resolve) => worker.once('message', (message) => resolve(message)))
    messages.push(await next())
    assert.equal(messages, [true])
    const seen = here.version('H\0thread')
    assert.not.ok(here.claim('H\0thread', 'shared'))
    const woken = here.changed('H\0thread', seen, Date.now() + WAKE_MS)
    const released = next()
    worker.postMessage('release')
    assert.is(await released, 'released')
    await woken
    assert.ok(here.claim('H\0thread', 'exclusive'))
  } finally {
    await worker.terminate()
  }
})

test.run()
