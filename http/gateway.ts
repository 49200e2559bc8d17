/** @module The HTTP surface of a gateway: a stateless router with no storage and no identities of
 * its own. It forwards every S3 and admin request, as received (method, path, headers, body: a
 * SigV4 signature covers the Host header, which is kept), to a storage node that gossip knows as
 * Alive and serving, the one that answers best (gateway-choice.ts), and streams the answer back.
 * The node authenticates and serves it, so the client gets exactly what that node gives, and
 * counts the client's failed logins under the address the gateway vouches for (client-address.ts).
 * The gateway answers itself only /health (200 while a node can serve), /metrics (its own actors
 * and cluster series) and /admin/node/health (its own state, once a node has accepted the caller's
 * credentials for the same request).
 *
 * No request waits on one node that does not answer (a process frozen by a GC pause, a stalled
 * disk or a VM migration keeps its port and takes the bytes, but answers nothing): a node that
 * shows no sign of life within FIRST_BYTE_WAIT_MS is given up, up to ATTEMPTS_MAX nodes. A GET or
 * HEAD is asked of the next node too, and the first answer is taken. A PutObject or UploadPart
 * (run twice, the same bytes under the same name) goes to the next node instead: its body, up to
 * REPLAY_BODY_MAX, is read whole first and sent again. Any other body is announced with `Expect:
 * 100-continue` and goes only once the node asked for it: until then the request goes to the next
 * node instead; after it, and for another request without a body (a DELETE), the node may be
 * running it, slow rather than frozen, and is waited for (ANSWER_TIMEOUT_MS) rather than made to
 * run it twice, as long as it shows progress: a node that took such a body and then neither takes
 * more of it nor answers a liveness probe for STALL_MS is given up with a 503 whose outcome is
 * unknown (the node may finish the request when it resumes). A node that answers before it has
 * read the whole body (a 404 for a missing bucket) and closes has its answer passed on, as any
 * reverse proxy does, though the rest of the body failed to go. A node given up is cut with a
 * TCP reset: a frozen node that resumes reads the request and the reset together and does not run
 * it (FORWARDED_HEADER), so it is not run twice, unless the node read it just before it froze (as
 * when a client's own retry follows a timeout; a versioned bucket may then keep a second
 * version). A request that no node takes answers S3's 503 with Retry-After, and a node lost in
 * the middle of an answer cuts the connection, as that node's own death would. */
import type { KeyObject } from 'node:crypto'
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { Counter, type Registry } from 'prom-client'
import type { Mesh } from '../protocol/actor.js'
import type { Member } from '../protocol/cluster.js'
import { errorXml } from './s3/xml/s3-xml.js'
import { firstWithin } from '../protocol/timing.js'
import { membershipView } from './admin/cluster-app.js'
import { splitAddress } from './host-port.js'
import { CLIENT_ADDRESS_HEADER, signedClientAddress } from './client-address.js'
import { FORWARDED_HEADER, NOT_SERVING_HEADER, type IngressState, type Listener } from './app.js'
import { NodeChoice } from './gateway-choice.js'
import { NodeLiveness } from './gateway-liveness.js'
import { closeAfterAnswer } from './early-answer.js'
import { inOrder } from './in-order.js'
import { s3ErrorFor } from './s3/errors.js'
import { newRequestId } from './s3/router.js'

/** Membership is looked at again when the last look is older than this. */
const VIEW_TTL_MS = 1_000
const VIEW_TIMEOUT_MS = 1_000
/** Connections to one node at once; more requests wait in the agent's queue. */
const SOCKETS_PER_NODE_MAX = 256
/** An answer that does not start within this is given up (a node that hangs). */
const ANSWER_TIMEOUT_MS = 120_000
/** Nodes tried for one request at most. */
const ATTEMPTS_MAX = 3
/** How long a node may take to show it lives before the request goes to another node as well
 * (GET, HEAD) or instead (the others): the first byte of its answer, or, before a streamed body,
 * its 100 Continue. A live node's answer starts far sooner; the next node's answer still comes
 * well within the few seconds a client should ever wait. */
