/** @module The Cluster page: the node the console is served by (mode, version, uptime, data volume,
 * the store's totals) and, in a cluster, every node and gateway with its status, pool, free space
 * and version, the cluster's health and its repair status (hints, anti-entropy, the scrubber, a
 * bootstrap, lifecycle passes). The cluster's figures come from the cluster administration API,
 * which only a SuperUser may call; a single node shows itself. Looked at again every 5 s. */
import {
  api,
  ApiError,
  dataTable,
  el,
  errorText,
  formatBytes,
  formatTime,
  pageData,
  render,
} from './common.js'

const REFRESH_MS = 5_000

interface NodeSummary {
  id: string
  mode: string
  version: string
  uptime_seconds: number
  volume: { size_bytes: number; free_bytes: number; full: boolean } | null
}

interface Stats {
  buckets_count: number
  objects_count: number
  storage_used_bytes: number
  dedup_unique_blobs: number
  dedup_ratio: number
}

interface TopologyNode {
  id: string
  status: string
  phase?: string
  http_addr: string
  free_bytes: number
  version?: string
}

interface Topology {
  cluster: string
  pools: {
    name: string
    replication_factor: number
    write_quorum: number
    read_quorum: number
    nodes: TopologyNode[]
  }[]
  gateways: { id: string; status: string; http_addr: string; version?: string }[]
}

interface Health {
  status: string
  nodes: Record<string, number>
  hints_pending: number
  max_clock_skew_ms: number
}

type Json = Record<string, unknown>

function duration(seconds: number): string {
  const days = Math.floor(seconds / 86_400)
  const hours = Math.floor((seconds % 86_400) / 3_600)
  const minutes = Math.floor((seconds % 3_600) / 60)
  if (days > 0) return `${days} d ${hours} h`
  if (hours > 0) return `${hours} h ${minutes} min`
  return `${minutes} min ${seconds % 60} s`
}

function stat(label: string, value: string, field: string): HTMLElement {
  return el(
    'div',
    { class: 'card' },
    el('div', { class: 'muted' }, label),
    el('div', { class: 'stat', 'data-field': field }, value),
  )
}

function badge(text: string): HTMLElement {
  return el('span', { class: `badge ${text}` }, text)
}

function selfSection(node: NodeSummary, stats: Stats | null): HTMLElement {
  const volume = node.volume
  return el(
    'section',
    { 'aria-labelledby': 'self-heading' },
    el('h2', { id: 'self-heading' }, `This node: ${node.id}`),
    el(
      'div',
      { class: 'grid' },
      stat('Mode', node.mode, 'mode'),
      stat('Version', node.version, 'version'),
      stat('Up for', duration(node.uptime_seconds), 'uptime'),
      volume === null
        ? null
        : stat(
            'Free space',
            `${formatBytes(volume.free_bytes)} of ${formatBytes(volume.size_bytes)}`,
            'free',
          ),
      volume === null ? null : stat('Health', volume.full ? 'volume full' : 'ok', 'health'),
      stats === null ? null : stat('Buckets', String(stats.buckets_count), 'buckets'),
      stats === null ? null : stat('Objects', String(stats.objects_count), 'objects'),
      stats === null ? null : stat('Stored', formatBytes(stats.storage_used_bytes), 'stored'),
      stats === null ? null : stat('Dedup ratio', stats.dedup_ratio.toFixed(2), 'dedup'),
    ),
  )
}

function membersSection(topology: Topology): HTMLElement {
  const rows = topology.pools.flatMap((pool) =>
    pool.nodes.map((node) =>
      el(
        'tr',
        { 'data-node': node.id },
        el('th', { scope: 'row' }, node.id),
        el('td', {}, 'node'),
        el('td', {}, pool.name),
        el('td', {}, badge(node.status)),
        el('td', {}, node.phase ?? ''),
        el('td', { class: 'num' }, formatBytes(node.free_bytes)),
        el('td', {}, node.version ?? ''),
        el('td', {}, node.http_addr),
      ),
    ),
  )
  const gateways = topology.gateways.map((gateway) =>
    el(
      'tr',
      { 'data-node': gateway.id },
      el('th', { scope: 'row' }, gateway.id),
      el('td', {}, 'gateway'),
      el('td', {}, '—'),
      el('td', {}, badge(gateway.status)),
      el('td', {}, ''),
      el('td', { class: 'num' }, '—'),
      el('td', {}, gateway.version ?? ''),
      el('td', {}, gateway.http_addr),
    ),
  )
  const pools = topology.pools
    .map((pool) => {
      const quorums = `W ${pool.write_quorum}, R ${pool.read_quorum}`
      return `${pool.name}: RF ${pool.replication_factor}, ${quorums}`
    })
    .join('; ')
  return el(
    'section',
    { 'aria-labelledby': 'members-heading' },
    el('h2', { id: 'members-heading' }, `Cluster ${topology.cluster}`),
    el('p', { class: 'muted' }, pools),
    dataTable(
      'Nodes and gateways',
      ['Member', 'Kind', 'Pool', 'Status', 'Phase', 'Free', 'Version', 'HTTP'],
      [...rows, ...gateways],
      ['Free'],
    ),
  )
}

