/** Goal: the node-to-node transport authenticates every call before any handler runs, answers with
 * the handler's own Result, keeps its deadlines and bounds, cuts partitioned peers both ways, and
 * counts the bytes each end sends.
 * Method: real gRPC servers and clients on 127.0.0.1 ephemeral ports inside this process; each
 * server's handler counts its calls, so a refused call is seen never to reach it. Replays and
 * skewed clocks are made by hand with @grpc/grpc-js and the transport's own signer. TLS runs with
 * a CA and a node certificate that openssl makes in a temp dir (skipped, saying so, without it). */
import { toolFound } from '../support/tools.js'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { connect } from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  Client,
  credentials,
  Metadata,
  status,
  type ChannelCredentials,
  type ChannelOptions,
} from '@grpc/grpc-js'
import type { PeerMethod } from '../../protocol/cluster.js'
import { EnvironmentError } from '../../protocol/environment-error.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import { signCall } from '../../runtime/cluster/call-auth.js'
import { GrpcPeers } from '../../runtime/cluster/grpc-peers.js'
import { startGrpcServer, type GrpcServer } from '../../runtime/cluster/grpc-server.js'
import { PEER_MESSAGE_BYTES_MAX, rpcOf } from '../../runtime/cluster/grpc-service.js'
import { channelTlsOptions, readGrpcTls, type GrpcTls } from '../../runtime/cluster/grpc-tls.js'
import {
  CONNECTION_WINDOW_BYTES,
  STREAM_WINDOW_BYTES,
} from '../../runtime/cluster/http2-windows.js'
import { peerBytesSent } from '../../runtime/cluster/peer-bytes.js'
import { memoryLog, type LogEntry } from '../support/fake-context.js'
import { startIngress } from '../support/grpc-ingress.js'
import { skipCase } from '../support/skip.js'
import { gossipEnvelope } from '../support/peer-bodies.js'

const CLUSTER = 'test-cluster'
const KEY = Buffer.from('a cluster secret of at least 32 characters', 'utf8')
/** Generous: no test depends on how loaded the machine is. */
const CALL_MS = 10_000

type Handler = (method: PeerMethod, from: string, body: unknown) => Promise<Result<unknown>>

interface TestNode {
  id: string
  address: string
  server: GrpcServer
  peers: GrpcPeers
  /** Calls that reached the handler. */
  handled: { method: PeerMethod; from: string; body: unknown }[]
  partitioned: Set<string>
  /** What the node's transport logged (refusals by schema). */
  logs: LogEntry[]
}

const started: TestNode[] = []

/** Answers the body it was sent: a Membership envelope, whose answer is one too. */
const echo: Handler = (_method, _from, body) => Promise.resolve(ok(body))

/** A well-formed Membership.Ping (its answer, an Ack, is the same envelope) from `id`. */
function ping(id = 'n1'): object {
  return gossipEnvelope(CLUSTER, id)
}

async function startNode(
  id: string,
  options: { key?: Buffer; cluster?: string; handler?: Handler; tls?: GrpcTls; callsMax?: number },
): Promise<TestNode> {
  const handled: TestNode['handled'] = []
  const partitioned = new Set<string>()
  const signer = { key: options.key ?? KEY, clusterName: options.cluster ?? CLUSTER, nodeId: id }
  const logs: LogEntry[] = []
  const log = memoryLog(logs)
  const server = await startGrpcServer({
    ...signer,
    address: '127.0.0.1:0',
    tls: options.tls ?? null,
    isPartitioned: (from) => partitioned.has(from),
    log,
    dispatch: (method, from, body) => {
      handled.push({ method, from, body })
      return (options.handler ?? echo)(method, from, body)
    },
    ...(options.callsMax === undefined ? {} : { callsMax: options.callsMax }),
  })
  const peers = new GrpcPeers({ ...signer, tls: options.tls ?? null, log })
  const address = `127.0.0.1:${server.port}`
  const node = { id, address, server, peers, handled, partitioned, logs }
  started.push(node)
  return node
}

/** Both sides of a partition, as the thread host sets them: the caller and the server. */
function partition(node: TestNode, ids: string[]): void {
  node.peers.setPartitioned(ids)
  node.partitioned.clear()
  for (const id of ids) node.partitioned.add(id)
}

function deadline(ms = CALL_MS): number {
  return Date.now() + ms
}

