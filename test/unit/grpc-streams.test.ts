/** Goal: node-to-node calls that carry a byte stream (Replica.Write sends one, Replica.Read reads
 * one) move the exact bytes, trailers and MD5 with backpressure on every hop, and end both sides
 * at once on every failure: an abort, a handler that stops early, a server killed mid-stream, the
 * deadline, a partition, a caller without the key; and each end counts the bytes it sent.
 * Method: real gRPC servers and GrpcPeers on 127.0.0.1 ephemeral ports inside this process, real
 * stream ports (runtime/stream-port.ts) in this one thread (a Write's caller writes to the sink
 * openWrite returns, and must keep its buffers), and a dispatch function standing in
 * for the serving actor. Backpressure is measured by counting what the writer wrote against what
 * the reader read once the writer stopped making progress: no timing is asserted. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import type { ByteSink, StreamHandle } from '../../protocol/actor.js'
import type { PeerMethod, PeerTarget } from '../../protocol/cluster.js'
import { fail, ok, ServiceError, type ErrorCode, type Result } from '../../protocol/errors.js'
import { STREAM_CHUNK_BYTES } from '../../protocol/limits.js'
import { GrpcPeers } from '../../runtime/cluster/grpc-peers.js'
import { startGrpcServer, type GrpcServer } from '../../runtime/cluster/grpc-server.js'
import { peerBytesSent } from '../../runtime/cluster/peer-bytes.js'
import { openStream, PortSink, PortSource } from '../../runtime/stream-port.js'
import { memoryLog } from '../support/fake-context.js'
import { startIngress } from '../support/grpc-ingress.js'

const CLUSTER = 'test-cluster'
const KEY = Buffer.from('a cluster secret of at least 32 characters', 'utf8')
/** Generous: no test depends on how loaded the machine is. */
const CALL_MS = 60_000
const MIB = 1024 * 1024
/** What a stalled transfer may hold between writer and reader: a local stream's window (512 KiB)
 * and a chunk in its pump on each side that has one, the sender's unflushed frames (512 KiB),
 * HTTP/2's stream window (STREAM_WINDOW_BYTES, 4 MiB), and the receiving gRPC stream's read
 * buffer (16 frames, 4 MiB). */
const IN_FLIGHT_BYTES_MAX = 12 * MIB
/** What a 2 MiB body's call sends besides the body: its head, end and answer, under 1 KiB each,
 * and a few bytes of protobuf framing for each of its 8 chunks. */
const FRAMING_BYTES_MAX = 4096

type Handler = (
  method: PeerMethod,
  from: string,
  body: unknown,
  stream: StreamHandle | undefined,
) => Promise<Result<unknown>>

interface TestNode {
  id: string
  target: PeerTarget
  server: GrpcServer
  peers: GrpcPeers
  /** Calls that reached the handler. */
  handled: number
  partitioned: Set<string>
}

const started: TestNode[] = []
/** Released at the end of each test, so no handler outlives it. */
let releaseHandlers = (): void => undefined

async function startNode(id: string, handler: Handler, key = KEY): Promise<TestNode> {
  const partitioned = new Set<string>()
  const signer = { key, clusterName: CLUSTER, nodeId: id }
  const node: TestNode = {
    id,
    target: { id, grpcAddr: '' },
    server: null as unknown as GrpcServer,
    peers: new GrpcPeers({ ...signer, tls: null, log: memoryLog([]) }),
    handled: 0,
    partitioned,
  }
  node.server = await startGrpcServer({
    ...signer,
    address: '127.0.0.1:0',
    tls: null,
    isPartitioned: (from) => partitioned.has(from),
    log: memoryLog([]),
    dispatch: (method, from, body, _deadlineMs, stream) => {
      node.handled++
      return handler(method, from, body, stream)
    },
  })
  node.target = { id, grpcAddr: `127.0.0.1:${node.server.port}` }
  started.push(node)
  return node
}

const noHandler: Handler = () => Promise.resolve(fail('internal', 'not expected to run'))

/** Requests and answers fit their methods' schemas (protocol/wire/replica.ts): a PUT's head, its
 * replica's answer, a GET of `key` for a range, and the head of its answer. */
