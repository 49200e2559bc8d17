/** @module The web console at /console/ (every node and gateway serves it; nothing is fetched from
 * elsewhere). The server writes the sign-in page and each page's shell; each page's script draws
 * its content from the node's own APIs, with the signed-in user's rights:
 * - `/console/api/admin/*` is the admin API and `/console/api/cluster/*` the cluster
 *   administration (`/admin/*`), each called with the session's token as its bearer token;
 * - `/console/s3/*` is the S3 API, with the session's principal in place of a signature;
 * - `/console/api/share`, `/console/api/node`, `/console/api/live` (server-sent events) and, with
 *   SVC_CHAOS=1, `/console/api/chaos/kill/{actor}` are the console's own.
 * A request without a valid session gets 401 (APIs) or the sign-in page (pages); one that changes
 * something must carry the session's CSRF token (session.ts). Every answer carries the console's
 * Content Security Policy; the S3 API's answers, whose bodies are users' objects, are sandboxed. */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { getRequestListener, type HttpBindings } from '@hono/node-server'
import { Hono, type Context } from 'hono'
import type { Mesh } from '../../protocol/actor.js'
import { CALL_TIMEOUT_MS } from '../../protocol/timing.js'
import { adminErrorFor } from '../admin/errors.js'
import { clientAddress } from '../client-address.js'
import type { AuthCaches } from '../s3/authenticate.js'
import { handleS3, newRequestId } from '../s3/router.js'
import { asset } from './assets.js'
import { liveStream } from './live.js'
import { nodeSummary } from './node-summary.js'
import { CONSOLE_CSP, loginPage, shellPage, type PageName } from './pages.js'
import { shareLink } from './share.js'
import {
  csrfOf,
  fromOwnOrigin,
  passesCsrf,
  readSession,
  sessionCookie,
  sessionToken,
  signIn,
  type Session,
  type SessionLook,
} from './session.js'

export type Listener = (incoming: IncomingMessage, outgoing: ServerResponse) => void

/** Whether a path is the console's: /console and everything under /console/. */
export function isConsolePath(path: string): boolean {
  return path === '/console' || path.startsWith('/console/')
}

const S3_PREFIX = '/console/s3'
/** Console paths that are another API of the node, and the path each stands for. */
const PROXIED: readonly (readonly [string, string])[] = [
  ['/console/api/admin/', '/api/admin/'],
  ['/console/api/cluster/', '/admin/cluster/'],
  ['/console/api/node-health', '/admin/node/health'],
]

/** Headers of every console answer: no framing, no sniffing, no referrer beyond the origin. */
const COMMON_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
}
/** Objects are users' bytes: shown in the console's origin, they must run nothing. */
const SANDBOX_CSP = "sandbox; default-src 'none'"

/** The console's listener. `forward` is the node's own listener for the paths the console
 * stands in for (the admin API and cluster administration). */
export function createConsole(mesh: Mesh, caches: AuthCaches, forward: Listener): Listener {
  const app = createConsoleApp(mesh)
  const viaApp = getRequestListener(app.fetch, { autoCleanupIncoming: false })
  return (incoming, outgoing) => {
    const url = incoming.url ?? '/'
    const path = url.split('?', 1)[0] ?? '/'
    for (const [name, value] of Object.entries(COMMON_HEADERS)) outgoing.setHeader(name, value)
    const clustered = mesh.config['SVC_MODE'] === 'cluster' || mesh.config['SVC_MODE'] === 'gateway'
    // A single node has no cluster administration to stand in for.
    const proxied = PROXIED.find(
      ([prefix, target]) => path.startsWith(prefix) && (clustered || target.startsWith('/api/')),
    )
    if (path.startsWith(S3_PREFIX + '/') || proxied !== undefined) {
      void withSession(mesh, incoming, outgoing, (session) => {
        if (proxied !== undefined) {
          outgoing.setHeader('content-security-policy', CONSOLE_CSP)
          incoming.url = proxied[1] + url.slice(proxied[0].length)
          // The session's token stands for the browser's, which never sees it (HttpOnly). The
          // web Request is built from the raw headers.
          setHeader(incoming, 'authorization', `Bearer ${session.token}`)
          forward(incoming, outgoing)
          return Promise.resolve()
        }
        outgoing.setHeader('content-security-policy', SANDBOX_CSP)
        incoming.url = url.slice(S3_PREFIX.length)
        return handleS3(incoming, outgoing, mesh, caches, session.principal)
      })
      return
    }
    outgoing.setHeader('content-security-policy', CONSOLE_CSP)
    void viaApp(incoming, outgoing)
  }
}

