/** @module The HTTP surface of a node: a Hono app for /health, /metrics, /api/stats, the admin API
 * and the chaos route (only with SVC_CHAOS=1), the web console under /console/ (its own listener,
 * http/console/), and the S3 API for everything else. A request whose path none of those routes can
 * claim goes to the S3 handler without the app. S3 handlers write to Node's response directly
 * (bodies stream without a web-stream detour); through the app they return RESPONSE_ALREADY_SENT. A
 * request signed with SigV4 (an Authorization header or a presigned query) is S3's whatever its
 * path, so buckets named `health`, `metrics`, `api` or `console` (and keys named so under
 * virtual-hosted style) work for every S3 operation: the node's own routes take unsigned requests,
 * and every S3 operation here is signed. The chaos route, itself signed, is the one exception.
 * /health answers 200 while the node serves, with a body that says when the data volume is full
 * (reads and deletes still work then). While the node starts or shuts down every request answers
 * 503 at once, S3 requests as S3 XML. */
import type { KeyObject } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { getRequestListener, type HttpBindings } from '@hono/node-server'
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response'
import { Hono } from 'hono'
import type { Mesh } from '../protocol/actor.js'
import { createAdminApp } from './admin/admin-app.js'
import { createConsole, isConsolePath } from './console/console-app.js'
import { takeClientAddress } from './client-address.js'
import { createClusterApp, membershipView } from './admin/cluster-app.js'
import { inOrder } from './in-order.js'
import { killActor } from './chaos.js'
import { statsRecord } from './stats.js'
import { isRetryable } from '../protocol/errors.js'
import { errorXml } from './s3/xml/s3-xml.js'
import { s3ErrorFor } from './s3/errors.js'
import { handleS3, newRequestId } from './s3/router.js'
import type { AuthCaches } from './s3/authenticate.js'
import { KeyCache } from './s3/key-cache.js'
import { SigningKeyCache } from './s3/sigv4.js'

export interface IngressState {
  /** False while the node starts or shuts down: every request answers 503 then. */
  serving: boolean
}

export type Listener = (incoming: IncomingMessage, outgoing: ServerResponse) => void

/** The request listener of a node. While it serves, a request whose path no other route can claim
 * goes straight to the S3 handler: the web Request/Response adapter and the router cost the
 * ingress thread more than a small GET's own work. Everything else goes through the Hono app, with
 * HEAD straight to the S3 handler (Hono answers HEAD by running the GET route and wrapping its
 * Response, which would lose RESPONSE_ALREADY_SENT). */
export function createListener(
  mesh: Mesh,
  state: IngressState,
  hostname: string,
  addressKey: KeyObject | null = null,
): { listener: Listener; keys: KeyCache } {
  const caches: AuthCaches = { signingKeys: new SigningKeyCache(), keys: new KeyCache() }
  const app = createApp(mesh, state, caches)
  const fetch = async (request: Request, env: HttpBindings): Promise<Response> => {
    if (!state.serving) return notServing(request)
    if (request.method !== 'HEAD') return app.fetch(request, env)
    await handleS3(env.incoming, env.outgoing, mesh, caches)
    return RESPONSE_ALREADY_SENT
  }
  // An HTTP/1 server only: the bindings are always HttpBindings.
  const viaApp = getRequestListener(fetch as never, { hostname, autoCleanupIncoming: false })
  const consoleListener = createConsole(mesh, caches, (incoming, outgoing) => {
    void viaApp(incoming, outgoing)
  })
  const serve: Listener = (incoming, outgoing) => {
    if (state.serving && isConsoleRequest(incoming)) return consoleListener(incoming, outgoing)
    if (!state.serving || isOwnRoute(incoming)) {
      void viaApp(incoming, outgoing)
      return
    }
    handleS3(incoming, outgoing, mesh, caches).catch((error: unknown) => {
      mesh.log.error({ err: String(error) }, 'S3 request failed')
      if (!outgoing.headersSent) outgoing.writeHead(500).end()
      else outgoing.destroy()
    })
  }
  const listener: Listener = (incoming, outgoing) => {
    // A gateway speaks HTTP/1.1; an HTTP/1.0 client must not be sent an interim answer.
    const forwarded = incoming.headers[FORWARDED_HEADER] !== undefined
    if (!forwarded || incoming.httpVersion !== '1.1') return serve(incoming, outgoing)
    whileForwarded(incoming, outgoing, () => serve(incoming, outgoing))
  }
  const ordered = inOrder(listener)
  // As the request arrives, before it waits behind others of its connection: the gateway's
  // timestamp is checked against the time the node received it.
  const arrive: Listener = (incoming, outgoing) => {
    takeClientAddress(incoming, addressKey, mesh.now())
    ordered(incoming, outgoing)
  }
  return { listener: arrive, keys: caches.keys }
}