const FIRST_BYTE_WAIT_MS = 1_000
/** How long a node that took a streamed body may show no progress before it is given up with a
 * 503, which the client retries. Progress is a write of the body flushed to the node, or, while
 * the gateway waits on the node (a write not flushed, or the whole body sent and no answer yet),
 * the node's answer to a liveness probe (gateway-liveness.ts): a node storing a large object may
 * take far longer than this to answer, and is waited for (ANSWER_TIMEOUT_MS) as long as its
 * process runs; a frozen one stops answering probes. Under the few seconds a client should ever
 * wait, and above the second a loaded node may take to answer a probe. */
const STALL_MS = 2_000
/** How often a node that took a streamed body is checked for progress. */
const STALL_CHECK_MS = 250
/** Bodies up to this size are read whole before they are sent, so that they can be sent again to
 * another node; a larger body is streamed once. */
const REPLAY_BODY_MAX = 1024 * 1024
/** Bytes of such bodies that one ingress thread holds at once; past it, bodies are streamed. */
const REPLAY_BYTES_MAX = 64 * 1024 * 1024
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
/** Headers the gateway sets itself: a client's copy never reaches a node. */
const OWN_HEADERS = new Set(['expect', FORWARDED_HEADER, CLIENT_ADDRESS_HEADER])
/** Headers that belong to one connection, not to the request (RFC 9110 section 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
])

export function createGatewayListener(
  mesh: Mesh,
  state: IngressState,
  registry: Registry,
  addressKey: KeyObject,
): Listener {
  const agent = new Agent({ keepAlive: true, maxSockets: SOCKETS_PER_NODE_MAX })
  const nodes = servingNodes(mesh)
  const attempts = new Counter({
    name: 'svc_gateway_attempts_total',
    help:
      'Requests sent to a storage node, by why that node: first (the cheapest), hedge (a GET or ' +
      'HEAD whose node was slow), slow (the node before it was given up), refused (unreachable ' +
      'or not serving)',
    labelNames: ['reason'],
    registers: [registry],
  })
  const liveness = new NodeLiveness(() => mesh.now())
  const gateway = { mesh, agent, choice: new NodeChoice(), attempts, addressKey, liveness }
  const budget = new ReplayBudget()
  // Pipelined requests of one connection go to nodes one after the other, as a node serves them:
  // a GET behind a PUT of the same key must not reach another node before the PUT is stored.
  return inOrder((incoming, outgoing) => {
    const path = (incoming.url ?? '/').split('?')[0]
    if (!state.serving) return unavailable(mesh, outgoing, incoming, 'the gateway is not serving')
    if (incoming.method === 'GET' && path === '/health') {
      void nodes().then((found) => {
        outgoing.writeHead(found.length > 0 ? 200 : 503, { 'content-type': 'text/plain' })
        outgoing.end(found.length > 0 ? 'ok' : 'no storage node is serving')
      })
      return
    }
    if (incoming.method === 'GET' && path === '/metrics') {
      mesh.metricsText().then(
        (text) => {
          outgoing.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
          outgoing.end(text)
        },
        () => {
          outgoing.writeHead(503, { 'retry-after': '1' })
          outgoing.end('metrics unavailable')
        },
      )
      return
    }
    const own = incoming.method === 'GET' && path === '/admin/node/health'
    forward(gateway, nodes, budget, incoming, outgoing, own).catch((error: unknown) => {
      mesh.log.error({ err: String(error) }, 'forwarding failed')
      unavailable(mesh, outgoing, incoming, 'the request could not be forwarded')
    })
  })
}

/** Storage nodes Alive and serving, from a look at membership at most VIEW_TTL_MS old. */
function servingNodes(mesh: Mesh): () => Promise<Member[]> {
  let last: { atMs: number; nodes: Promise<Member[]> } | null = null
  return () => {
    const now = mesh.now()
    if (last === null || now - last.atMs > VIEW_TTL_MS) {
      const nodes = membershipView(mesh, now + VIEW_TIMEOUT_MS).then((view) =>
        view.ok
          ? view.value.members.filter(
              (member) =>
                member.kind === 'node' && member.status === 'Alive' && member.phase === 'serving',
            )
          : [],
      )
      last = { atMs: now, nodes }
    }
    return last.nodes
  }
}

/** How a request's body travels: none; read whole first, so that it can be sent again to another
 * node; or streamed once, after the node's 100 Continue. */
type Body = { kind: 'none' } | { kind: 'buffered'; bytes: Buffer } | { kind: 'streamed' }