/** One call made by hand: the raw status, whatever the transport's client would make of it. */
function rawCall(
  address: string,
  method: PeerMethod,
  body: Buffer,
  headers: Record<string, string>,
  channel: ChannelCredentials = credentials.createInsecure(),
  options: ChannelOptions = {},
): Promise<{ code: status; details: string }> {
  const rpc = rpcOf(method).definition
  const client = new Client(address, channel, options)
  const metadata = new Metadata()
  for (const [name, value] of Object.entries(headers)) metadata.set(name, value)
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      rpc.path,
      rpc.requestSerialize,
      rpc.responseDeserialize,
      { body },
      metadata,
      { deadline: new Date(deadline()) },
      (error) => {
        client.close()
        resolve(error === null ? { code: status.OK, details: '' } : error)
      },
    )
  })
}

test.after.each(async () => {
  for (const node of started.splice(0)) {
    node.peers.close()
    await node.server.shutdown(1_000)
  }
})

test('an authenticated call round-trips its JSON body and the answering node', async () => {
  const a = await startNode('n1', {})
  const b = await startNode('n2', {})
  const body = ping()
  const answer = await a.peers.call(
    { id: 'n2', grpcAddr: b.address },
    'Membership.Ping',
    body,
    deadline(),
  )
  assert.equal(answer, { ok: true, value: body, answeredBy: 'n2' })
  assert.equal(b.handled, [{ method: 'Membership.Ping', from: 'n1', body }])
})

test('each end counts the bytes it sends by method: the request, then the answer', async () => {
  const a = await startNode('n1', {})
  const b = await startNode('n2', {})
  const body = { ...ping(), cluster: 'x'.repeat(200) }
  const [pingBefore, otherBefore] = [
    await peerBytesSent('Membership.Ping'),
    await peerBytesSent('Membership.PushPull'),
  ]
  const answer = await a.peers.call(
    { id: 'n2', grpcAddr: b.address },
    'Membership.Ping',
    body,
    deadline(),
  )
  assert.ok(answer.ok)
  // Both ends run in this thread: the counter has n1's request and n2's answer, each a message
  // of one length-delimited field.
  const request = JSON.stringify(body).length
  const reply = JSON.stringify(ok(body)).length
  const sent = (await peerBytesSent('Membership.Ping')) - pingBefore
  assert.is(sent, messageBytes(request) + messageBytes(reply))
  assert.is(await peerBytesSent('Membership.PushPull'), otherBefore)
})

/** A JsonMessage of `length` body bytes as protobuf writes it: tag, varint length, bytes. */
function messageBytes(length: number): number {
  let varint = 1
  for (let rest = length >>> 7; rest > 0; rest >>>= 7) varint++
  return 1 + varint + length
}

test("a handler's failure comes back with its own error code", async () => {
  const a = await startNode('n1', {})
  const b = await startNode('n2', {
    handler: () => Promise.resolve(fail('no_such_bucket', 'asked to fail')),
  })
  const target = { id: 'n2', grpcAddr: b.address }
  const answer = await a.peers.call(target, 'Catalog.Apply', { records: [] }, deadline())
  assert.is(answer.ok, false)
  if (!answer.ok) assert.is(answer.code, 'no_such_bucket')
  assert.is(answer.answeredBy, 'n2')
})

test('a code the caller does not know (a peer of another build) arrives as internal', async () => {
  // What a newer build's handler could answer: a code this build's ErrorCode lacks.
  const newer = { ok: false, code: 'no_such_widget', detail: 'from a newer build' }
  const handler: Handler = () => Promise.resolve(newer as unknown as Result<unknown>)
  const a = await startNode('n1', {})
  const b = await startNode('n2', { handler })
  const answer = await a.peers.call(
    { id: 'n2', grpcAddr: b.address },
    'Membership.Ping',
    ping(),
    deadline(),
  )
  assert.is(answer.ok, false)
  if (answer.ok) return
  assert.is(answer.code, 'internal')
  assert.match(answer.detail, 'no_such_widget: from a newer build')
})