/** Runs a request a gateway forwarded only while the gateway still waits for it. A gateway that
 * gives this node up resets the connection (gateway.ts), and a frozen node reads the request and
 * the reset together when it resumes: whether the reset is read before the request starts depends
 * on how the kernel's reads fall into event-loop turns. Not so the kernel's own state: the reset
 * closed the connection there as it arrived, and a send on it fails (ECONNRESET, EPIPE). So the
 * node first sends an interim 102 Processing (which HTTP/1.1 clients skip) and runs the request
 * only once the kernel took it. A reset that comes later (the node resumed before the gateway gave
 * it up) finds the request running, as it would have without the freeze. Bounded by the
 * connection: a send that never completes ends with the socket's close (the server's timeouts),
 * and then nothing runs. */
function whileForwarded(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  run: () => void,
): void {
  const socket = incoming.socket
  if (socket.destroyed) return
  let decided = false
  const decide = (live: boolean): void => {
    if (decided) return
    decided = true
    socket.off('close', onClose)
    if (live && !socket.destroyed) run()
  }
  const onClose = (): void => decide(false)
  socket.once('close', onClose)
  outgoing.writeProcessing((error?: Error | null) => decide(error === null || error === undefined))
}

/** Marks a request a gateway forwards. The gateway gives up a node that does not answer in time
 * with a TCP reset and sends the request to another; a frozen node reads the request and the
 * reset together when it resumes, and must not run what another node ran (whileForwarded). */
export const FORWARDED_HEADER = 'x-svc-forwarded'

/** Marks a 503 of a node that is not serving (starting or stopping): nothing of the request ran. */
export const NOT_SERVING_HEADER = 'x-svc-not-serving'

/** /health's body while object writes are refused for lack of space. */
export const HEALTH_FULL = 'ok; data volume full: object writes answer 507 InsufficientStorage'

/** Paths of the routes besides S3 (the app's own table below): exactly these, or under them. A
 * route added to the app must be added here, or its requests go to the S3 handler. */
const OWN_PATHS = ['/health', '/metrics', '/api/stats']
/** Routes that take SigV4 themselves: the chaos route, and cluster administration. A bucket named
 * `admin` keeps every S3 operation but on keys under these paths. */
const SIGNED_PREFIXES = ['/admin/chaos/', '/admin/cluster/', '/admin/node/']
const OWN_PREFIXES = ['/api/admin', ...SIGNED_PREFIXES]

/** Whether the app's own routes, rather than S3, answer this request. A signed request on one of
 * their paths is an S3 request to a bucket of that name, except on the routes that are signed
 * themselves. */
function isOwnRoute(incoming: IncomingMessage): boolean {
  const url = incoming.url ?? '/'
  const end = url.indexOf('?')
  const path = end === -1 ? url : url.slice(0, end)
  if (!OWN_PATHS.includes(path) && !OWN_PREFIXES.some((prefix) => path.startsWith(prefix))) {
    return false
  }
  const signed = SIGNED_PREFIXES.some((prefix) => path.startsWith(prefix))
  return signed || !isSigV4(incoming, end === -1 ? '' : url.slice(end + 1))
}

/** A request for the web console: its paths, unless signed with SigV4 (an S3 request to a bucket
 * named `console`). */
function isConsoleRequest(incoming: IncomingMessage): boolean {
  const url = incoming.url ?? '/'
  const end = url.indexOf('?')
  const path = end === -1 ? url : url.slice(0, end)
  return isConsolePath(path) && !isSigV4(incoming, end === -1 ? '' : url.slice(end + 1))
}

