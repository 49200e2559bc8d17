/** Goal: the SWIM table's rules hold on their own: which record wins a merge, how a member refutes
 * what is said about it, when a suspicion becomes death, and how often a change is piggybacked.
 * Method: drive SwimTable with records and times chosen by the test. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  supersedes,
  suspicionTimeoutMs,
  SwimTable,
  transmitLimit,
} from '../../actors/gossiper/swim.js'
import type { Member, MemberStatus } from '../../protocol/cluster.js'

const T0 = 1_700_000_000_000

function member(id: string, incarnation: number, status: MemberStatus = 'Alive'): Member {
  return {
    id,
    kind: 'node',
    pool: 'p1',
    poolHash: 'h',
    httpAddr: `${id}:80`,
    grpcAddr: `${id}:9100`,
    incarnation,
    status,
    phase: 'serving',
    version: '0.1.0',
    freeBytes: 0,
    wallMs: T0,
  }
}

test('a higher incarnation wins whatever the statuses', () => {
  assert.ok(supersedes(member('a', 2, 'Alive'), member('a', 1, 'Dead')))
  assert.ok(supersedes(member('a', 2, 'Alive'), member('a', 1, 'Left')))
  assert.not.ok(supersedes(member('a', 1, 'Left'), member('a', 2, 'Alive')))
})

test('at equal incarnation Alive < Suspect < Dead < Left; an equal record changes nothing', () => {
  const order: MemberStatus[] = ['Alive', 'Suspect', 'Dead', 'Left']
  order.forEach((known, k) => {
    order.forEach((incoming, i) => {
      const wins = supersedes(member('a', 5, incoming), member('a', 5, known))
      assert.is(wins, i > k, `${incoming} over ${known}`)
    })
  })
  assert.ok(supersedes(member('a', 0, 'Dead'), undefined), 'an unknown member is taken')
})

test('merge keeps the winning record and queues it; a losing one is ignored', () => {
  const table = new SwimTable(member('self', T0))
  assert.is(table.merge(member('a', 3), T0), 'changed')
  assert.is(table.merge(member('a', 2, 'Dead'), T0), 'unchanged')
  assert.is(table.get('a')?.member.status, 'Alive')
  assert.is(table.merge(member('a', 3, 'Suspect'), T0 + 10), 'changed')
  assert.is(table.get('a')?.suspectedAtMs, T0 + 10)
  assert.equal(
    table.takeUpdates(16).map((m) => [m.id, m.status]),
    [['a', 'Suspect']],
    'one queued change per member: its latest record',
  )
})

test('a record saying self is Suspect or Dead is refuted with max(incarnation + 1, now)', () => {
  const table = new SwimTable(member('self', T0))
  assert.is(table.merge(member('self', T0, 'Suspect'), T0 + 5), 'refuted')
  assert.is(table.self.incarnation, T0 + 5, 'now is above incarnation + 1')
  assert.is(table.self.status, 'Alive')
  // A clock gone backwards still raises the incarnation.
  assert.is(table.merge(member('self', T0 + 5, 'Dead'), T0 - 1_000), 'refuted')
  assert.is(table.self.incarnation, T0 + 6)
  assert.is(table.merge(member('self', T0 + 6, 'Alive'), T0), 'unchanged')
  assert.is(table.merge(member('self', T0 + 3, 'Dead'), T0), 'unchanged', 'an older record')
  assert.equal(table.takeUpdates(16)[0]?.incarnation, T0 + 6, 'the refutation is disseminated')
})

test('Left is final for its incarnation: a leaving member does not refute it', () => {
  const table = new SwimTable(member('self', T0))
  table.leave()
  assert.is(table.merge(member('self', T0, 'Dead'), T0 + 1), 'unchanged')
  assert.is(table.self.status, 'Left')
  table.merge(member('a', 7, 'Left'), T0)
  assert.is(table.merge(member('a', 7, 'Alive'), T0), 'unchanged')
  assert.is(table.merge(member('a', 8, 'Alive'), T0), 'changed', 'a restart comes back')
})

test('a Suspect not refuted within the timeout is Dead; a refuted one is not', () => {
  const table = new SwimTable(member('self', T0))
  table.merge(member('a', 1), T0)
  table.merge(member('b', 1), T0)
  assert.ok(table.suspect('a', T0))
  assert.ok(table.suspect('b', T0))
  assert.not.ok(table.suspect('a', T0 + 1), 'already Suspect')
  const timeoutMs = suspicionTimeoutMs(table.size)
  assert.equal(table.expireSuspects(T0 + timeoutMs - 1), [])
  table.merge(member('b', 2), T0 + 100) // b refutes
  assert.equal(table.expireSuspects(T0 + timeoutMs), ['a'])
  assert.is(table.get('a')?.member.status, 'Dead')
  assert.is(table.get('b')?.member.status, 'Alive')
  assert.not.ok(table.suspect('a', T0), 'Dead is not suspected again')
})

test('the suspicion timeout and piggyback count grow with the cluster', () => {
  assert.is(suspicionTimeoutMs(3), 5_000)
  assert.is(suspicionTimeoutMs(1_000), 12_002)
  assert.is(transmitLimit(1), 3)
  assert.is(transmitLimit(7), 9)
})

test('each change is piggybacked transmitLimit times, then no more', () => {
  const table = new SwimTable(member('self', T0))
  table.merge(member('a', 1), T0)
  const limit = transmitLimit(table.size)
  let sends = 0
  for (let i = 0; i < limit + 5; i++) sends += table.takeUpdates(16).length
  assert.is(sends, limit)
  assert.is(table.pendingUpdates, 0)
})

test('updateSelf raises the incarnation only for a real change', () => {
  const table = new SwimTable(member('self', T0))
  table.updateSelf({ freeBytes: 0, phase: 'serving' }, T0 + 1)
  assert.is(table.self.incarnation, T0)
  table.updateSelf({ freeBytes: 10 }, T0 + 1)
  assert.is(table.self.incarnation, T0 + 1)
  assert.is(table.self.freeBytes, 10)
})

test.run()
