/** Goal: links between actors fail fast and never hang: a call without a reply times out at its
 * deadline, a closed link fails every pending call with `unavailable` at once, and too many
 * outstanding calls answer `busy`. Streams keep at most a window of chunks in flight and fail the
 * other end when a peer goes away, and released chunk buffers return to their sender.
 * Method: real MessageChannels inside this one thread. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { MessageChannel } from 'node:worker_threads'
import { ok } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import { STREAM_WINDOW_CHUNKS } from '../../protocol/timing.js'
import { freeChunks } from '../../runtime/chunk-pool.js'
import { PENDING_CALLS_MAX } from '../../runtime/knobs.js'
import { CallerLink, serveLink, type Batch } from '../../runtime/link.js'
import { openStream, PortSink, PortSource } from '../../runtime/stream-port.js'
import { pollUntil, sleep } from '../support/wait.js'

test('a call is answered through the link, its body transferred', async () => {
  const { port1, port2 } = new MessageChannel()
  serveLink(port2, async (msg) => ok({ echoed: msg.kind }))
  const link = new CallerLink(port1, 'peer')
  const result = await link.call({ kind: 'hello', deadlineMs: Date.now() + 1_000 })
  assert.equal(result, ok({ echoed: 'hello' }))
  link.close('done')
})

test('calls made in one turn travel as one message and each gets its own reply', async () => {
  const { port1, port2 } = new MessageChannel()
  const batchSizes: number[] = []
  port2.on('message', (batch: Batch) => batchSizes.push(batch.length))
  serveLink(port2, async (msg) => ok({ echoed: msg.kind }))
  const link = new CallerLink(port1, 'peer')
  const deadlineMs = Date.now() + 1_000
  const kinds = ['a', 'b', 'c', 'd']
  const results = await Promise.all(kinds.map((kind) => link.call({ kind, deadlineMs })))
  assert.equal(
    results,
    kinds.map((kind) => ok({ echoed: kind })),
  )
  assert.equal(batchSizes, [kinds.length])
  link.close('done')
})

test('a request that cannot be sent fails alone; the rest of its batch is answered', async () => {
  const { port1, port2 } = new MessageChannel()
  serveLink(port2, async (msg) => ok({ echoed: msg.kind }))
  const link = new CallerLink(port1, 'peer')
  const deadlineMs = Date.now() + 1_000
  const unclonable = { kind: 'bad', deadlineMs, callback: () => 'functions do not clone' }
  const [before, bad, after] = await Promise.all([
    link.call({ kind: 'before', deadlineMs }),
    link.call(unclonable),
    link.call({ kind: 'after', deadlineMs }),
  ])
  assert.equal(before, ok({ echoed: 'before' }))
  assert.equal(bad?.ok ? 'ok' : bad?.code, 'internal')
  assert.equal(after, ok({ echoed: 'after' }))
  link.close('done')
})

test('a reply that cannot be sent fails its call at once, not at its deadline', async () => {
  const { port1, port2 } = new MessageChannel()
  serveLink(port2, async () => ok({ callback: () => 'functions do not clone' }))
  const link = new CallerLink(port1, 'peer')
  const started = Date.now()
  const result = await link.call({ kind: 'x', deadlineMs: Date.now() + 10_000 })
  assert.equal(result.ok ? 'ok' : result.code, 'internal')
  assert.ok(Date.now() - started < 5_000)
  link.close('done')
})

test('a call without a reply fails with timeout at its deadline', async () => {
  const { port1, port2 } = new MessageChannel()
  port2.on('message', () => undefined) // Receives, never answers.
  const link = new CallerLink(port1, 'silent')
  const started = Date.now()
  const result = await link.call({ kind: 'x', deadlineMs: Date.now() + 100 })
  assert.equal(result.ok ? 'ok' : result.code, 'timeout')
  assert.ok(Date.now() - started < 2_000)
  link.close('done')
  port2.close()
})

test('closing a link fails pending calls at once and later calls immediately', async () => {
  const { port1, port2 } = new MessageChannel()
  port2.on('message', () => undefined)
  const link = new CallerLink(port1, 'dying')
  const pending = link.call({ kind: 'x', deadlineMs: Date.now() + 60_000 })
  link.close('peer died')
  const result = await pending
  assert.equal(result.ok ? 'ok' : result.code, 'unavailable')
  const later = await link.call({ kind: 'x', deadlineMs: Date.now() + 60_000 })
  assert.equal(later.ok ? 'ok' : later.code, 'unavailable')
  port2.close()
})

test('a call never sent closes the stream it carries: its other end fails at once', async () => {
  const { port1, port2 } = new MessageChannel()
  port2.on('message', () => undefined)
  const link = new CallerLink(port1, 'gone')
  const deadlineMs = Date.now() + 60_000
  // Each sender is listening before its call, as the ingress's is.
  const [queuedLocal, queuedRemote] = openStream()
  const [lateLocal, lateRemote] = openStream()
  const sinks = [new PortSink(queuedLocal), new PortSink(lateLocal)]
  const queuedMsg = { kind: 'queued', deadlineMs, stream: queuedRemote }
  const queued = link.call(queuedMsg)
  link.close('peer died') // Before the turn ends: the request never left the outbox.
  const lateMsg = { kind: 'late', deadlineMs, stream: lateRemote }
  const late = await link.call(lateMsg)
  assert.equal((await queued).ok ? 'ok' : 'failed', 'failed')
  assert.equal(late.ok ? 'ok' : late.code, 'unavailable')
  for (const sink of sinks) {
    const started = Date.now()
    // No credit ever came: the write waits for the receiver, which is gone.
    const failure = await sink.write(new Uint8Array(4)).then(
      () => null,
      (error: unknown) => error,
    )
    assert.is((failure as { code?: string } | null)?.code, 'unavailable')
    assert.ok(Date.now() - started < 5_000, 'the sender waited for credit from nobody')
  }
  port2.close()
})

test('more than PENDING_CALLS_MAX outstanding calls answer busy without sending', async () => {
  const { port1, port2 } = new MessageChannel()
  let received = 0
  port2.on('message', (batch: Batch) => (received += batch.length))
  const link = new CallerLink(port1, 'slow')
  const calls = Array.from({ length: PENDING_CALLS_MAX }, () =>
    link.call({ kind: 'x', deadlineMs: Date.now() + 60_000 }),
  )
  const extra = await link.call({ kind: 'x', deadlineMs: Date.now() + 60_000 })
  assert.equal(extra.ok ? 'ok' : extra.code, 'busy')
  assert.ok(await pollUntil(() => received >= PENDING_CALLS_MAX), `received ${received}`)
  await sleep(50) // A slow machine only makes an extra send less likely to show, never a failure.
  assert.is(received, PENDING_CALLS_MAX)
  link.close('done')
  await Promise.all(calls)
  port2.close()
})

test('a stream sender never runs more than the window ahead of its receiver', async () => {
  const [left, right] = openStream()
  const sink = new PortSink(left)
  const source = new PortSource(right)
  let written = 0
  const writer = (async () => {
    for (let i = 0; i < STREAM_WINDOW_CHUNKS * 3; i++) {
      await sink.write(new Uint8Array(16).fill(i))
      written++
    }
    sink.end({ trailer: 'yes' })
  })()
  assert.ok(await pollUntil(() => written >= STREAM_WINDOW_CHUNKS), `wrote ${written}`)
  await sleep(50) // Time to run past its credit, were it able to.
  assert.is(written, STREAM_WINDOW_CHUNKS, 'the sender ran past its credit')
  const received: number[] = []
  for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
    received.push(chunk[0]!)
  }
  await writer
  assert.equal(
    received,
    Array.from({ length: STREAM_WINDOW_CHUNKS * 3 }, (_, i) => i),
  )
  assert.equal(source.trailers(), { trailer: 'yes' })
})

test('an aborted stream fails the receiver with the sender code', async () => {
  const [left, right] = openStream()
  const sink = new PortSink(left)
  const source = new PortSource(right)
  sink.abort('bad_digest', 'checksum wrong')
  try {
    await source.next()
    assert.unreachable('next() should reject')
  } catch (error) {
    assert.is((error as { code: string }).code, 'bad_digest')
  }
})

test('a receiver that cancels makes the sender fail instead of waiting for credit', async () => {
  const [left, right] = openStream()
  const sink = new PortSink(left)
  const source = new PortSource(right)
  source.cancel('incomplete_body', 'client went away')
  await sleep(20)
  let failure: unknown = null
  try {
    for (let i = 0; i < STREAM_WINDOW_CHUNKS + 1; i++) await sink.write(new Uint8Array(4))
  } catch (error) {
    failure = error
  }
  assert.ok(failure !== null, 'the sender kept writing into a cancelled stream')
  assert.is(await sink.demand(), null)
})

test('a released chunk goes back to its sender for reuse; views and late ones do not', async () => {
  const [sending, receiving] = openStream()
  const sink = new PortSink(sending)
  const source = new PortSource(receiving)
  const before = freeChunks()
  const first = sink.buffer()
  first.fill(7)
  await sink.write(first)
  assert.is(first.byteLength, 0, 'the written buffer was transferred away')
  const received = await source.next()
  assert.ok(received !== null)
  assert.is(freeChunks(), before, 'nothing is reused before the receiver releases it')
  source.release(received)
  assert.ok(await pollUntil(() => freeChunks() === before + 1, 1_000), 'the buffer came back')
  const reused = sink.buffer()
  assert.is(reused[0], 7, 'the next buffer is the released one, old bytes and all')
  // A view into a larger buffer is never pooled: it is not the whole of what it points into.
  source.release(new Uint8Array(2 * STREAM_CHUNK_BYTES).subarray(0, STREAM_CHUNK_BYTES))
  sink.end()
  assert.is(await source.next(), null)
  // After the end the port is closed: a late release stays on the receiver's thread.
  const late = new Uint8Array(STREAM_CHUNK_BYTES)
  source.release(late)
  assert.is(freeChunks(), before + 1)
})

test('a buffer the sender took and did not write goes back to its free list', () => {
  const [sending] = openStream()
  const sink = new PortSink(sending)
  const spare = sink.buffer()
  spare.fill(9)
  const before = freeChunks()
  sink.giveBack(spare)
  assert.is(freeChunks(), before + 1)
  assert.is(sink.buffer()[0], 9, 'the next buffer is the one given back')
  sink.abort('internal', 'test over')
})

test.run()
