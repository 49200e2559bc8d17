/** @module The Actors page's live feed: server-sent events, one `figures` event a second with
 * every actor of every node (this node's from its own runtime; in a cluster, and for a SuperUser,
 * each other member's from its `/admin/node/health`, asked with the session's token), and first a
 * `history` event with this node's HTTP totals of the last minutes for the charts. One sampler per
 * ingress thread looks at this node once a second while any page watches, whatever their number,
 * and keeps what it saw for the charts. A stream ends after STREAM_LIFETIME_MS (the browser's
 * EventSource opens another) or as soon as its session is no longer valid. */
import { request as httpRequest } from 'node:http'
import type { Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import type { Mesh, NodeFigures } from '../../protocol/actor.js'
import { newRequestId } from '../s3/router.js'
import { membershipView } from '../admin/cluster-app.js'
import { splitAddress } from '../host-port.js'
import { readSession, type Session } from './session.js'

const LIVE_INTERVAL_MS = 1_000
/** The charts' span: five minutes of one-second samples. */
const HISTORY_SAMPLES_MAX = 300
const STREAM_LIFETIME_MS = 10 * 60_000
/** How often a stream checks that its session still holds. */
const SESSION_CHECK_MS = 15_000
/** A member that does not answer in this time shows as unreachable for this second. */
const PEER_TIMEOUT_MS = 1_500
const PEER_BODY_MAX = 1 << 20

export interface HttpSample {
  at_ms: number
  requests: number
  errors: number
  client_errors: number
  seconds_sum: number
}

export interface LiveNode {
  id: string
  kind: 'node' | 'gateway'
  self: boolean
  status: string
  /** Why this member's figures are missing, or null. */
  error: string | null
  figures: NodeFigures | null
}

/** This node's figures, looked at once a second while held. */
class Sampler {
  private holders = 0
  private timer: NodeJS.Timeout | null = null
  private readonly history: HttpSample[] = []
  latest: NodeFigures | null = null
  private looking: Promise<void> | null = null

  constructor(private readonly mesh: Mesh) {}

  hold(): () => void {
    this.holders += 1
    if (this.timer === null) {
      this.timer = setInterval(() => void this.look(), LIVE_INTERVAL_MS)
      void this.look()
    }
    let held = true
    return () => {
      if (!held) return
      held = false
      this.holders -= 1
      if (this.holders === 0 && this.timer !== null) {
        clearInterval(this.timer)
        this.timer = null
      }
    }
  }

  samples(): readonly HttpSample[] {
    return this.history
  }

  /** One look at a time: a look slower than a second skips the next, and a caller that asks
   * during a look waits for that one. */
  look(): Promise<void> {
    this.looking ??= this.lookOnce().finally(() => {
      this.looking = null
    })
    return this.looking
  }

  private async lookOnce(): Promise<void> {
    try {
      const figures = await this.mesh.nodeFigures()
      this.latest = figures
      this.history.push({ at_ms: this.mesh.now(), ...figures.http })
      if (this.history.length > HISTORY_SAMPLES_MAX) this.history.shift()
    } catch (error) {
      this.mesh.log.warn({ err: String(error) }, 'console: node figures unavailable')
    }
  }
}

const samplers = new WeakMap<Mesh, Sampler>()

function samplerOf(mesh: Mesh): Sampler {
  let sampler = samplers.get(mesh)
  if (sampler === undefined) {
    sampler = new Sampler(mesh)
    samplers.set(mesh, sampler)
  }
  return sampler
}

/** Streams open on this ingress thread at most: each asks every member once a second. */
const STREAMS_MAX = 32
let streams = 0

export function liveStream(c: Context, mesh: Mesh, session: Session): Response {
  if (streams >= STREAMS_MAX) {
    const error = 'Too many live pages are open on this node: try again later.'
    return c.json({ error, code: 'SlowDown' }, 503, { 'retry-after': '5' })
  }
  const sampler = samplerOf(mesh)
  streams += 1
  return streamSSE(c, async (stream) => {
    let open = true
    stream.onAbort(() => {
      open = false
    })
    const release = sampler.hold()
    try {
      await sampler.look()
      await stream.writeSSE({ event: 'history', data: JSON.stringify(sampler.samples()) })
      const endMs = mesh.now() + STREAM_LIFETIME_MS
      let checkedMs = mesh.now()
      while (open && mesh.now() < endMs) {
        if (mesh.now() - checkedMs >= SESSION_CHECK_MS) {
          checkedMs = mesh.now()
          const still = await readSession(mesh, c.env.incoming.headers, newRequestId())
          if (still === 'none') {
            await stream.writeSSE({ event: 'signed-out', data: '{}' })
            break
          }
        }
        const nodes = await liveNodes(mesh, session, sampler.latest)
        const latest = sampler.samples().at(-1) ?? null
        await stream.writeSSE({ event: 'figures', data: JSON.stringify({ nodes, http: latest }) })
        await stream.sleep(LIVE_INTERVAL_MS)
      }
    } finally {
      streams -= 1
      release()
    }
  })
}

/** This node, and in a cluster every other member a SuperUser may see. */
async function liveNodes(
  mesh: Mesh,
  session: Session,
  own: NodeFigures | null,
): Promise<LiveNode[]> {
  const mode = mesh.config['SVC_MODE'] ?? 'single'
  const selfId = mesh.config['SVC_NODE_ID'] ?? 'single node'
  const self: LiveNode = {
    id: selfId,
    kind: mode === 'gateway' ? 'gateway' : 'node',
    self: true,
    status: 'Alive',
    error: own === null ? 'figures unavailable' : null,
    figures: own,
  }
  if (mode === 'single') return [self]
  const view = await membershipView(mesh, mesh.now() + PEER_TIMEOUT_MS)
  if (!view.ok) return [self]
  const others = view.value.members.filter((member) => member.id !== selfId)
  const superUser = session.principal.role === 'SuperUser'
  const peers = await Promise.all(
    others.map(async (member): Promise<LiveNode> => {
      const base = { id: member.id, kind: member.kind, self: false, status: member.status }
      if (!superUser) return { ...base, error: 'shown to SuperUsers only', figures: null }
      if (member.status !== 'Alive' && member.status !== 'Suspect') {
        return { ...base, error: member.status, figures: null }
      }
      const asked = await peerFigures(member.httpAddr, session.token)
      return typeof asked === 'string'
        ? { ...base, error: asked, figures: null }
        : { ...base, error: null, figures: asked }
    }),
  )
  return [self, ...peers.sort((a, b) => a.id.localeCompare(b.id))]
}

/** A member's `/admin/node/health` figures, or why they could not be had. Members speak plain
 * HTTP to each other as the gateway does (http/gateway.ts). */
function peerFigures(httpAddr: string, token: string): Promise<NodeFigures | string> {
  return new Promise((resolve) => {
    const [host, port] = splitAddress(httpAddr)
    const req = httpRequest(
      {
        host,
        port,
        path: '/admin/node/health',
        headers: { authorization: `Bearer ${token}` },
        timeout: PEER_TIMEOUT_MS,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
          if (body.length > PEER_BODY_MAX) req.destroy(new Error('answer too large'))
        })
        res.on('end', () => {
          if (res.statusCode !== 200) return resolve(`answered ${res.statusCode ?? 0}`)
          try {
            resolve(figuresOf(JSON.parse(body)))
          } catch {
            resolve('answered no JSON')
          }
        })
        res.on('error', (error) => resolve(error.message))
      },
    )
    req.on('timeout', () => req.destroy(new Error('no answer in time')))
    req.on('error', (error) => resolve(error.message))
    req.end()
  })
}

/** The figures in a node health answer (its `actors`, `links` and `http`). */
function figuresOf(json: unknown): NodeFigures | string {
  if (typeof json !== 'object' || json === null) return 'answered no figures'
  const { actors, links, http } = json as Record<string, unknown>
  if (typeof actors !== 'object' || actors === null || !Array.isArray(links)) {
    return 'answered no figures'
  }
  if (typeof http !== 'object' || http === null) return 'answered no figures'
  return { actors, links, http } as NodeFigures
}