function setHeader(incoming: IncomingMessage, name: string, value: string): void {
  const raw = incoming.rawHeaders
  for (let at = raw.length - 2; at >= 0; at -= 2) {
    if (raw[at]?.toLowerCase() === name) raw.splice(at, 2)
  }
  raw.push(name, value)
  incoming.headers[name] = value
}

/** Runs `use` with the request's session, or answers 401 (no session) or 403 (no CSRF token). */
async function withSession(
  mesh: Mesh,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  use: (session: Session) => Promise<void>,
): Promise<void> {
  try {
    const session = await readSession(mesh, incoming.headers, newRequestId())
    if (session === 'none') return refuse(outgoing, 401, 'Unauthorized', 'Sign in again.')
    if (session === 'unavailable') {
      return refuse(outgoing, 503, 'ServiceUnavailable', SESSION_UNAVAILABLE)
    }
    if (!passesCsrf(incoming.method ?? 'GET', incoming.headers, session)) {
      return refuse(outgoing, 403, 'Forbidden', 'The request lacks the console’s CSRF token.')
    }
    await use(session)
  } catch (error) {
    mesh.log.error({ err: String(error) }, 'console request failed')
    if (!outgoing.headersSent) refuse(outgoing, 500, 'InternalError', 'The request failed.')
    else outgoing.destroy()
  }
}

const SESSION_UNAVAILABLE = 'The node cannot check the session just now: try again in a moment.'

/** A refusal; its request's body is not read, so the connection closes after it. */
function refuse(outgoing: ServerResponse, status: number, code: string, error: string): void {
  const body = JSON.stringify({ error, code })
  outgoing.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'close',
    ...(status === 503 ? { 'retry-after': '1' } : {}),
  })
  outgoing.end(body)
}

/** The console's own request bodies (a sign-in form, a share request) are a few hundred bytes. */
const FORM_BYTES_MAX = 16 * 1024

/** A refusal of a body that is too large, or of unknown length; null when it may be read. */
function unboundedBody(c: ConsoleContext): Response | null {
  const length = Number(c.req.header('content-length') ?? NaN)
  if (!Number.isSafeInteger(length)) return c.text('Length Required', 411)
  return length > FORM_BYTES_MAX ? c.text('Content Too Large', 413) : null
}

type ConsoleEnv = { Bindings: HttpBindings; Variables: { session: Session } }
type ConsoleContext = Context<ConsoleEnv>

const PAGE_ROUTES: readonly PageName[] = ['buckets', 'users', 'cluster', 'actors']