/** SigV4 in the Authorization header, or presigned (X-Amz-Algorithm in the query). */
function isSigV4(incoming: IncomingMessage, query: string): boolean {
  const authorization = incoming.headers.authorization
  if (authorization?.startsWith('AWS4-HMAC-SHA256') === true) return true
  return /(^|&)x-amz-algorithm=/i.test(query)
}

/** The answer while the node starts or drains: 503 for /health, S3's retryable 503
 * ServiceUnavailable for the rest, and the connection closes, so that a client's retry opens a new
 * one (to this node once it serves, or through a load balancer to another). */
function notServing(request: Request): Response {
  const requestId = newRequestId()
  // NOT_SERVING_HEADER: the request was not run, so a gateway may send it to another node.
  const headers = {
    'retry-after': '1',
    connection: 'close',
    'x-amz-request-id': requestId,
    [NOT_SERVING_HEADER]: '1',
  }
  const resource = new URL(request.url).pathname
  if (request.method === 'GET' && resource === '/health') {
    return new Response('unavailable', { status: 503, headers })
  }
  const { s3Code: code, status, message } = s3ErrorFor('unavailable')
  const xml = errorXml({ code, message, resource, requestId })
  const body = request.method === 'HEAD' ? null : xml
  return new Response(body, { status, headers: { ...headers, 'content-type': 'application/xml' } })
}

function createApp(
  mesh: Mesh,
  state: IngressState,
  caches: AuthCaches,
): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>()
  app.get('/health', async (c) => {
    if (!state.serving) return c.text('unavailable', 503, { 'retry-after': '1' })
    if (mesh.config['SVC_MODE'] === 'cluster') {
      // A node that has not pulled the catalog yet would answer from an old one.
      const view = await membershipView(mesh, mesh.now() + 1_000)
      const phase = view.ok ? view.value.self.phase : 'serving'
      if (phase !== 'serving') return c.text(phase, 503, { 'retry-after': '1' })
    }
    // A full volume still serves reads and deletes: 200 for a load balancer, and the body says it.
    const full = await mesh.volumeStatus().then(
      (status) => status.full,
      () => false,
    )
    return c.text(full ? HEALTH_FULL : 'ok', 200)
  })
  app.get('/api/stats', async (c) => {
    const record = await statsRecord(mesh, process.uptime())
    if (record.ok) return c.json(record.value, 200)
    mesh.log.error({ code: record.code, detail: record.detail }, 'stats unavailable')
    // A store that is restarting or overloaded is worth a retry; anything else is our fault.
    if (isRetryable(record.code)) {
      const body = {
        error: 'Storage statistics are briefly unavailable',
        code: 'ServiceUnavailable',
      }
      return c.json(body, 503, { 'retry-after': '1' })
    }
    return c.json({ error: 'Storage statistics are unavailable', code: 'InternalError' }, 500)
  })
  app.get('/metrics', async (c) => {
    try {
      const text = await mesh.metricsText()
      return c.text(text, 200, { 'content-type': 'text/plain; version=0.0.4' })
    } catch (error) {
      // Only the supervisor not answering in time gets here; a dead actor is a line, not a 503.
      mesh.log.error({ err: String(error) }, 'metrics unavailable')
      return c.text('metrics unavailable', 503, { 'retry-after': '1' })
    }
  })
  if (mesh.config['SVC_CHAOS'] === '1') {
    app.post('/admin/chaos/kill/:actor', async (c) => {
      await killActor(c.env.incoming, c.env.outgoing, mesh, caches, c.req.param('actor'))
      return RESPONSE_ALREADY_SENT
    })
  }
  if (mesh.config['SVC_MODE'] !== undefined && mesh.config['SVC_MODE'] !== 'single') {
    app.route('/admin', createClusterApp(mesh, caches))
  }
  app.route('/api/admin', createAdminApp(mesh))
  app.all('*', async (c) => {
    await handleS3(c.env.incoming, c.env.outgoing, mesh, caches)
    return RESPONSE_ALREADY_SENT
  })
  return app
}