const PUT_HEAD = {
  msg: {
    kind: 'object.put',
    bucket: 'bucket',
    key: 'k',
    http: { contentType: 'application/octet-stream' },
    userMeta: {},
    expect: {},
  },
}
const PUT_RESULT = { etag: '"e"', lastModifiedMs: 1, checksums: {} }

function getBody(key: string, range: { start: number; end: number }): object {
  return { msg: { kind: 'object.get', bucket: 'bucket', key }, range }
}

function getResult(size: number): object {
  const http = { contentType: 'application/octet-stream' }
  const info = { key: 'k', size, etag: '"e"', lastModifiedMs: 1, http, userMeta: {} }
  return { info: { ...info, checksums: {} } }
}

function deadline(ms = CALL_MS): number {
  return Date.now() + ms
}

/** Polls `done` every 10 ms, for at most 20 s. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_000 && !done(); i++) await sleep(10)
  assert.ok(done(), `waited too long for ${what}`)
}

/** What `promise` resolves with, or a failed assertion if it takes more than 20 s: a side that
 * was not told of a failure would wait for ever. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} never ended`)), 20_000)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls until `count` stops growing for 20 looks in a row (a stalled transfer). */
async function stalled(count: () => number): Promise<void> {
  let last = -1
  for (let still = 0; still < 20;) {
    await sleep(25)
    still = count() === last ? still + 1 : 0
    last = count()
  }
}

/** `total` bytes of a pattern: a random MiB repeated, so the MD5 catches any misplaced chunk. */
const PATTERN = randomBytes(MIB)
function patternChunk(offset: number, length: number): Uint8Array {
  const chunk = new Uint8Array(length)
  for (let filled = 0; filled < length;) {
    const from = (offset + filled) % MIB
    const piece = PATTERN.subarray(from, Math.min(MIB, from + length - filled))
    chunk.set(piece, filled)
    filled += piece.length
  }
  return chunk
}

/** Writes `total` pattern bytes to a sink, counting them; ends with trailers and MD5 unless
 * `abortAfter` says when to abort instead. Resolves with the write's failure, if any. */
function writeBody(
  sink: ByteSink,
  total: number,
  counter: { written: number },
  abortAfter?: number,
): Promise<ServiceError | null> {
  const md5 = createHash('md5')
  return (async () => {
    try {
      for (let offset = 0; offset < total; offset += STREAM_CHUNK_BYTES) {
        if (abortAfter !== undefined && offset >= abortAfter) {
          sink.abort('bad_digest', 'the writer found the body wrong')
          return null
        }
        const length = Math.min(STREAM_CHUNK_BYTES, total - offset)
        const chunk = patternChunk(offset, length)
        md5.update(chunk)
        await sink.write(chunk)
        counter.written += length
      }
      sink.end({ 'x-amz-checksum-crc32': 'AAAAAA==' }, md5.digest('hex'))
      return null
    } catch (error) {
      return error as ServiceError
    }
  })()
}

/** Reads a source to its end: the bytes' count, MD5, and what the stream's end said. */
async function readBody(source: PortSource, counter = { read: 0 }) {
  const md5 = createHash('md5')
  for (let chunk = await source.next(); chunk !== null; chunk = await source.next()) {
    md5.update(chunk)
    counter.read += chunk.length
    source.release(chunk)
  }
  return {
    bytes: counter.read,
    md5: md5.digest('hex'),
    sentMd5: source.md5() ?? null,
    trailers: source.trailers(),
  }
}

/** A Replica.Write of `total` pattern bytes from `caller`: the call's answer and what the writer
 * ended with (null, or the failure its write met). */
function writeCall(
  caller: TestNode,
  target: PeerTarget,
  total: number,
  options: { writer?: { written: number }; abortAfter?: number; deadlineMs?: number } = {},
) {
  const writer = options.writer ?? { written: 0 }
  const deadlineMs = options.deadlineMs ?? deadline()
  const { sink, answer } = caller.peers.openWrite(target, 'Replica.Write', PUT_HEAD, deadlineMs)
  const writing = writeBody(sink, total, writer, options.abortAfter)
  return { answer, writing: within(writing, 'the writer') }
}

/** A Replica.Read from `caller`: the head, and the source the bytes arrive on. */
async function readCall(
  caller: TestNode,
  target: PeerTarget,
  body: object,
  deadlineMs = deadline(),
): Promise<{ head: Result<unknown>; source: PortSource }> {
  const [mine, theirs] = openStream()
  const source = new PortSource(mine)
  const head = await caller.peers.callForBody(target, 'Replica.Read', body, theirs, deadlineMs)
  return { head, source }
}

