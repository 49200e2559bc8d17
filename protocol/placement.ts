/** @module Placement (CLUSTER.md section 1): which pool a new bucket goes to, and which nodes of a
 * pool hold a key. A pool is the fixed SVC_POOL_NODES list; its 256 partitions map to replicas by
 * rendezvous hashing, capped so that no node holds more than its share. Everything here is a pure
 * function of the pool's member ids, so every node computes the same table with no layout
 * protocol, and a node that is down keeps its partitions (repair, not rebalancing, catches up). */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'

export const PARTITIONS = 256

export interface PoolNode {
  id: string
  host: string
  port: number
}

const NODE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/
const HOST_PATTERN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}

/** Reads SVC_POOL_NODES, `name:host:port,...` (an IPv6 host in brackets). A string is the reason
 * the value is refused, for the operator's one-line error. */
export function parsePoolNodes(value: string): PoolNode[] | string {
  const entries = value.split(',').map((entry) => entry.trim())
  if (value.trim() === '') return 'is empty: list the pool as name:host:port,...'
  const nodes: PoolNode[] = []
  const names = new Set<string>()
  const addresses = new Set<string>()
  for (const entry of entries) {
    const first = entry.indexOf(':')
    const last = entry.lastIndexOf(':')
    const id = entry.slice(0, first)
    const host = entry.slice(first + 1, last)
    const portText = entry.slice(last + 1)
    const port = Number(portText)
    const wellFormed =
      first > 0 &&
      last > first &&
      NODE_ID_PATTERN.test(id) &&
      HOST_PATTERN.test(host) &&
      /^[0-9]{1,5}$/.test(portText) &&
      port >= 1 &&
      port <= 65_535
    if (!wellFormed) return `has a malformed entry '${entry}': expected name:host:port`
    if (names.has(id)) return `names node '${id}' twice`
    const address = `${host.toLowerCase()}:${port}`
    if (addresses.has(address)) return `lists address ${address} twice`
    names.add(id)
    addresses.add(address)
    nodes.push({ id, host, port })
  }
  return nodes
}

/** Hex SHA-256 of the pool's sorted `name:host:port` entries: equal on every node that was given
 * the same list, in whatever order. */
export function poolHash(nodes: readonly PoolNode[]): string {
  const entries = nodes.map((node) => `${node.id}:${node.host}:${node.port}`).sort()
  return sha256(entries.join(',')).toString('hex')
}

export function partitionOf(bucket: string, key: string): number {
  return sha256(`${bucket}\0${key}`)[0] as number
}

/** Tables already computed, by RF and sorted ids: a table costs 256·N hashes, and every actor
 * that places keys (a node's, or the simulator's many nodes in one thread) asks for the same few.
 * Bounded: past the limit it starts over. */
const TABLES_KEPT_MAX = 32
const tables = new Map<string, readonly (readonly string[])[]>()

/** The replica ids of each partition, by preference (highest rendezvous score first). */
export function partitionTable(nodeIds: readonly string[], rf: number): string[][] {
  assert(Number.isInteger(rf) && rf >= 1)
  const ids = [...nodeIds].sort()
  assert(ids.length > 0 && new Set(ids).size === ids.length, 'node ids empty or repeated')
  const name = `${rf}\0${ids.join('\0')}`
  let table = tables.get(name)
  if (table === undefined) {
    if (tables.size >= TABLES_KEPT_MAX) tables.clear()
    table = computeTable(ids, rf)
    tables.set(name, table)
  }
  // A copy: the caller may sort or change its own.
  return table.map((replicas) => [...replicas])
}

function computeTable(ids: readonly string[], rf: number): string[][] {
  const partitions = Array.from({ length: PARTITIONS }, (_, p) => p)
  const score = scores(ids)
  const byPreference = (p: number) => (a: string, b: string) =>
    compareScores(score(p, b), score(p, a)) || (a < b ? -1 : 1)
  if (ids.length <= rf) return partitions.map((p) => [...ids].sort(byPreference(p)))
  const table = capped(ids, rf, score)
  return table.map((replicas, p) => {
    assert(replicas.length === rf && new Set(replicas).size === rf)
    return replicas.sort(byPreference(p))
  })
}

type Score = (partition: number, id: string) => Buffer

function scores(ids: readonly string[]): Score {
  const table = new Map<string, Buffer>()
  for (let p = 0; p < PARTITIONS; p++) {
    for (const id of ids) table.set(`${p}|${id}`, sha256(`${p}|${id}`))
  }
  return (p, id) => table.get(`${p}|${id}`) as Buffer
}

function compareScores(a: Buffer, b: Buffer): number {
  return Buffer.compare(a, b)
}

/** Capped rendezvous: (partition, node) pairs are taken best score first while the partition
 * needs replicas and the node is under ceil(256·RF/N). A partition left short when only nodes it
 * already has are under the cap takes a full node X from another partition q that lacks one such
 * node Y (X is full and Y is not, so such a q exists): Y replaces X in q, and X joins. */
function capped(ids: readonly string[], rf: number, score: Score): string[][] {
  const cap = Math.ceil((PARTITIONS * rf) / ids.length)
  const table: string[][] = Array.from({ length: PARTITIONS }, () => [])
  const load = new Map(ids.map((id) => [id, 0]))
  const pairs = ids.flatMap((id) =>
    Array.from({ length: PARTITIONS }, (_, p) => ({ p, id, score: score(p, id) })),
  )
  pairs.sort((a, b) => compareScores(b.score, a.score) || a.p - b.p || (a.id < b.id ? -1 : 1))
  for (const { p, id } of pairs) {
    const replicas = table[p] as string[]
    if (replicas.length < rf && (load.get(id) as number) < cap) {
      replicas.push(id)
      load.set(id, (load.get(id) as number) + 1)
    }
  }
  for (let p = 0; p < PARTITIONS; p++) {
    const replicas = table[p] as string[]
    // Every node under the cap is in this partition already, or the pass above took it here.
    while (replicas.length < rf) {
      const spare = ids.find((id) => (load.get(id) as number) < cap) as string
      const full = ids.find((id) => !replicas.includes(id)) as string
      assert(spare !== undefined && replicas.includes(spare))
      assert(full !== undefined && load.get(full) === cap)
      const q = table.findIndex((other) => other.includes(full) && !other.includes(spare))
      assert(q >= 0)
      const other = table[q] as string[]
      other[other.indexOf(full)] = spare
      load.set(spare, (load.get(spare) as number) + 1)
      replicas.push(full)
    }
  }
  return table
}

export interface PoolSpace {
  name: string
  rf: number
  /** Free bytes of each of the pool's Alive nodes. */
  aliveFreeBytes: number[]
  nodes: number
}

/** The pool a new bucket goes to: the one with the most room, counted as its fullest Alive node's
 * free bytes times nodes over RF (what the pool can still take when writes spread evenly). Ties go
 * to the first name; null when no pool has an Alive node. */
export function choosePool(pools: readonly PoolSpace[]): string | null {
  let best: { name: string; room: number } | null = null
  for (const pool of pools) {
    if (pool.aliveFreeBytes.length === 0) continue
    assert(pool.rf >= 1 && pool.nodes >= 1)
    const room = (Math.min(...pool.aliveFreeBytes) * pool.nodes) / pool.rf
    const better =
      best === null || room > best.room || (room === best.room && pool.name < best.name)
    if (better) best = { name: pool.name, room }
  }
  return best?.name ?? null
}