function createConsoleApp(mesh: Mesh): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>()
  const secure = mesh.config['SVC_TLS_CERT'] !== undefined
  const session = (c: ConsoleContext): Promise<SessionLook> =>
    readSession(mesh, c.env.incoming.headers, newRequestId())

  app.use('*', async (c, next) => {
    await next()
    if (!c.res.headers.has('cache-control')) c.res.headers.set('cache-control', 'no-store')
  })
  app.get('/console', (c) => c.redirect('/console/', 301))
  app.get('/console/', async (c) =>
    c.redirect((await session(c)) === 'none' ? '/console/login' : '/console/buckets', 303),
  )
  app.get('/console/login', async (c) => {
    if (typeof (await session(c)) === 'object') return c.redirect('/console/buckets', 303)
    return c.html(loginPage({ error: null, username: '' }))
  })
  app.post('/console/login', async (c) => {
    if (!fromOwnOrigin(c.env.incoming.headers)) {
      return c.html(
        loginPage({ error: 'Sign in from this console’s own page.', username: '' }),
        403,
      )
    }
    const refused = unboundedBody(c)
    if (refused !== null) return refused
    const form = await c.req.parseBody()
    const username = typeof form['username'] === 'string' ? form['username'] : ''
    const password = typeof form['password'] === 'string' ? form['password'] : ''
    const address = clientAddress(c.env.incoming) ?? 'unknown'
    const grant = await signIn(mesh, username, password, address, newRequestId())
    if (!grant.ok) {
      const { status, message } = adminErrorFor(grant.code)
      return c.html(loginPage({ error: message, username }), status as 401)
    }
    const maxAge = (grant.value.expiresAtMs - mesh.now()) / 1000
    c.header('set-cookie', sessionCookie(grant.value.token, maxAge, secure))
    return c.redirect('/console/buckets', 303)
  })
  app.post('/console/logout', async (c) => {
    const token = sessionToken(c.env.incoming.headers.cookie)
    const refused = unboundedBody(c)
    if (refused !== null) return refused
    const form = await c.req.parseBody()
    // Only the console's own page may sign its user out (its form carries the CSRF token).
    if (token !== null && form['csrf'] !== csrfOf(token)) return c.text('Forbidden', 403)
    c.header('set-cookie', sessionCookie('', 0, secure))
    return c.redirect('/console/login', 303)
  })
  app.get('/console/assets/:name', async (c) => {
    const found = await asset(c.req.param('name'))
    if (found === null) return c.text('Not Found', 404)
    const headers = { etag: found.etag, 'cache-control': 'no-cache' }
    if (c.req.header('if-none-match') === found.etag) return c.body(null, 304, headers)
    return c.body(new Uint8Array(found.body), 200, {
      ...headers,
      'content-type': found.contentType,
    })
  })

  // Everything below needs a session.
  type Handler = (c: ConsoleContext) => Response | Promise<Response>
  const signedIn = (handle: Handler) => async (c: ConsoleContext) => {
    const current = await session(c)
    const isApi = c.req.path.startsWith('/console/api/')
    if (current === 'unavailable') {
      c.header('retry-after', '1')
      if (isApi) return c.json({ error: SESSION_UNAVAILABLE, code: 'ServiceUnavailable' }, 503)
      return c.text(SESSION_UNAVAILABLE, 503)
    }
    if (current === 'none') {
      if (isApi) return c.json({ error: 'Sign in again.', code: 'Unauthorized' }, 401)
      return c.redirect('/console/login', 303)
    }
    if (!passesCsrf(c.req.method, c.env.incoming.headers, current)) {
      return c.json(
        { error: 'The request lacks the console’s CSRF token.', code: 'Forbidden' },
        403,
      )
    }
    c.set('session', current)
    return handle(c)
  }
  const shell = async (c: ConsoleContext, page: PageName, data: Record<string, string>) => {
    const { principal, csrf } = c.get('session')
    const user = await mesh.call('iam', {
      kind: 'iam.user.get',
      userId: principal.userId,
      requestId: newRequestId(),
      deadlineMs: mesh.now() + CALL_TIMEOUT_MS,
    })
    const username = user.ok ? user.value.username : principal.userId
    const base = {
      mode: mesh.config['SVC_MODE'] ?? 'single',
      chaos: mesh.config['SVC_CHAOS'] === '1' ? '1' : '0',
    }
    return c.html(
      shellPage({ page, username, role: principal.role, csrf, data: { ...base, ...data } }),
    )
  }
  for (const page of PAGE_ROUTES) {
    app.get(
      `/console/${page}`,
      signedIn((c) => shell(c, page, {})),
    )
  }
  app.get(
    '/console/buckets/:bucket',
    signedIn((c) => shell(c, 'objects', { bucket: c.req.param('bucket') ?? '' })),
  )
  app.get(
    '/console/api/node',
    signedIn(async (c) => c.json(await nodeSummary(mesh))),
  )
  app.post(
    '/console/api/share',
    signedIn((c) => unboundedBody(c) ?? shareLink(c, mesh, c.get('session'))),
  )
  app.get(
    '/console/api/live',
    signedIn((c) => liveStream(c, mesh, c.get('session'))),
  )
  if (mesh.config['SVC_CHAOS'] === '1') {
    app.post(
      '/console/api/chaos/kill/:actor',
      signedIn(async (c) => {
        if (c.get('session').principal.role !== 'SuperUser') {
          return c.json({ error: 'Only a SuperUser may kill an actor.', code: 'Forbidden' }, 403)
        }
        const actor = c.req.param('actor') ?? ''
        if (!(await mesh.kill(actor, 0))) {
          return c.json({ error: `No actor named ${actor} runs here.`, code: 'NotFound' }, 404)
        }
        return c.json({ killed: actor })
      }),
    )
  }
  app.all('*', (c) => c.text('Not Found', 404))
  app.onError((error, c) => {
    mesh.log.error({ err: error.stack ?? error.message }, 'console request failed')
    return c.text('Internal Error', 500)
  })
  return app
}
