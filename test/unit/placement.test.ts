/** Goal: placement is a pure function of a pool's member list that every node computes alike, with
 * RF distinct replicas per partition and no node above its share; SVC_POOL_NODES is read strictly;
 * new buckets go to the pool with the most room. Method: compute tables for several pool sizes and
 * orders and check their properties; feed parsePoolNodes good and bad lists. */
import { createHash } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  choosePool,
  PARTITIONS,
  partitionOf,
  partitionTable,
  parsePoolNodes,
  poolHash,
  type PoolNode,
} from '../../protocol/placement.js'

const ids = (n: number): string[] => Array.from({ length: n }, (_, i) => `n${i + 1}`)

function loads(table: string[][]): Map<string, number> {
  const load = new Map<string, number>()
  for (const replicas of table) for (const id of replicas) load.set(id, (load.get(id) ?? 0) + 1)
  return load
}

test('the table is the same whatever the order of the ids', () => {
  const forward = partitionTable(ids(7), 3)
  const backward = partitionTable(ids(7).reverse(), 3)
  const shuffled = partitionTable(['n4', 'n2', 'n7', 'n1', 'n6', 'n3', 'n5'], 3)
  assert.equal(backward, forward)
  assert.equal(shuffled, forward)
})

test('every partition has RF distinct replicas, and no node more than its share', () => {
  for (const [n, rf] of [
    [4, 3],
    [5, 2],
    [7, 3],
    [10, 3],
    [16, 5],
    [3, 1],
  ] as const) {
    const table = partitionTable(ids(n), rf)
    assert.is(table.length, PARTITIONS)
    for (const replicas of table) {
      assert.is(replicas.length, rf)
      assert.is(new Set(replicas).size, rf)
    }
    const cap = Math.ceil((PARTITIONS * rf) / n)
    for (const [id, load] of loads(table)) assert.ok(load <= cap, `${id} holds ${load} > ${cap}`)
    assert.is(loads(table).size, n, 'every node holds some partition')
  }
})

test('the cap binds where plain rendezvous would overload a node', () => {
  // Uncapped top-3 of 10 nodes gives n7 89 partitions; the cap is ceil(256 x 3 / 10) = 77.
  const uncapped = new Map<string, number>()
  for (let p = 0; p < PARTITIONS; p++) {
    const scored = ids(10).map((id) => [
      createHash('sha256').update(`${p}|${id}`).digest('hex'),
      id,
    ])
    for (const [, id] of scored.sort().reverse().slice(0, 3)) {
      uncapped.set(id as string, (uncapped.get(id as string) ?? 0) + 1)
    }
  }
  assert.ok(Math.max(...uncapped.values()) > 77)
  assert.ok(Math.max(...loads(partitionTable(ids(10), 3)).values()) <= 77)
  // When 256 x RF divides evenly by N the cap leaves no slack: exact balance.
  assert.equal([...loads(partitionTable(ids(4), 3)).values()], [192, 192, 192, 192])
})

test('with N <= RF every node holds every partition', () => {
  for (const n of [1, 2, 3]) {
    const table = partitionTable(ids(n), 3)
    for (const replicas of table) assert.equal([...replicas].sort(), ids(n))
  }
})

test('removing a node moves only partitions it held or that the cap reshuffles', () => {
  const before = partitionTable(ids(8), 3)
  const after = partitionTable(
    ids(8).filter((id) => id !== 'n8'),
    3,
  )
  const kept = before.filter((replicas, p) => replicas.every((id) => after[p]?.includes(id)))
  // Rendezvous keeps most partitions whose replicas did not include the removed node.
  const untouched = before.filter((replicas) => !replicas.includes('n8')).length
  assert.ok(kept.length >= untouched / 2, `${kept.length} of ${untouched} kept`)
})

test('partitionOf is the first byte of SHA-256 of bucket NUL key', () => {
  // SHA-256("b\0k") starts with 0x26.
  assert.is(partitionOf('b', 'k'), 0x26)
  const seen = new Set<number>()
  for (let i = 0; i < 2_000; i++) seen.add(partitionOf('bucket', `key-${i}`))
  assert.ok(seen.size > 240, 'keys spread over the partitions')
})

test('parsePoolNodes reads name:host:port lists', () => {
  const nodes = parsePoolNodes('n1:10.0.0.1:9100, n2:node-2.local:9101,n3:[::1]:9102')
  assert.equal(nodes, [
    { id: 'n1', host: '10.0.0.1', port: 9100 },
    { id: 'n2', host: 'node-2.local', port: 9101 },
    { id: 'n3', host: '[::1]', port: 9102 },
  ])
})

test('parsePoolNodes refuses empty, malformed and repeated entries', () => {
  const refused: [string, RegExp][] = [
    ['', /empty/],
    ['  ', /empty/],
    ['n1:host', /malformed/],
    ['n1:host:0', /malformed/],
    ['n1:host:65536', /malformed/],
    ['n1:host:91a', /malformed/],
    [':host:9100', /malformed/],
    ['n1::9100', /malformed/],
    ['n1:host:9100,', /malformed/],
    ['n 1:host:9100', /malformed/],
    ['n1:a:9100,n1:b:9100', /names node 'n1' twice/],
    ['n1:Host:9100,n2:host:9100', /address host:9100 twice/],
  ]
  for (const [value, reason] of refused) {
    const parsed = parsePoolNodes(value)
    assert.type(parsed, 'string', value)
    assert.match(parsed as string, reason)
  }
})

test('poolHash does not depend on the order of the list, and changes with any entry', () => {
  const nodes = parsePoolNodes('n1:h1:1,n2:h2:2,n3:h3:3') as PoolNode[]
  const hash = poolHash(nodes)
  assert.match(hash, /^[0-9a-f]{64}$/)
  assert.is(poolHash([...nodes].reverse()), hash)
  assert.is.not(poolHash(parsePoolNodes('n1:h1:1,n2:h2:2,n3:h3:4') as PoolNode[]), hash)
})

test('choosePool takes the most room: fullest alive node times nodes over RF', () => {
  const pools = [
    { name: 'b', rf: 3, aliveFreeBytes: [900, 100, 800], nodes: 3 }, // 100
    { name: 'a', rf: 3, aliveFreeBytes: [400, 500], nodes: 6 }, // 800
    { name: 'c', rf: 2, aliveFreeBytes: [300, 300], nodes: 2 }, // 300
  ]
  assert.is(choosePool(pools), 'a')
  assert.is(
    choosePool([
      { ...pools[2]!, name: 'z' },
      { ...pools[2]!, name: 'y' },
    ]),
    'y',
  )
  assert.is(choosePool([{ name: 'a', rf: 3, aliveFreeBytes: [], nodes: 3 }]), null)
  assert.is(choosePool([]), null)
})

test.run()
