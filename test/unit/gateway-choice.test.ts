/** Goal: a gateway prefers the storage nodes that answer. Idle nodes of equal latency are taken in
 * turn; a node with more requests waiting, or a slower recent answer, comes later; a node whose
 * request has waited long (a frozen process) comes last whatever it answered before, and a slow
 * answer fades, so the node is tried again later. Method: NodeChoice driven with explicit times. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { NodeChoice } from '../../http/gateway-choice.js'
import type { Member } from '../../protocol/cluster.js'

const node = (id: string): Member => ({
  id,
  kind: 'node',
  pool: 'p1',
  poolHash: 'h',
  httpAddr: `127.0.0.1:${id.slice(1)}`,
  grpcAddr: '',
  incarnation: 1,
  status: 'Alive',
  phase: 'serving',
  version: '',
  freeBytes: 0,
  wallMs: 0,
})
const NODES = [node('n1'), node('n2'), node('n3')]
const ids = (members: Member[]): string[] => members.map((member) => member.id)

/** One request to `id` answered after `ms`, at `atMs`. */
function answered(choice: NodeChoice, id: string, atMs: number, ms: number): void {
  choice.answered(id, choice.sent(id, atMs), atMs + ms)
}

test('idle nodes of equal latency are taken in turn', () => {
  const choice = new NodeChoice()
  const firsts = Array.from({ length: 6 }, () => choice.order(NODES, 0)[0]?.id)
  assert.equal(firsts, ['n1', 'n2', 'n3', 'n1', 'n2', 'n3'])
})

test('requests waiting and slower answers make a node dearer', () => {
  const choice = new NodeChoice()
  for (const id of ['n1', 'n2', 'n3']) answered(choice, id, 0, 20)
  choice.sent('n1', 100)
  choice.sent('n1', 100)
  answered(choice, 'n2', 100, 200)
  assert.equal(ids(choice.order(NODES, 110)), ['n3', 'n2', 'n1'])
})

test('a node whose request waits long comes last; given up, it is back once the wait fades', () => {
  const choice = new NodeChoice()
  for (const id of ['n1', 'n2', 'n3']) answered(choice, id, 0, 5)
  const frozen = choice.sent('n3', 1_000)
  const busy = [choice.sent('n1', 2_450), choice.sent('n1', 2_450), choice.sent('n1', 2_450)]
  // n1 has three requests waiting 50 ms; n3 one that waited 1.5 s, though it answered in 5 ms.
  assert.equal(ids(choice.order(NODES, 2_500)).at(-1), 'n3')
  choice.settled('n3', frozen, 2_500)
  assert.equal(ids(choice.order(NODES, 2_600)).at(-1), 'n3', 'its wait counts as its latency')
  for (const request of busy) choice.answered('n1', request, 2_600)
  // A minute on, the slow wait has faded: the three are taken in turn again.
  const firsts = Array.from({ length: 3 }, () => choice.order(NODES, 60_000)[0]?.id)
  assert.equal([...firsts].sort(), ['n1', 'n2', 'n3'])
})

test.run()
