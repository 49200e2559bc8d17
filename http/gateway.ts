/** @module The HTTP surface of a gateway: a stateless router with no storage and no identities of
 * its own. It forwards every S3 and admin request, as received (method, path, headers, body: a
 * SigV4 signature covers the Host header, which is kept), to a storage node that gossip knows as
 * Alive and serving, taking them in turn, and streams the answer back. The node authenticates and
 * serves it, so the client gets exactly what that node gives. The gateway answers itself only
 * /health (200 while a node can serve), /metrics (its own actors and cluster series) and
 * /admin/node/health (its own state, once a node has accepted the caller's credentials for the
 * same request). A request that finds no node, or whose node cannot be reached before any of its
 * body was read, answers S3's 503 with Retry-After, and so does one a node refused as it started
 * or stopped when its body had been sent (without a body, the next node is tried); a node lost in
 * the middle of an answer cuts the connection, as that node's own death would. */
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Mesh } from '../protocol/actor.js'
import type { Member } from '../protocol/cluster.js'
import { errorXml } from '../protocol/s3-xml.js'
import { membershipView } from './admin/cluster-app.js'
import { NOT_SERVING_HEADER, type IngressState, type Listener } from './app.js'
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
/** Nodes tried for a request without a body whose node could not be reached. */
const ATTEMPTS_MAX = 3
/** Headers that belong to one connection, not to the request (RFC 9110 section 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
])

export function createGatewayListener(mesh: Mesh, state: IngressState): Listener {
  const agent = new Agent({ keepAlive: true, maxSockets: SOCKETS_PER_NODE_MAX })
  const nodes = servingNodes(mesh)
  // Pipelined requests of one connection go to nodes one after the other, as a node serves them:
  // a GET behind a PUT of the same key must not reach another node before the PUT is stored.
  return inOrder((incoming, outgoing) => {
    const path = (incoming.url ?? '/').split('?')[0]
    if (!state.serving) return unavailable(outgoing, incoming, 'the gateway is not serving')
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
    void forward(mesh, agent, nodes, incoming, outgoing, own)
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

let turn = 0

async function forward(
  mesh: Mesh,
  agent: Agent,
  nodes: () => Promise<Member[]>,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  ownHealth: boolean,
): Promise<void> {
  const candidates = await nodes()
  const hasBody =
    incoming.headers['transfer-encoding'] !== undefined ||
    Number(incoming.headers['content-length'] ?? '0') > 0
  const attempts = hasBody ? 1 : Math.min(ATTEMPTS_MAX, candidates.length)
  for (let attempt = 0; attempt < attempts; attempt++) {
    const node = candidates[turn++ % candidates.length]
    if (node === undefined) break
    const sent = await sendTo(mesh, agent, node, incoming, outgoing, ownHealth)
    if (sent) return
  }
  unavailable(outgoing, incoming, 'no storage node could take the request')
}

/** Resolves false when the node could not be reached and nothing was answered yet. */
function sendTo(
  mesh: Mesh,
  agent: Agent,
  node: Member,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  ownHealth: boolean,
): Promise<boolean> {
  const [host, port] = splitAddress(node.httpAddr)
  const headers: Record<string, string | string[]> = {}
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value
  }
  const client = incoming.socket.remoteAddress ?? ''
  const forwardedFor = incoming.headers['x-forwarded-for']
  headers['x-forwarded-for'] = forwardedFor === undefined ? client : `${forwardedFor}, ${client}`
  return new Promise<boolean>((resolve) => {
    const upstream = httpRequest({
      host,
      port,
      method: incoming.method,
      path: incoming.url,
      headers,
      agent,
      timeout: ANSWER_TIMEOUT_MS,
    })
    upstream.on('response', (answer) => {
      if (answer.statusCode === 503 && answer.headers[NOT_SERVING_HEADER] !== undefined) {
        // The node is starting or stopping and ran nothing: a request whose body was not sent
        // goes to the next node.
        if (!incoming.readableDidRead) {
          answer.resume()
          resolve(false)
          return
        }
      }
      if (ownHealth && answer.statusCode === 200) {
        // The node accepted the caller: the gateway answers for itself.
        answer.resume()
        void answerOwnHealth(mesh, outgoing).then(() => resolve(true))
        return
      }
      const answerHeaders: Record<string, string | string[]> = {}
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !HOP_BY_HOP.has(name)) answerHeaders[name] = value
      }
      outgoing.writeHead(answer.statusCode ?? 502, answerHeaders)
      answer.pipe(outgoing)
      answer.on('aborted', () => outgoing.destroy())
      resolve(true)
    })
    upstream.on('timeout', () => upstream.destroy(new Error('the node did not answer in time')))
    upstream.on('error', (error) => {
      mesh.log.warn({ node: node.id, err: String(error) }, 'forwarding failed')
      if (outgoing.headersSent) outgoing.destroy()
      resolve(outgoing.headersSent || incoming.readableDidRead)
      if (incoming.readableDidRead && !outgoing.headersSent) {
        unavailable(outgoing, incoming, `node ${node.id} was lost`)
      }
    })
    incoming.pipe(upstream)
  })
}

async function answerOwnHealth(mesh: Mesh, outgoing: ServerResponse): Promise<void> {
  const view = await membershipView(mesh, mesh.now() + VIEW_TIMEOUT_MS)
  const actors = await mesh.actorHealth().catch(() => ({}))
  const body = JSON.stringify({
    id: mesh.config['SVC_NODE_ID'],
    mode: 'gateway',
    status: view.ok ? view.value.self.status : 'Alive',
    phase: view.ok ? view.value.self.phase : 'serving',
    uptime_seconds: Math.round(process.uptime()),
    actors,
  })
  outgoing.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
  outgoing.end(body)
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':')
  return [address.slice(0, at).replace(/^\[|\]$/g, ''), Number(address.slice(at + 1))]
}

/** S3's retryable 503, closing the connection so that a retry may go elsewhere. */
function unavailable(outgoing: ServerResponse, incoming: IncomingMessage, message: string): void {
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