test('a request that does not fit its schema is refused before the handler, logged', async () => {
  const server = await startNode('n2', {})
  const caller = await startNode('n1', {})
  const target = { id: 'n2', grpcAddr: server.address }
  const unknownField = { ...ping(), extra: 1 }
  const wrongType = { ...ping(), wallMs: 'soon' }
  for (const body of [unknownField, wrongType, { records: [] }]) {
    const answer = await caller.peers.call(target, 'Membership.Ping', body, deadline())
    assert.is(answer.ok, false)
    if (!answer.ok) assert.is(answer.code, 'invalid_argument')
  }
  assert.is(server.handled.length, 0)
  const issues = server.logs.map((entry) => entry.fields['issue'])
  assert.equal(issues, [
    '(body): Unrecognized key: "extra"',
    'wallMs: Invalid input: expected number, received string',
    'cluster: Invalid input: expected string, received undefined',
  ])
  assert.ok(server.logs.every((entry) => entry.fields['method'] === 'Membership.Ping'))
})

test('an answer that does not fit its schema is unavailable to the caller, logged', async () => {
  const answers = [ok({ pong: true }), ok(null), { ok: false }]
  const server = await startNode('n2', { handler: () => Promise.resolve(answers.shift() as never) })
  const caller = await startNode('n1', {})
  const target = { id: 'n2', grpcAddr: server.address }
  for (let i = 0; i < 3; i++) {
    const answer = await caller.peers.call(target, 'Membership.Ping', ping(), deadline())
    assert.is(answer.ok, false)
    if (!answer.ok) assert.is(answer.code, 'unavailable')
  }
  assert.is(server.handled.length, 3)
  const logged = caller.logs.map((entry) => [entry.fields['method'], entry.fields['issue']])
  assert.equal(logged, [
    ['Membership.Ping', 'value.cluster: Invalid input: expected string, received undefined'],
    ['Membership.Ping', 'value: Invalid input: expected object, received null'],
    ['Membership.Ping', 'code: Invalid input: expected string, received undefined'],
  ])
})

test('a caller that knew only the address learns the id of the node that answered', async () => {
  const a = await startNode('n1', {})
  const b = await startNode('n2', {})
  const answer = await a.peers.call(
    { id: null, grpcAddr: b.address },
    'Membership.PushPull',
    { ...ping(), members: [] },
    deadline(),
  )
  assert.is(answer.ok, true)
  assert.is(answer.answeredBy, 'n2')
  // And an address that another node answers is not the node the caller meant.
  const wrong = await a.peers.call(
    { id: 'n3', grpcAddr: b.address },
    'Membership.Ping',
    ping(),
    deadline(),
  )
  assert.is(wrong.ok, false)
  if (!wrong.ok) assert.is(wrong.code, 'unavailable')
})

test('a caller with another secret or cluster name is refused before the handler', async () => {
  const server = await startNode('n2', {})
  const otherKey = await startNode('n1', { key: Buffer.from('another secret, also long enough!!') })
  const otherCluster = await startNode('n3', { cluster: 'another-cluster' })
  for (const caller of [otherKey, otherCluster]) {
    const target = { id: 'n2', grpcAddr: server.address }
    const answer = await caller.peers.call(target, 'Membership.Ping', ping(), deadline())
    assert.is(answer.ok, false)
    if (!answer.ok) {
      assert.is(answer.code, 'unavailable')
      assert.match(answer.detail, /another cluster|bad signature/)
    }
  }
  assert.is(server.handled.length, 0)
})

test('a replayed call and one stamped 2 minutes off are refused', async () => {
  const server = await startNode('n2', {})
  const body = Buffer.from(JSON.stringify(ping()))
  const signer = { key: KEY, clusterName: CLUSTER, nodeId: 'n1' }
  const headers = signCall(signer, 'Membership.Ping', body, Date.now())
  const first = await rawCall(server.address, 'Membership.Ping', body, headers)
  assert.is(first.code, status.OK)
  const replayed = await rawCall(server.address, 'Membership.Ping', body, headers)
  assert.is(replayed.code, status.UNAUTHENTICATED)
  assert.is(replayed.details, 'replayed')
  for (const offMs of [-120_000, 120_000]) {
    const skewed = signCall(signer, 'Membership.Ping', body, Date.now() + offMs)
    const answer = await rawCall(server.address, 'Membership.Ping', body, skewed)
    assert.is(answer.code, status.UNAUTHENTICATED)
    assert.is(answer.details, 'timestamp outside the window')
  }
  // A body other than the one signed, under a fresh nonce, is refused too.
  const forged = signCall(signer, 'Membership.Ping', body, Date.now())
  const tampered = await rawCall(server.address, 'Membership.Ping', Buffer.from('{"a":1}'), forged)
  assert.is(tampered.code, status.UNAUTHENTICATED)
  assert.is(server.handled.length, 1)
})