/** What one request shares with its attempts. */
interface Forwarding {
  mesh: Mesh
  /** Vouches for the client's address to the node (client-address.ts). */
  addressKey: KeyObject
  agent: Agent
  choice: NodeChoice
  liveness: NodeLiveness
  attempts: Counter<'reason'>
  incoming: IncomingMessage
  headers: Record<string, string | string[]>
  body: Body
}

/** A failure may say why, for the 503 that ends the request. */
type Outcome = { kind: 'answer'; answer: IncomingMessage } | { kind: 'failed'; reason?: string }

/** One node's try at a request. */
interface Attempt {
  node: Member
  /** Settles once: the node's answer, or its failure before any answer. */
  outcome: Promise<Outcome>
  /** Whether a streamed body has begun to go to this node (it can go nowhere else). */
  committed: () => boolean
  /** Settles when the node asks for a streamed body (its 100 Continue); never otherwise. */
  continued: Promise<void>
  /** Gives the node up with a TCP reset: a frozen node reads it with the request when it resumes,
   * and does not run the request (FORWARDED_HEADER). */
  abandon: () => void
}

/** An attempt whose outcome came. */
interface Settled {
  attempt: Attempt
  outcome: Outcome
}

async function forward(
  gateway: Omit<Forwarding, 'incoming' | 'headers' | 'body'>,
  nodes: () => Promise<Member[]>,
  buffer: ReplayBudget,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  ownHealth: boolean,
): Promise<void> {
  const { mesh, choice } = gateway
  let failure: string | undefined
  const candidates = choice.order(await nodes(), mesh.now()).slice(0, ATTEMPTS_MAX)
  const idempotent = isIdempotentWrite(incoming)
  const body = await readBody(incoming, buffer, idempotent)
  if (body === null) return void outgoing.destroy()
  const request: Forwarding = {
    ...gateway,
    incoming,
    headers: forwardedHeaders(incoming, body, gateway.addressKey, mesh.now()),
    body,
  }
  // GET and HEAD change nothing: a second node is asked besides the slow one (a hedged request),
  // and the first answer is taken. Any other request goes to one node at a time.
  const hedged = SAFE_METHODS.has(incoming.method ?? '') && body.kind === 'none'
  // A node silent for FIRST_BYTE_WAIT_MS is given up while the request may still run elsewhere: a
  // read, an object or part PUT whose body the gateway holds, or any request whose streamed body
  // the node has not asked for. A node that took the body of another request may be running it
  // (a slow node, not a frozen one): sent again, it would run twice, and a second
  // CompleteMultipartUpload, say, fails.
  const resendable = hedged || (idempotent && body.kind !== 'streamed')
  const pending = new Set<Attempt>()
  const abandonAll = (): void => {
    for (const attempt of pending) attempt.abandon()
    pending.clear()
  }
  // A client gone before the answer: its attempts are given up, and no other is made.
  let gone = false
  const onClose = (): void => {
    gone = true
    abandonAll()
  }
  outgoing.once('close', onClose)
  try {
    let next = 0
    let reason = 'first'
    for (;;) {
      if (gone) return
      const node = pending.size === 0 || reason !== '' ? candidates[next] : undefined
      if (node !== undefined) {
        gateway.attempts.inc({ reason })
        pending.add(attemptAt(request, node))
        next++
      }
      if (pending.size === 0) break
      // The last node, or one that has the body, is waited for (within ANSWER_TIMEOUT_MS).
      const bounded =
        next < candidates.length &&
        [...pending].every((a) => resendable || (body.kind === 'streamed' && !a.committed()))
      const waits = [...pending].map(async (attempt): Promise<Settled> => ({
        attempt,
        outcome: await attempt.outcome,
      }))
      // A node's 100 Continue shows it lives, and the body then goes to it alone: from then on it
      // is waited for as one that has the body, not given up after FIRST_BYTE_WAIT_MS.
      const continued = [...pending].map(async (attempt): Promise<'continued'> => {
        await attempt.continued
        return 'continued'
      })
      const settled = bounded
        ? await firstWithin<Settled | 'continued'>([...waits, ...continued], FIRST_BYTE_WAIT_MS)
        : await Promise.race(waits)
      reason = ''
      if (settled === 'continued') continue
      if (settled === null) {
        // A body that began to go to a node cannot go to another one.
        if (body.kind === 'streamed' && [...pending].some((a) => a.committed())) continue
        // Nothing from the node within FIRST_BYTE_WAIT_MS: another node is tried.
        if (!hedged) abandonAll()
        reason = hedged ? 'hedge' : 'slow'
        continue
      }
      pending.delete(settled.attempt)
      const { outcome } = settled
      if (outcome.kind === 'answer') {
        abandonAll()
        // A body not read whole (the node answered early) closes the client's connection after
        // the answer, lingering (early-answer.ts), as the node closes the gateway's.
        const unread = body.kind === 'streamed' && !incoming.complete
        return relay(mesh, outcome.answer, outgoing, ownHealth, unread ? incoming : null)
      }
      // Failed before any answer: again elsewhere, unless a streamed body went (in part) to it.
      failure = outcome.reason
      if (settled.attempt.committed()) break
      reason = 'refused'
    }
  } finally {
    outgoing.off('close', onClose)
    if (body.kind === 'buffered') buffer.release(body.bytes.length)
  }
  unavailable(mesh, outgoing, incoming, failure ?? 'no storage node could take the request')
}