/** The code the next read of `source` fails with. */
function nextFailure(source: PortSource): Promise<string> {
  return within(
    source.next().then(() => 'no failure', codeOf),
    'the reader',
  )
}

function assertFailed(result: Result<unknown>, code: string): void {
  assert.is(result.ok ? 'ok' : result.code, code)
}

function codeOf(error: unknown): string {
  return error instanceof ServiceError ? error.code : `not a ServiceError: ${String(error)}`
}

test.after.each(async () => {
  releaseHandlers()
  for (const node of started.splice(0)) {
    node.peers.close()
    await node.server.shutdown(0)
  }
})

test('a 20 MiB body crosses with its MD5 and trailers, and the Result returns', async () => {
  let seen: Record<string, unknown> = {}
  const server = await startNode('n2', async (method, from, body, stream) => {
    assert.ok(stream !== undefined)
    const read = await readBody(new PortSource(stream))
    seen = { method, from, body, ...read }
    return ok(PUT_RESULT)
  })
  const caller = await startNode('n1', noHandler)
  const total = 20 * MIB
  const write = caller.peers.openWrite(server.target, 'Replica.Write', PUT_HEAD, deadline())
  const writing = writeBody(write.sink, total, { written: 0 })
  const answer = await write.answer
  assert.is(await within(writing, 'the writer'), null)
  const expected = createHash('md5').update(patternChunk(0, total)).digest('hex')
  assert.equal(answer, { ok: true, value: PUT_RESULT, answeredBy: 'n2' })
  assert.equal(seen, {
    method: 'Replica.Write',
    from: 'n1',
    body: PUT_HEAD,
    bytes: total,
    md5: expected,
    sentMd5: expected,
    trailers: { 'x-amz-checksum-crc32': 'AAAAAA==' },
  })
})

test("a write neither keeps nor detaches the caller's chunk: it is free at once", async () => {
  const seen = { bytes: 0, md5: '' }
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    Object.assign(seen, await readBody(new PortSource(stream)))
    return ok(PUT_RESULT)
  })
  const caller = await startNode('n1', noHandler)
  const { sink, answer } = caller.peers.openWrite(
    server.target,
    'Replica.Write',
    PUT_HEAD,
    deadline(),
  )
  // Written without waiting, so gRPC still has earlier frames to send when each write returns;
  // the chunk, one buffer reused, is overwritten at once.
  const chunk = new Uint8Array(STREAM_CHUNK_BYTES)
  const md5 = createHash('md5')
  const writes: Promise<void>[] = []
  for (let n = 0; n < 16; n++) {
    chunk.set(patternChunk(n * STREAM_CHUNK_BYTES, STREAM_CHUNK_BYTES))
    md5.update(chunk)
    writes.push(sink.write(chunk))
    assert.is(chunk.length, STREAM_CHUNK_BYTES)
  }
  chunk.fill(0)
  await within(Promise.all(writes), 'the writes')
  sink.end({}, md5.digest('hex'))
  const result = await answer
  assert.ok(result.ok)
  assert.is(seen.bytes, 16 * STREAM_CHUNK_BYTES)
  assert.is(
    seen.md5,
    createHash('md5')
      .update(patternChunk(0, 4 * MIB))
      .digest('hex'),
  )
})

test('the bytes a body carries are counted as sent, by the writer and by the reader', async () => {
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    await readBody(new PortSource(stream))
    return ok(PUT_RESULT)
  })
  const caller = await startNode('n1', noHandler)
  const total = 2 * MIB
  const writeBefore = await peerBytesSent('Replica.Write')
  const call = writeCall(caller, server.target, total)
  assert.ok((await call.answer).ok)
  assert.is(await call.writing, null)
  // The body, plus the head, the end, the answer and a few bytes of framing per chunk.
  const written = (await peerBytesSent('Replica.Write')) - writeBefore
  assert.ok(written >= total && written < total + FRAMING_BYTES_MAX, `${written} bytes`)
  const reader = await startNode('n3', readHandler(total))
  const readBefore = await peerBytesSent('Replica.Read')
  const range = { start: 0, end: total - 1 }
  const { head, source } = await readCall(caller, reader.target, getBody('k', range))
  assert.ok(head.ok)
  assert.is((await readBody(source)).bytes, total)
  const read = (await peerBytesSent('Replica.Read')) - readBefore
  assert.ok(read >= total && read < total + FRAMING_BYTES_MAX, `${read} bytes`)
})

