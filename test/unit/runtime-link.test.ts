/** Goal: links between actors fail fast and never hang: a call without a reply times out at its
 * deadline, a closed link fails every pending call with `unavailable` at once, and too many
 * outstanding calls answer `busy`. Streams keep at most a window of chunks in flight and fail the
 * other end when a peer goes away. Method: real MessageChannels inside this one thread. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { MessageChannel } from 'node:worker_threads'
import { ok } from '../../protocol/errors.js'
import { STREAM_WINDOW_CHUNKS } from '../../protocol/timing.js'
import { PENDING_CALLS_MAX } from '../../runtime/knobs.js'
import { CallerLink, serveLink } from '../../runtime/link.js'
import { openStream, PortSink, PortSource } from '../../runtime/stream-port.js'

test('a call is answered through the link, its body transferred', async () => {
  const { port1, port2 } = new MessageChannel()
  serveLink(port2, async (msg) => ok({ echoed: msg.kind }))
  const link = new CallerLink(port1, 'peer')
  const result = await link.call({ kind: 'hello', deadlineMs: Date.now() + 1_000 })
  assert.equal(result, ok({ echoed: 'hello' }))
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

test('more than PENDING_CALLS_MAX outstanding calls answer busy without sending', async () => {
  const { port1, port2 } = new MessageChannel()
  let received = 0
  port2.on('message', () => received++)
  const link = new CallerLink(port1, 'slow')
  const calls = Array.from({ length: PENDING_CALLS_MAX }, () =>
    link.call({ kind: 'x', deadlineMs: Date.now() + 60_000 }),
  )
  const extra = await link.call({ kind: 'x', deadlineMs: Date.now() + 60_000 })
  assert.equal(extra.ok ? 'ok' : extra.code, 'busy')
  await new Promise((resolve) => setTimeout(resolve, 50))
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
  await new Promise((resolve) => setTimeout(resolve, 50))
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
  await new Promise((resolve) => setTimeout(resolve, 20))
  let failure: unknown = null
  try {
    for (let i = 0; i < STREAM_WINDOW_CHUNKS + 1; i++) await sink.write(new Uint8Array(4))
  } catch (error) {
    failure = error
  }
  assert.ok(failure !== null, 'the sender kept writing into a cancelled stream')
  assert.is(await sink.demand(), null)
})

test.run()