function healthSection(health: Health): HTMLElement {
  const counts = Object.entries(health.nodes)
    .map(([status, count]) => `${count} ${status}`)
    .join(', ')
  return el(
    'section',
    { 'aria-labelledby': 'health-heading' },
    el('h2', { id: 'health-heading' }, 'Health'),
    el(
      'div',
      { class: 'grid' },
      el(
        'div',
        { class: 'card' },
        el('div', { class: 'muted' }, 'Cluster'),
        el('div', { class: 'stat', 'data-field': 'cluster-health' }, badge(health.status)),
      ),
      stat('Nodes', counts, 'node-counts'),
      stat('Hints pending', String(health.hints_pending), 'hints'),
      stat('Largest clock skew', `${health.max_clock_skew_ms} ms`, 'skew'),
    ),
  )
}

function figure(value: unknown): string {
  if (value === null || value === undefined) return '—'
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(3)
  if (typeof value === 'string') return /^\d{4}-\d\d-\d\dT/.test(value) ? formatTime(value) : value
  return JSON.stringify(value)
}

/** One part of the repair status (its scalar fields) as a definition list. */
function repairPart(title: string, part: unknown): HTMLElement {
  const entries = Object.entries((part ?? {}) as Json).filter(
    ([, value]) => typeof value !== 'object' || value === null,
  )
  return el(
    'div',
    { class: 'card', 'data-repair': title.toLowerCase() },
    el('h3', {}, title),
    el(
      'dl',
      { class: 'meta' },
      entries.flatMap(([name, value]) => [
        el('dt', {}, name.replaceAll('_', ' ')),
        el('dd', {}, figure(value)),
      ]),
    ),
  )
}

function repairSection(status: Json): HTMLElement {
  return el(
    'section',
    { 'aria-labelledby': 'repair-heading' },
    el('h2', { id: 'repair-heading' }, 'Repair'),
    el(
      'div',
      { class: 'grid' },
      repairPart('Hints', status['hints']),
      repairPart('Anti-entropy', status['anti_entropy']),
      repairPart('Scrubber', status['scrubber']),
      repairPart('Bootstrap', status['bootstrap']),
      repairPart('Lifecycle', status['lifecycle']),
    ),
  )
}

/** A single node's background work: its lifecycle passes (the admin API's, for a SuperUser). */
async function singleNodeSections(): Promise<HTMLElement[]> {
  const single = el('p', { class: 'muted' }, 'A single node: this node is the whole service.')
  try {
    const lifecycle = await api<Json>('/console/api/admin/lifecycle')
    const work = el(
      'section',
      { 'aria-labelledby': 'work-heading' },
      el('h2', { id: 'work-heading' }, 'Background work'),
      el('div', { class: 'grid' }, repairPart('Lifecycle', lifecycle)),
    )
    return [single, work]
  } catch {
    // Another role sees no lifecycle figures: the admin API is a SuperUser's.
    return [single]
  }
}

async function clusterSections(): Promise<HTMLElement[]> {
  try {
    const [topology, health, repair] = await Promise.all([
      api<Topology>('/console/api/cluster/topology'),
      api<Health>('/console/api/cluster/health'),
      api<Json>('/console/api/cluster/repair-status'),
    ])
    return [healthSection(health), membersSection(topology), repairSection(repair)]
  } catch (error) {
    const refused = error instanceof ApiError && error.status === 403
    const text = refused
      ? `The cluster's figures are shown to SuperUsers: ${errorText(error)}`
      : errorText(error)
    return [el('p', { class: 'notice error', role: 'alert' }, text)]
  }
}

async function load(): Promise<void> {
  const [node, stats] = await Promise.all([
    api<NodeSummary>('/console/api/node'),
    fetch('/api/stats', { credentials: 'same-origin' })
      .then((response) => (response.ok ? (response.json() as Promise<Stats>) : null))
      .catch(() => null),
  ])
  const clustered = pageData().mode !== 'single'
  const rest = clustered ? await clusterSections() : await singleNodeSections()
  render(
    selfSection(node, stats),
    rest,
    el('p', { class: 'muted' }, `Updated ${new Date().toLocaleTimeString()}`),
  )
}

async function refresh(): Promise<void> {
  try {
    await load()
  } catch (error) {
    render(el('p', { class: 'notice error', role: 'alert' }, errorText(error)))
  }
  window.setTimeout(() => void refresh(), REFRESH_MS)
}

void refresh()