/** Bytes of bodies read whole that one ingress thread holds at once. */
class ReplayBudget {
  private held = 0

  take(bytes: number): boolean {
    if (this.held + bytes > REPLAY_BYTES_MAX) return false
    this.held += bytes
    return true
  }

  release(bytes: number): void {
    this.held -= bytes
  }
}

/** The query of a PutObject or UploadPart (x-id names the operation, as the AWS SDKs send it). */
const REPLAYABLE_QUERY = new Set(['partNumber', 'uploadId', 'x-id'])

/** PutObject and UploadPart, which run again store the same bytes under the same name: a PUT of a
 * key (a path of bucket and key: a one-segment path may be CreateBucket) with no subresource but a
 * part's, not a copy, and without a condition (a second run of a conditional PUT would fail it). */
function isIdempotentWrite(incoming: IncomingMessage): boolean {
  if (incoming.method !== 'PUT') return false
  const headers = incoming.headers
  const conditional = headers['if-match'] !== undefined || headers['if-none-match'] !== undefined
  if (conditional || headers['x-amz-copy-source'] !== undefined) return false
  const [path = '', query = ''] = (incoming.url ?? '/').split('?', 2)
  if (path.split('/').filter((segment) => segment !== '').length < 2) return false
  const names = new URLSearchParams(query).keys()
  return [...names].every((name) => REPLAYABLE_QUERY.has(name))
}

/** The request's body as it will travel; null when the client went away while it was read. */
async function readBody(
  incoming: IncomingMessage,
  budget: ReplayBudget,
  idempotent: boolean,
): Promise<Body | null> {
  const length = Number(incoming.headers['content-length'] ?? '0')
  const chunked = incoming.headers['transfer-encoding'] !== undefined
  if (!chunked && !(length > 0)) return { kind: 'none' }
  const whole = idempotent && !chunked && length <= REPLAY_BODY_MAX
  if (!whole || !budget.take(length)) return { kind: 'streamed' }
  try {
    const chunks: Buffer[] = []
    for await (const chunk of incoming) chunks.push(chunk as Buffer)
    return { kind: 'buffered', bytes: Buffer.concat(chunks) }
  } catch {
    budget.release(length)
    return null
  }
}

function forwardedHeaders(
  incoming: IncomingMessage,
  body: Body,
  addressKey: KeyObject,
  nowMs: number,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !OWN_HEADERS.has(name)) {
      headers[name] = value
    }
  }
  const client = incoming.socket.remoteAddress ?? ''
  const forwardedFor = incoming.headers['x-forwarded-for']
  headers['x-forwarded-for'] = forwardedFor === undefined ? client : `${forwardedFor}, ${client}`
  headers[FORWARDED_HEADER] = '1'
  // The node counts failed logins under this address rather than the gateway's own. Once per
  // request: every attempt at it, on whichever node, carries the same.
  if (client !== '') {
    const { method = '', url = '' } = incoming
    headers[CLIENT_ADDRESS_HEADER] = signedClientAddress(addressKey, method, url, client, nowMs)
  }
  // The node's HTTP server sends 100 Continue as it reads the headers: a live node is seen before
  // the body, which can then still go to another.
  if (body.kind === 'streamed') headers['expect'] = '100-continue'
  return headers
}