/** Serves Replica.Read from a body of `size` pattern bytes: answers its size, then writes the
 * bytes the caller's range asks for, counting them. */
function readHandler(size: number, counter = { written: 0 }, gate?: Promise<void>): Handler {
  return (_method, _from, body, stream) => {
    assert.ok(stream !== undefined)
    if ((body as { msg: { key: string } }).msg.key !== 'k') {
      return Promise.resolve(fail('no_such_key', 'no such key'))
    }
    const sink = new PortSink(stream)
    void (async () => {
      const range = await sink.demand()
      if (range === null) return
      await gate
      const md5 = createHash('md5')
      try {
        for (let offset = range.start; offset <= range.end; offset += STREAM_CHUNK_BYTES) {
          const length = Math.min(STREAM_CHUNK_BYTES, range.end + 1 - offset)
          const chunk = patternChunk(offset, length)
          md5.update(chunk)
          await sink.write(chunk)
          counter.written += length
        }
        sink.end({}, md5.digest('hex'))
      } catch {
        // The reader went away; its side has the failure.
      }
    })()
    return Promise.resolve(ok(getResult(size)))
  }
}

test('a handler that does not read holds the sender to a bounded window', async () => {
  const gate = new Promise<void>((resolve) => (releaseHandlers = resolve))
  const reader = { read: 0 }
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    const source = new PortSource(stream)
    await gate
    await readBody(source, reader)
    return ok(PUT_RESULT)
  })
  const caller = await startNode('n1', noHandler)
  const total = 48 * MIB
  const writer = { written: 0 }
  const call = writeCall(caller, server.target, total, { writer })
  await until(() => writer.written > 0, 'the first bytes')
  await stalled(() => writer.written)
  const held = writer.written - reader.read
  assert.ok(held <= IN_FLIGHT_BYTES_MAX, `${held} bytes held in flight`)
  releaseHandlers()
  assert.is((await call.answer).ok, true)
  assert.is(await call.writing, null)
  assert.is(reader.read, total)
})

test('a read of a range streams exactly those bytes after the head', async () => {
  const size = 5 * MIB
  const server = await startNode('n2', readHandler(size))
  const caller = await startNode('n1', noHandler)
  const range = { start: 1_000, end: 3 * MIB + 4_321 }
  const { head, source } = await readCall(caller, server.target, getBody('k', range))
  assert.equal(head, { ok: true, value: getResult(size), answeredBy: 'n2' })
  const read = await readBody(source)
  const expected = patternChunk(range.start, range.end + 1 - range.start)
  assert.is(read.bytes, expected.length)
  assert.is(read.md5, createHash('md5').update(expected).digest('hex'))
  assert.is(read.sentMd5, read.md5)
})

test("a handler's failure comes back with its code, and the reader gets no bytes", async () => {
  const server = await startNode('n2', readHandler(MIB))
  const caller = await startNode('n1', noHandler)
  const body = getBody('other', { start: 0, end: 10 })
  const { head, source } = await readCall(caller, server.target, body)
  assertFailed(head, 'no_such_key')
  assert.is(await nextFailure(source), 'no_such_key')
})

test('a reader that does not read holds the handler to a bounded window', async () => {
  const writer = { written: 0 }
  const size = 48 * MIB
  const server = await startNode('n2', readHandler(size, writer))
  const caller = await startNode('n1', noHandler)
  const body = getBody('k', { start: 0, end: size - 1 })
  const { head, source } = await readCall(caller, server.target, body)
  assert.is(head.ok, true)
  await until(() => writer.written > 0, 'the first bytes')
  await stalled(() => writer.written)
  assert.ok(writer.written <= IN_FLIGHT_BYTES_MAX, `${writer.written} bytes held in flight`)
  assert.is((await readBody(source)).bytes, size)
})