test('a call past its deadline answers timeout within a bound', async () => {
  let release = (): void => undefined
  const gate = new Promise<void>((resolve) => (release = resolve))
  const server = await startNode('n2', {
    handler: async (_method, _from, body) => {
      await gate
      return ok(body)
    },
  })
  const caller = await startNode('n1', {})
  const startedMs = Date.now()
  const target = { id: 'n2', grpcAddr: server.address }
  const answer = await caller.peers.call(target, 'Membership.Ping', ping(), Date.now() + 200)
  const tookMs = Date.now() - startedMs
  release()
  assert.is(answer.ok, false)
  if (!answer.ok) assert.is(answer.code, 'timeout')
  // The deadline is 200 ms and the backstop 1 s later; 5 s leaves room for a loaded machine.
  assert.ok(tookMs < 5_000, `took ${tookMs} ms`)
})

test('calls past the server bound answer busy', async () => {
  let release = (): void => undefined
  const gate = new Promise<void>((resolve) => (release = resolve))
  const server = await startNode('n2', {
    callsMax: 1,
    handler: async (_method, _from, body) => {
      await gate
      return ok(body)
    },
  })
  const caller = await startNode('n1', {})
  const target = { id: 'n2', grpcAddr: server.address }
  const held = caller.peers.call(target, 'Membership.Ping', ping(), deadline())
  // The first call holds the one place once the handler has it.
  for (let i = 0; i < 500 && server.handled.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  assert.is(server.handled.length, 1)
  const refused = await caller.peers.call(target, 'Membership.Ping', ping(), deadline())
  assert.is(refused.ok, false)
  if (!refused.ok) assert.is(refused.code, 'busy')
  release()
  assert.is((await held).ok, true)
  assert.is(server.handled.length, 1)
})

test('a body over 4 MiB is refused by the caller and by the server', async () => {
  const server = await startNode('n2', {})
  const caller = await startNode('n1', {})
  const big = { text: 'x'.repeat(PEER_MESSAGE_BYTES_MAX) }
  const target = { id: 'n2', grpcAddr: server.address }
  const answer = await caller.peers.call(target, 'Catalog.Apply', big, deadline())
  assert.is(answer.ok, false)
  if (!answer.ok) assert.is(answer.code, 'invalid_argument')
  // A client without the bound of its own meets the server's.
  const bytes = Buffer.from(JSON.stringify(big))
  const signer = { key: KEY, clusterName: CLUSTER, nodeId: 'n1' }
  const headers = signCall(signer, 'Catalog.Apply', bytes, Date.now())
  const unbounded = { 'grpc.max_send_message_length': -1 }
  const raw = await rawCall(server.address, 'Catalog.Apply', bytes, headers, undefined, unbounded)
  assert.is(raw.code, status.RESOURCE_EXHAUSTED)
  assert.is(server.handled.length, 0)
})

test('a streamed answer longer than one message arrives whole', async () => {
  // 500 records (a page's most) of 12 KiB of base64 each: past 5 MiB.
  const value = 'A'.repeat(12 * 1024)
  const records = Array.from({ length: 500 }, (_, i) => ({
    key: `B/bucket-${i}`,
    value,
    stamp: '0'.repeat(24),
  }))
  const page = { records, next: null }
  assert.ok(JSON.stringify(page).length > PEER_MESSAGE_BYTES_MAX + 1024 * 1024)
  const server = await startNode('n2', { handler: () => Promise.resolve(ok(page)) })
  const caller = await startNode('n1', {})
  const target = { id: 'n2', grpcAddr: server.address }
  const answer = await caller.peers.call<typeof page>(
    target,
    'Catalog.Snapshot',
    { after: null, limit: 500 },
    deadline(),
  )
  assert.is(answer.ok, true)
  if (answer.ok) assert.equal(answer.value, page)
  assert.is(answer.answeredBy, 'n2')
})

test('a partitioned peer is refused in both directions, and the partition heals', async () => {
  const a = await startNode('n1', {})
  const b = await startNode('n2', {})
  const toB = { id: 'n2', grpcAddr: b.address }
  const toA = { id: 'n1', grpcAddr: a.address }
  partition(a, ['n2'])
  const out = await a.peers.call(toB, 'Membership.Ping', ping(), deadline())
  assert.is(out.ok, false)
  if (!out.ok) assert.is(out.code, 'unavailable')
  assert.is(b.handled.length, 0)
  const into = await b.peers.call(toA, 'Membership.Ping', ping(), deadline())
  assert.is(into.ok, false)
  if (!into.ok) assert.is(into.code, 'unavailable')
  assert.is(a.handled.length, 0)
  // A seed called by its address alone: its answer is dropped once it names a cut-off node.
  const seed = await a.peers.call(
    { id: null, grpcAddr: b.address },
    'Membership.PushPull',
    { ...ping(), members: [] },
    deadline(),
  )
  assert.is(seed.ok, false)
  partition(a, [])
  assert.is((await a.peers.call(toB, 'Membership.Ping', ping(), deadline())).ok, true)
  assert.is((await b.peers.call(toA, 'Membership.Ping', ping(), deadline())).ok, true)
})

test('an unreachable peer answers unavailable', async () => {
  const caller = await startNode('n1', {})
  const closed = await freePort()
  const target = { id: 'n9', grpcAddr: `127.0.0.1:${closed}` }
  const answer = await caller.peers.call(target, 'Membership.Ping', ping(), deadline())
  assert.is(answer.ok, false)
  if (!answer.ok) assert.is(answer.code, 'unavailable')
})

test('clients are bounded: the least recently used closes past the bound', async () => {
  const server = await startNode('n2', {})
  const peers = new GrpcPeers({
    key: KEY,
    clusterName: CLUSTER,
    nodeId: 'n1',
    tls: null,
    clientsMax: 2,
    log: memoryLog([]),
  })
  try {
    // Three spellings of one server are three addresses to the client cache.
    const addresses = [
      server.address,
      `localhost:${server.server.port}`,
      `[::ffff:127.0.0.1]:${server.server.port}`,
    ]
    for (const grpcAddr of addresses)
      await peers.call({ id: null, grpcAddr }, 'Membership.Ping', ping(), deadline())
    assert.equal(peers.clientAddresses, addresses.slice(1))
  } finally {
    peers.close()
  }
})

test('the server opens its HTTP/2 windows past the 64 KiB default to every session', async () => {
  const node = await startNode('n1', {})
  const session = connect(`http://${node.address}`)
  try {
    // The windows come after the session's first settings: a second SETTINGS, a WINDOW_UPDATE.
    const opened = (): boolean =>
      session.remoteSettings.initialWindowSize === STREAM_WINDOW_BYTES &&
      session.state.remoteWindowSize === CONNECTION_WINDOW_BYTES
    const until = Date.now() + CALL_MS
    while (!opened() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10))
    assert.is(session.remoteSettings.initialWindowSize, STREAM_WINDOW_BYTES)
    assert.is(session.state.remoteWindowSize, CONNECTION_WINDOW_BYTES)
  } finally {
    session.destroy()
  }
})