/** Sends the request to `node`. */
function attemptAt(request: Forwarding, node: Member): Attempt {
  const { mesh, choice, incoming, body } = request
  const [host, port] = splitAddress(node.httpAddr)
  const handle = choice.sent(node.id, mesh.now())
  let committed = false
  let abandoned = false
  let answered = false
  let stallCheck: NodeJS.Timeout | undefined
  let onContinue = (): void => {}
  const continued = new Promise<void>((resolve) => {
    onContinue = resolve
  })
  const upstream = httpRequest({
    host,
    port,
    method: incoming.method,
    path: incoming.url,
    headers: request.headers,
    agent: request.agent,
    timeout: ANSWER_TIMEOUT_MS,
  })
  const outcome = new Promise<Outcome>((resolve) => {
    upstream.on('response', (answer) => {
      answered = true
      clearInterval(stallCheck)
      choice.answered(node.id, handle, mesh.now())
      const notServing =
        answer.statusCode === 503 && answer.headers[NOT_SERVING_HEADER] !== undefined
      // The node is starting or stopping and ran nothing: the request goes to the next node.
      if (notServing && !committed) {
        answer.resume()
        resolve({ kind: 'failed' })
        return
      }
      // A streamed body the node did not ask for stays unsent, or went in part to a node that
      // answered early: this connection cannot be reused.
      if (body.kind === 'streamed') answer.once('end', () => upstream.destroy())
      resolve({ kind: 'answer', answer })
    })
    upstream.on('continue', () => {
      if (abandoned || body.kind !== 'streamed' || upstream.socket === null) return
      committed = true
      const writes = watchWrites(upstream.socket, () => mesh.now())
      let sent = false
      upstream.once('finish', () => {
        sent = true
      })
      // A node that froze after its 100 Continue would hold the request until ANSWER_TIMEOUT_MS.
      stallCheck = setInterval(() => {
        const now = mesh.now()
        const waitedOn = writes.pendingSinceMs !== null || (sent && !answered)
        if (!waitedOn) writes.progressMs = now
        // Progress of its own shows this node lives; else, a probe of it (one for all requests).
        if (now - writes.progressMs <= STALL_CHECK_MS) return
        const seenMs = request.liveness.lastSeen(node.httpAddr)
        if (now - Math.max(seenMs, writes.progressMs) <= STALL_MS) return
        const reason = sent
          ? 'the storage node stopped answering after it took the body'
          : 'the storage node stopped taking the body'
        mesh.log.warn({ node: node.id, reason }, 'forwarding given up')
        giveUp()
        resolve({ kind: 'failed', reason })
      }, STALL_CHECK_MS)
      incoming.pipe(upstream)
      onContinue()
    })
    upstream.on('timeout', () => upstream.destroy(new Error('the node did not answer in time')))
    upstream.on('error', (error) => {
      clearInterval(stallCheck)
      choice.settled(node.id, handle, mesh.now())
      if (!abandoned) mesh.log.warn({ node: node.id, err: String(error) }, 'forwarding failed')
      resolve({ kind: 'failed' })
    })
  })
  if (body.kind === 'none') upstream.end()
  else if (body.kind === 'buffered') upstream.end(body.bytes)
  else upstream.flushHeaders()
  return {
    node,
    outcome,
    committed: () => committed,
    continued,
    abandon: giveUp,
  }

  function giveUp(): void {
    clearInterval(stallCheck)
    if (abandoned) return
    abandoned = true
    choice.settled(node.id, handle, mesh.now())
    if (upstream.socket !== null && !upstream.socket.destroyed) upstream.socket.resetAndDestroy()
    upstream.destroy()
  }
}

/** How the writes of a streamed body to a node's socket go. */
interface Writes {
  /** Since when a write waits to be flushed to the node; null when none waits. */
  pendingSinceMs: number | null
  /** When the node last showed progress: a write flushed, or the gateway not waiting on it. */
  progressMs: number
  /** Whether a write failed as the node closed (it answered early). */
  closed: boolean
}

const socketWrites = new WeakMap<Socket, Writes>()

/** Watches the writes of a streamed body to `socket`, the socket of one request at a time. A node
 * may answer before it reads the whole body (a 404 for a missing bucket, a 403) and close: the
 * body's next write fails (EPIPE, ECONNRESET) while the answer waits unread in the socket, and
 * Node's HTTP client would drop the answer with the socket. Like any reverse proxy, the gateway
 * takes a failed write of the body as the end of it: the rest is dropped, and the answer is read
 * and passed on; a node that closed without one fails the request as before (socket hang up). */