test("the sender's abort mid-body fails the handler's source with its code", async () => {
  let seen = ''
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    seen = await readBody(new PortSource(stream)).then(() => 'the end', codeOf)
    return fail('bad_digest', 'the body was aborted')
  })
  const caller = await startNode('n1', noHandler)
  const call = writeCall(caller, server.target, 8 * MIB, { abortAfter: 2 * MIB })
  assert.is(await call.writing, null)
  assertFailed(await call.answer, 'bad_digest')
  await until(() => seen !== '', "the handler's failure")
  assert.is(seen, 'bad_digest')
})

test('an abort with a code the receiver lacks (another build) arrives as internal', async () => {
  let seen = ''
  let told = ''
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    await readBody(new PortSource(stream)).then(
      () => (seen = 'the end'),
      (error: unknown) => {
        seen = codeOf(error)
        told = error instanceof Error ? error.message : ''
      },
    )
    return fail('internal', 'the body was aborted')
  })
  const caller = await startNode('n1', noHandler)
  const { sink, answer } = caller.peers.openWrite(
    server.target,
    'Replica.Write',
    PUT_HEAD,
    deadline(),
  )
  // What a newer build's sender could abort with: a code this build's ErrorCode lacks.
  sink.abort('no_such_widget' as ErrorCode, 'from a newer build')
  // The caller's own answer keeps the code it aborted with; the receiver's side is the check.
  assert.is((await within(answer, 'the answer')).ok, false)
  await until(() => seen !== '', "the handler's failure")
  assert.is(seen, 'internal')
  assert.match(told, 'no_such_widget: from a newer build')
})

test('a handler that answers early with a failure stops the sender', async () => {
  const server = await startNode('n2', () => Promise.resolve(fail('insufficient_storage', 'full')))
  const caller = await startNode('n1', noHandler)
  const total = 64 * MIB
  const writer = { written: 0 }
  const call = writeCall(caller, server.target, total, { writer })
  assertFailed(await call.answer, 'insufficient_storage')
  assert.is(codeOf(await call.writing), 'insufficient_storage')
  assert.ok(writer.written < total, 'the sender stopped')
})

test('a handler that cancels its source stops the sender with its code', async () => {
  const gate = new Promise<void>((resolve) => (releaseHandlers = resolve))
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    const source = new PortSource(stream)
    await source.next()
    source.cancel('checksum_mismatch', 'the handler found the body wrong')
    await gate
    return fail('internal', 'answered after the cancel')
  })
  const caller = await startNode('n1', noHandler)
  const call = writeCall(caller, server.target, 64 * MIB)
  assertFailed(await call.answer, 'checksum_mismatch')
  assert.is(codeOf(await call.writing), 'checksum_mismatch')
})

test('a server killed mid-body fails the sender with unavailable', async () => {
  const gate = new Promise<void>((resolve) => (releaseHandlers = resolve))
  const server = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    await new PortSource(stream).next()
    await gate
    return ok(PUT_RESULT)
  })
  const caller = await startNode('n1', noHandler)
  const writer = { written: 0 }
  const call = writeCall(caller, server.target, 64 * MIB, { writer })
  await until(() => server.handled === 1 && writer.written > 0, 'the handler')
  await server.server.shutdown(0)
  assertFailed(await call.answer, 'unavailable')
  assert.is(codeOf(await call.writing), 'unavailable')
})

test('a server killed mid-body fails the reader with unavailable', async () => {
  const gate = new Promise<void>((resolve) => (releaseHandlers = resolve))
  const server = await startNode('n2', readHandler(MIB, { written: 0 }, gate))
  const caller = await startNode('n1', noHandler)
  const body = getBody('k', { start: 0, end: MIB - 1 })
  const { head, source } = await readCall(caller, server.target, body)
  assert.is(head.ok, true)
  await server.server.shutdown(0)
  assert.is(await nextFailure(source), 'unavailable')
})