test('a port in use is an environment error naming SVC_NODE_GRPC_ADDR', async () => {
  const holder = createServer()
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const port = (holder.address() as { port: number }).port
  try {
    await startGrpcServer({
      key: KEY,
      clusterName: CLUSTER,
      nodeId: 'n1',
      address: `127.0.0.1:${port}`,
      tls: null,
      isPartitioned: () => false,
      log: memoryLog([]),
      dispatch: () => Promise.resolve(ok(null)),
    })
    assert.unreachable('bound a port in use')
  } catch (error) {
    assert.instance(error, EnvironmentError)
    assert.is((error as EnvironmentError).variable, 'SVC_NODE_GRPC_ADDR')
    assert.match((error as EnvironmentError).reason, /in use/)
  } finally {
    holder.close()
  }
})

test('grpc-ingress hands Membership calls to the gossiper and answers its Result', async () => {
  const secret = KEY.toString('utf8')
  const pong = ok(gossipEnvelope(CLUSTER, 'n2'))
  const ingress = await startIngress({
    clusterName: CLUSTER,
    nodeId: 'n2',
    secret,
    mode: 'cluster',
    answer: pong,
  })
  const reached = ingress.reached
  try {
    const caller = await startNode('n1', {})
    const target = { id: 'n2', grpcAddr: `127.0.0.1:${ingress.port}` }
    const answer = await caller.peers.call(target, 'Membership.Ping', ping(), deadline())
    assert.equal(answer, { ...pong, answeredBy: 'n2' })
    assert.is(reached.length, 1)
    assert.is(reached[0]?.to, 'gossiper')
    assert.is(reached[0]?.msg.kind, 'peer.request')
    assert.is(reached[0]?.msg.method, 'Membership.Ping')
    assert.is(reached[0]?.msg.from, 'n1')
    assert.equal(reached[0]?.msg.body, ping())
    await caller.peers.call(target, 'Catalog.Apply', { records: [] }, deadline())
    assert.is(reached[1]?.to, 'replica-store')
  } finally {
    await ingress.stop()
  }
})

