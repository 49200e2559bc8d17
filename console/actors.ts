/** @module The Actors page: every actor of every node, live. The server sends a `figures` event a
 * second (server-sent events from /console/api/live) and first a `history` event of this node's
 * HTTP totals; this script turns counters into rates (messages a second, CPU) from one event to
 * the next, and draws:
 * - the mesh: each node's actors as circles, the links between their roles as lines, each actor
 *   coloured by its CPU (green idle, red busy; grey with a red ring while down);
 * - a table per node: state, restarts, mailbox depth, messages a second, CPU, and with SVC_CHAOS=1
 *   a Kill button for a SuperUser (on this node's actors), to watch the actor restart;
 * - charts of the node's requests a second, mean latency and errors over the last minutes.
 * No reload: the page updates in place, and the browser reopens the stream when it ends. */
import { api, attempt, dataTable, el, errorText, notify, pageData, render } from './common.js'

interface ActorFigures {
  role: string
  up: boolean
  restarts: number
  mailbox_depth: number
  messages_total: number
  cpu_seconds: number
}

interface NodeFigures {
  actors: Record<string, ActorFigures>
  links: [string, string][]
}

interface LiveNode {
  id: string
  kind: string
  self: boolean
  status: string
  error: string | null
  figures: NodeFigures | null
}

interface HttpSample {
  at_ms: number
  requests: number
  errors: number
  client_errors: number
  seconds_sum: number
}

interface LiveEvent {
  nodes: LiveNode[]
  http: HttpSample | null
}

/** The charts' span: the server keeps five minutes of samples. */
const SAMPLES_MAX = 300
const SVG = 'http://www.w3.org/2000/svg'

const data = pageData()
const mayKill = data.chaos && data.role === 'SuperUser'

/** The previous event's counters, per node and actor, to make rates of. */
let previous: { atMs: number; nodes: Map<string, Record<string, ActorFigures>> } | null = null
const samples: HttpSample[] = []