function watchWrites(socket: Socket, now: () => number): Writes {
  const known = socketWrites.get(socket)
  const writes: Writes = known ?? { pendingSinceMs: null, progressMs: now(), closed: false }
  writes.pendingSinceMs = null
  writes.progressMs = now()
  if (known !== undefined) return writes
  socketWrites.set(socket, writes)
  /** The callback of a write: flushed, or failed as the node closed, which ends the body. */
  const flushed =
    (callback: (error?: Error | null) => void) =>
    (error?: Error | null): void => {
      writes.pendingSinceMs = null
      writes.progressMs = now()
      if (error !== null && error !== undefined && closedByPeer(error)) writes.closed = true
      callback(writes.closed ? null : error)
    }
  const write = socket._write.bind(socket)
  socket._write = (chunk, encoding, callback): void => {
    if (writes.closed) return callback()
    writes.pendingSinceMs = now()
    write(chunk, encoding, flushed(callback))
  }
  const writev = socket._writev?.bind(socket)
  if (writev !== undefined) {
    socket._writev = (chunks, callback): void => {
      if (writes.closed) return callback()
      writes.pendingSinceMs = now()
      writev(chunks, flushed(callback))
    }
  }
  return writes
}

function closedByPeer(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code
  return code === 'EPIPE' || code === 'ECONNRESET'
}

/** Streams the node's answer to the client (or, for the gateway's own health, answers it). */
async function relay(
  mesh: Mesh,
  answer: IncomingMessage,
  outgoing: ServerResponse,
  ownHealth: boolean,
  /** The client's request when its body was not read whole (the node answered early). */
  unread: IncomingMessage | null,
): Promise<void> {
  if (ownHealth && answer.statusCode === 200) {
    // The node accepted the caller: the gateway answers for itself.
    answer.resume()
    return answerOwnHealth(mesh, outgoing)
  }
  const answerHeaders: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) answerHeaders[name] = value
  }
  if (unread !== null) closeAfterAnswer(unread, outgoing)
  outgoing.writeHead(answer.statusCode ?? 502, answerHeaders)
  answer.pipe(outgoing)
  // A client gone in the middle of an answer leaves no node connection waiting on it.
  outgoing.once('close', () => {
    if (!answer.complete) answer.destroy()
  })
  // A node lost in the middle of an answer cuts the client's connection, as its death would.
  answer.on('aborted', () => outgoing.destroy())
  answer.on('error', () => outgoing.destroy())
}

async function answerOwnHealth(mesh: Mesh, outgoing: ServerResponse): Promise<void> {
  const view = await membershipView(mesh, mesh.now() + VIEW_TIMEOUT_MS)
  const figures = await mesh.nodeFigures().catch(() => null)
  const body = JSON.stringify({
    id: mesh.config['SVC_NODE_ID'],
    mode: 'gateway',
    status: view.ok ? view.value.self.status : 'Alive',
    phase: view.ok ? view.value.self.phase : 'serving',
    uptime_seconds: Math.round(process.uptime()),
    actors: figures?.actors ?? {},
    ...(figures === null ? {} : { links: figures.links, http: figures.http }),
  })
  outgoing.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
  outgoing.end(body)
}

/** S3's retryable 503, closing the connection so that a retry may go elsewhere. */
function unavailable(
  mesh: Mesh,
  outgoing: ServerResponse,
  incoming: IncomingMessage,
  message: string,
): void {
  // Told apart in the log from a 503 a node sent, which the gateway only passes on.
  mesh.log.warn({ method: incoming.method, url: incoming.url, reason: message }, 'gateway 503')
  if (outgoing.headersSent) {
    outgoing.destroy()
    return
  }
  const requestId = newRequestId()
  const { s3Code: code, status } = s3ErrorFor('unavailable')
  const resource = (incoming.url ?? '/').split('?')[0] ?? '/'
  const xml = errorXml({ code, message, resource, requestId })
  outgoing.writeHead(status, {
    'content-type': 'application/xml',
    'retry-after': '1',
    connection: 'close',
    'x-amz-request-id': requestId,
  })
  outgoing.end(incoming.method === 'HEAD' ? undefined : xml)
  incoming.resume()
}