test('past the deadline both sides fail with timeout', async () => {
  const gate = new Promise<void>((resolve) => (releaseHandlers = resolve))
  let handlerSaw = ''
  const writeServer = await startNode('n2', async (_method, _from, _body, stream) => {
    assert.ok(stream !== undefined)
    const source = new PortSource(stream)
    await source.next()
    await gate
    handlerSaw = await readBody(source).then(() => 'the end', codeOf)
    return ok(PUT_RESULT)
  })
  const caller = await startNode('n1', noHandler)
  const deadlineMs = Date.now() + 500
  const call = writeCall(caller, writeServer.target, 64 * MIB, { deadlineMs })
  assertFailed(await call.answer, 'timeout')
  assert.is(codeOf(await call.writing), 'timeout')
  releaseHandlers()
  await until(() => handlerSaw !== '', "the handler's read")
  assert.is(handlerSaw, 'timeout')
  // A read whose handler never writes: the reader's source fails when the deadline passes.
  const readServer = await startNode('n3', readHandler(MIB, { written: 0 }, new Promise(() => {})))
  const body = getBody('k', { start: 0, end: 10 })
  const { head, source } = await readCall(caller, readServer.target, body, Date.now() + 1_000)
  // On a machine slow enough that even the head is late, it fails with timeout as well.
  if (!head.ok) assert.is(head.code, 'timeout')
  assert.is(await nextFailure(source), 'timeout')
})

test('a partitioned peer is refused both ways for streamed calls', async () => {
  const a = await startNode('n1', readHandler(MIB))
  const b = await startNode('n2', readHandler(MIB))
  a.peers.setPartitioned(['n2'])
  a.partitioned.add('n2')
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    const call = writeCall(from, to.target, 4 * MIB)
    assertFailed(await call.answer, 'unavailable')
    assert.is(codeOf(await call.writing), 'unavailable')
    const body = getBody('k', { start: 0, end: 10 })
    const { head, source } = await readCall(from, to.target, body)
    assertFailed(head, 'unavailable')
    assert.is(await nextFailure(source), 'unavailable')
  }
  assert.is(a.handled + b.handled, 0)
})

test('a caller without the key is refused before any handler runs', async () => {
  const server = await startNode('n2', readHandler(MIB))
  const stranger = await startNode('n1', noHandler, Buffer.from('another secret, long enough!!!!!'))
  const call = writeCall(stranger, server.target, 4 * MIB)
  const sent = await call.answer
  assertFailed(sent, 'unavailable')
  if (!sent.ok) assert.match(sent.detail, /bad signature/)
  assert.is(codeOf(await call.writing), 'unavailable')
  const body = getBody('k', { start: 0, end: 10 })
  const { head, source } = await readCall(stranger, server.target, body)
  assertFailed(head, 'unavailable')
  if (!head.ok) assert.match(head.detail, /bad signature/)
  assert.is(await nextFailure(source), 'unavailable')
  assert.is(server.handled, 0)
})

test('a head that does not fit its schema is refused before any handler runs', async () => {
  const server = await startNode('n2', readHandler(MIB))
  const caller = await startNode('n1', noHandler)
  // A kind Replica.Write does not take: its bytes would have nowhere to go.
  const notWritten = { msg: { ...PUT_HEAD.msg, kind: 'object.get' } }
  const write = caller.peers.openWrite(server.target, 'Replica.Write', notWritten, deadline())
  const writing = within(writeBody(write.sink, 4 * MIB, { written: 0 }), 'the writer')
  assertFailed(await write.answer, 'invalid_argument')
  assert.is(codeOf(await writing), 'invalid_argument')
  const backwards = getBody('k', { start: 10, end: 0 })
  const { head, source } = await readCall(caller, server.target, backwards)
  assertFailed(head, 'invalid_argument')
  if (!head.ok) assert.match(head.detail, /range: a range ends before its start/)
  assert.is(await nextFailure(source), 'invalid_argument')
  assert.is(server.handled, 0)
})

test('grpc-ingress hands Replica calls and their stream to replica-store', async () => {
  const secret = KEY.toString('utf8')
  const answer = fail('invalid_request', 'replica-store does not serve it yet')
  const ingress = await startIngress({
    clusterName: CLUSTER,
    nodeId: 'n2',
    secret,
    mode: 'gateway',
    answer,
  })
  try {
    const caller = await startNode('n1', noHandler)
    const target = { id: 'n2', grpcAddr: `127.0.0.1:${ingress.port}` }
    const call = writeCall(caller, target, 64 * MIB)
    assertFailed(await call.answer, 'invalid_request')
    assert.is(codeOf(await call.writing), 'invalid_request')
    assert.is(ingress.reached[0]?.to, 'replica-store')
    assert.is(ingress.reached[0]?.msg.method, 'Replica.Write')
    assert.ok(ingress.reached[0]?.msg.stream !== undefined, 'the handler got a stream')
  } finally {
    await ingress.stop()
  }
})

test.run()