interface Rates {
  messages: number
  cpu: number
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  ...children: (Node | string)[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  element.append(...children)
  return element
}

function ratesOf(node: string, actor: string, now: ActorFigures, atMs: number): Rates | null {
  const before = previous?.nodes.get(node)?.[actor]
  if (previous === null || before === undefined) return null
  const seconds = (atMs - previous.atMs) / 1000
  if (seconds <= 0) return null
  return {
    // A restarted thread starts its counters again: a negative difference is no rate.
    messages: Math.max(0, now.messages_total - before.messages_total) / seconds,
    cpu: Math.max(0, now.cpu_seconds - before.cpu_seconds) / seconds,
  }
}

/** CPU share (0..1) as a colour: green when idle, through yellow, to red when a core is busy. */
function loadColour(cpu: number | null): string {
  const share = Math.min(1, Math.max(0, cpu ?? 0))
  return `hsl(${Math.round(130 - 130 * share)}, 65%, 48%)`
}

function meshPicture(nodes: LiveNode[], rates: Map<string, Rates | null>): SVGSVGElement {
  const shown = nodes.filter((node) => node.figures !== null)
  const size = 320
  const columns = Math.max(1, Math.min(shown.length, 3))
  const rows = Math.max(1, Math.ceil(shown.length / columns))
  const picture = svg('svg', {
    class: 'mesh',
    viewBox: `0 0 ${columns * size} ${rows * size}`,
    width: columns * size * 1.4,
    role: 'img',
    'aria-label': 'The actor mesh: actors as circles, their links as lines, coloured by CPU',
  })
  shown.forEach((node, index) => {
    const figures = node.figures!
    const names = Object.keys(figures.actors).sort()
    const cx = (index % columns) * size + size / 2
    const cy = Math.floor(index / columns) * size + size / 2 + 14
    const radius = size / 2 - 60
    const at = new Map(
      names.map((name, i) => {
        const angle = (2 * Math.PI * i) / names.length - Math.PI / 2
        return [name, { x: cx + radius * Math.cos(angle), y: cy + radius * Math.sin(angle) }]
      }),
    )
    const group = svg('g', { 'data-node': node.id })
    group.append(
      svg(
        'text',
        { x: cx, y: cy - size / 2 + 4, 'text-anchor': 'middle', class: 'node-name' },
        node.id,
      ),
    )
    for (const [caller, callee] of figures.links) {
      for (const from of names.filter((name) => figures.actors[name]?.role === caller)) {
        for (const to of names.filter((name) => figures.actors[name]?.role === callee)) {
          const a = at.get(from)!
          const b = at.get(to)!
          group.append(svg('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y }))
        }
      }
    }
    for (const name of names) {
      const actor = figures.actors[name]!
      const rate = rates.get(`${node.id}\0${name}`) ?? null
      const point = at.get(name)!
      const load =
        rate === null
          ? ''
          : `, ${rate.messages.toFixed(1)} msg/s, CPU ${(rate.cpu * 100).toFixed(0)}%`
      const state = actor.up ? 'up' : 'down'
      const mailbox = `mailbox ${actor.mailbox_depth}`
      const title = `${name}: ${state}, ${actor.restarts} restarts, ${mailbox}${load}`
      group.append(
        svg(
          'circle',
          {
            cx: point.x,
            cy: point.y,
            r: 13,
            fill: actor.up ? loadColour(rate?.cpu ?? null) : '#c4c9d2',
            stroke: actor.up ? '#1d2330' : '#b3261e',
            'stroke-width': actor.up ? 1 : 3,
            'data-actor': name,
          },
          svg('title', {}, title),
        ),
      )
      const below = point.y > cy
      group.append(
        svg('text', { x: point.x, y: point.y + (below ? 28 : -19), 'text-anchor': 'middle' }, name),
      )
    }
    picture.append(group)
  })
  return picture
}

function actorTable(node: LiveNode, rates: Map<string, Rates | null>): HTMLElement {
  if (node.figures === null) {
    return el(
      'p',
      { class: 'muted', 'data-node': node.id },
      `${node.id} (${node.kind}, ${node.status}): ${node.error ?? 'no figures'}`,
    )
  }
  const names = Object.keys(node.figures.actors).sort()
  const rows = names.map((name) => {
    const actor = node.figures!.actors[name]!
    const rate = rates.get(`${node.id}\0${name}`) ?? null
    return el(
      'tr',
      { 'data-actor': name },
      el('th', { scope: 'row' }, name),
      el(
        'td',
        { 'data-field': 'state' },
        el('span', { class: `badge ${actor.up ? 'up' : 'down'}` }, actor.up ? 'up' : 'down'),
      ),
      el('td', { class: 'num', 'data-field': 'restarts' }, actor.restarts),
      el('td', { class: 'num', 'data-field': 'mailbox' }, actor.mailbox_depth),
      el('td', { class: 'num', 'data-field': 'messages' }, actor.messages_total),
      el(
        'td',
        { class: 'num', 'data-field': 'rate' },
        rate === null ? '…' : rate.messages.toFixed(1),
      ),
      el(
        'td',
        { class: 'num', 'data-field': 'cpu' },
        rate === null ? '…' : `${(rate.cpu * 100).toFixed(1)}%`,
      ),
      mayKill && node.self
        ? el(
            'td',
            {},
            el(
              'button',
              {
                type: 'button',
                class: 'danger',
                disabled: !actor.up,
                'aria-label': `Kill ${name}`,
                onclick: () => void kill(name),
              },
              'Kill',
            ),
          )
        : null,
    )
  })
  return el(
    'section',
    { 'aria-label': `Actors of ${node.id}`, 'data-node': node.id },
    el('h2', {}, `${node.id}${node.self ? ' (this node)' : ''}`),
    dataTable(
      null,
      ['Actor', 'State', ...NUMERIC_COLUMNS, ...(mayKill && node.self ? ['Chaos'] : [])],
      rows,
      NUMERIC_COLUMNS,
    ),
  )
}

/** The table's columns of figures. */
const NUMERIC_COLUMNS = ['Restarts', 'Mailbox', 'Messages', 'Messages/s', 'CPU']

function kill(actor: string): Promise<void> {
  return attempt(async () => {
    await api(`/console/api/chaos/kill/${encodeURIComponent(actor)}`, { method: 'POST' })
    notify(`${actor} killed: watch its supervisor restart it.`)
  })
}

interface Series {
  title: string
  unit: string
  field: string
  values: { atMs: number; value: number }[]
}

/** Per-second series from consecutive samples of the totals. */
function seriesOf(list: readonly HttpSample[]): Series[] {
  const requests: Series = { title: 'Requests a second', unit: '/s', field: 'requests', values: [] }
  const latency: Series = { title: 'Mean latency', unit: 'ms', field: 'latency', values: [] }
  const errors: Series = {
    title: 'Errors a second (4xx and 5xx)',
    unit: '/s',
    field: 'errors',
    values: [],
  }
  for (let i = 1; i < list.length; i += 1) {
    const a = list[i - 1]!
    const b = list[i]!
    const seconds = (b.at_ms - a.at_ms) / 1000
    if (seconds <= 0) continue
    const count = Math.max(0, b.requests - a.requests)
    requests.values.push({ atMs: b.at_ms, value: count / seconds })
    const spent = Math.max(0, b.seconds_sum - a.seconds_sum)
    latency.values.push({ atMs: b.at_ms, value: count === 0 ? 0 : (spent / count) * 1000 })
    const failed = Math.max(0, b.errors - a.errors + (b.client_errors - a.client_errors))
    errors.values.push({ atMs: b.at_ms, value: failed / seconds })
  }
  return [requests, latency, errors]
}

function chart(series: Series): HTMLElement {
  const width = 300
  const height = 110
  const top = Math.max(1e-9, ...series.values.map((point) => point.value))
  const last = series.values.at(-1)?.value ?? 0
  const end = series.values.at(-1)?.atMs ?? Date.now()
  const start = end - SAMPLES_MAX * 1000
  const points = series.values
    .map((point) => {
      const x = ((point.atMs - start) / (end - start)) * width
      const y = height - 8 - (point.value / top) * (height - 30)
      return `${x.toFixed(1)},${y.toFixed(1)}`
    })
    .join(' ')
  const label = `${series.title}: now ${last.toFixed(1)} ${series.unit}, peak ${top.toFixed(1)}`
  return el(
    'figure',
    { class: 'card', 'data-chart': series.field },
    el(
      'figcaption',
      {},
      series.title,
      ' ',
      el('span', { class: 'muted', 'data-field': 'now' }, `${last.toFixed(1)} ${series.unit}`),
    ),
    svg(
      'svg',
      { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label },
      svg('text', { x: 4, y: 12 }, `${top.toFixed(1)} ${series.unit}`),
      svg('text', { x: 4, y: height - 2 }, '5 min ago'),
      svg('polyline', { points }),
    ) as unknown as Node,
  )
}

function draw(event: LiveEvent): void {
  const atMs = event.http?.at_ms ?? Date.now()
  const rates = new Map<string, Rates | null>()
  for (const node of event.nodes) {
    for (const [name, actor] of Object.entries(node.figures?.actors ?? {})) {
      rates.set(`${node.id}\0${name}`, ratesOf(node.id, name, actor, atMs))
    }
  }
  previous = {
    atMs,
    nodes: new Map(event.nodes.map((node) => [node.id, node.figures?.actors ?? {}])),
  }
  if (event.http !== null && samples.at(-1)?.at_ms !== event.http.at_ms) {
    samples.push(event.http)
    if (samples.length > SAMPLES_MAX) samples.shift()
  }
  // Keep the notice (a kill's) across redraws, and the keyboard's place on a button.
  const notice = document.getElementById('notice')
  const focused = document.activeElement?.getAttribute('aria-label') ?? null
  render(
    notice,
    el(
      'p',
      { class: 'muted', 'data-field': 'updated' },
      `Live: updated ${new Date(atMs).toLocaleTimeString()}`,
    ),
    el('div', { class: 'charts' }, seriesOf(samples).map(chart)),
    el('h2', {}, 'Mesh'),
    meshPicture(event.nodes, rates) as unknown as Node,
    event.nodes.map((node) => actorTable(node, rates)),
  )
  if (focused !== null) {
    document.querySelector<HTMLElement>(`[aria-label="${CSS.escape(focused)}"]`)?.focus()
  }
}

function connect(): void {
  const source = new EventSource('/console/api/live')
  source.addEventListener('history', (message) => {
    const list = JSON.parse((message as MessageEvent<string>).data) as HttpSample[]
    samples.splice(0, samples.length, ...list.slice(-SAMPLES_MAX))
  })
  source.addEventListener('figures', (message) => {
    try {
      draw(JSON.parse((message as MessageEvent<string>).data) as LiveEvent)
    } catch (error) {
      notify(errorText(error), 'error')
    }
  })
  source.addEventListener('signed-out', () => {
    source.close()
    window.location.assign('/console/login')
  })
}

connect()