function freePort(): Promise<number> {
  const probe = createServer()
  return new Promise((resolve) => {
    probe.listen(0, '127.0.0.1', () => {
      const port = (probe.address() as { port: number }).port
      probe.close(() => resolve(port))
    })
  })
}

/** A CA and one node certificate (for 127.0.0.1), made by openssl; null without openssl. */
function makeCertificates(dir: string): Record<string, string> | null {
  const openssl = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
  }
  // CI has openssl (the HTTPS tests need it too): there a missing one fails.
  if (!toolFound('openssl', ['version'])) return null
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-subj',
    '/CN=test-ca',
    '-days',
    '1',
  ])
  openssl(['req', ...ec, '-keyout', 'node.key', '-out', 'node.csr', '-subj', '/CN=n1'])
  writeFileSync(join(dir, 'node.ext'), 'subjectAltName=IP:127.0.0.1,DNS:n1\n')
  openssl([
    'x509',
    '-req',
    '-in',
    'node.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'node.crt',
    '-days',
    '1',
    '-extfile',
    'node.ext',
  ])
  return {
    SVC_GRPC_TLS_CERT: join(dir, 'node.crt'),
    SVC_GRPC_TLS_KEY: join(dir, 'node.key'),
    SVC_GRPC_TLS_CA: join(dir, 'ca.crt'),
  }
}

test('with TLS a call works, and a client without a certificate gets nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'grpc-tls-'))
  // Node warns (DEP0123) of a TLS server name that is an IP address, as a node's address is.
  const warnings: string[] = []
  const onWarning = (warning: Error & { code?: string }): void => {
    warnings.push(warning.code ?? warning.name)
  }
  process.on('warning', onWarning)
  try {
    const files = makeCertificates(dir)
    if (files === null) {
      skipCase('openssl is not on this machine, so no certificates can be made')
      return
    }
    const tls = readGrpcTls(files)
    assert.ok(tls !== null)
    const server = await startNode('n2', { tls })
    const caller = await startNode('n1', { tls })
    const target = { id: 'n2', grpcAddr: server.address }
    const answer = await caller.peers.call(target, 'Membership.Ping', ping(), deadline())
    assert.is(answer.ok, true)
    await new Promise((resolve) => setImmediate(resolve))
    assert.not.ok(warnings.includes('DEP0123'), 'the server name sent is no IP address')
    const body = Buffer.from(JSON.stringify(ping()))
    const headers = signCall(
      { key: KEY, clusterName: CLUSTER, nodeId: 'n1' },
      'Membership.Ping',
      body,
      Date.now(),
    )
    const noCertificate = credentials.createSsl(tls.ca, null, null, {
      checkServerIdentity: () => undefined,
    })
    const raw = await rawCall(
      server.address,
      'Membership.Ping',
      body,
      headers,
      noCertificate,
      channelTlsOptions(tls),
    )
    assert.is.not(raw.code, status.OK)
    const plaintext = await startNode('n3', {})
    const refused = await plaintext.peers.call(target, 'Membership.Ping', ping(), deadline())
    assert.is(refused.ok, false)
    assert.is(server.handled.length, 1)
    // Some but not all of the files set is refused, naming one that is missing.
    const partial = { SVC_GRPC_TLS_CERT: files['SVC_GRPC_TLS_CERT'] ?? '' }
    assert.throws(
      () => readGrpcTls(partial),
      (error: unknown) => error instanceof EnvironmentError,
    )
  } finally {
    process.off('warning', onWarning)
    rmSync(dir, { recursive: true, force: true })
  }
})

test.run()
