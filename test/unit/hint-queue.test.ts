/** Goal: the hint queue delivers a replica's hints once gossip shows it Alive (at once at start,
 * within 5 s of its coming back or of new hints for it, again 5 s after a pass that could not
 * reach it), its own node's among them, drops hints older than SVC_HINT_TTL_HOURS without
 * delivering them (also while their replica stays away), removes each delivered one (also one
 * whose replica held its change already, as after anti-entropy), and tells the store which
 * replicas have been away longer than the TTL (no hint is recorded for them) until they are back.
 * Method: the real hint-queue on a fake context whose calls the test answers: gossip's view (the
 * test sets each member's status), the store's hint pages and removals (a list the test keeps)
 * and the lists of replicas away past the TTL it is told, and the coordinator's key.bring (the
 * test says whether the replica is reachable). */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  hintQueue,
  LOOK_MS,
  NEW_HINTS_PASS_MS,
  UNREACHED_RETRY_MS,
} from '../../actors/hint-queue/hint-queue.js'
import type { MemberStatus } from '../../protocol/cluster.js'
import { fail, ok } from '../../protocol/errors.js'
import { hlcString } from '../../protocol/hlc.js'
import type { Hint } from '../../protocol/messages.js'
import { fakeContext, type FakeContext } from '../support/fake-context.js'

const HOUR_MS = 3_600_000

interface World {
  ctx: FakeContext
  hints: Hint[]
  status: Map<string, MemberStatus>
  reachable: Set<string>
  brought: string[]
  /** Keys whose replica holds the newest state already (anti-entropy was there first). */
  current: Set<string>
  /** The store fails hint pages and removals while set (restarting after the look's count). */
  storeDown: boolean
  /** Runs when the coordinator brings a key: a client's write meanwhile. */
  onBring: (key: string) => void
  /** Each `hint.closed` list the store was told. */
  closed: string[][]
  /** Runs once the store counted the hints for a `hint.nodes` (the count already made). */
  onCount: () => void
}

function world(ttlHours = '1'): World {
  const ctx = fakeContext({
    self: 'hint-queue',
    config: { SVC_NODE_ID: 'n1', SVC_HINT_TTL_HOURS: ttlHours },
  })
  const w: World = {
    ctx,
    hints: [],
    status: new Map([
      ['n2', 'Alive'],
      ['n3', 'Dead'],
    ]),
    reachable: new Set(['n2', 'n3']),
    brought: [],
    current: new Set(),
    storeDown: false,
    onBring: () => undefined,
    closed: [],
    onCount: () => undefined,
  }
  ctx.onCall((to, msg) => {
    const body = msg as unknown as Record<string, unknown>
    if (to === 'gossiper') {
      const members = [...w.status].map(([id, status]) => ({ id, kind: 'node', status }))
      return ok({ members })
    }
    const paging = msg.kind === 'hint.page' || msg.kind === 'hint.done'
    if (to === 'replica-store' && paging && w.storeDown) return fail('unavailable', 'restarting')
    if (to === 'replica-store' && msg.kind === 'hint.page') {
      const node = body['node'] as string
      const after = body['after'] as { key: string } | null
      const page = w.hints
        .filter((hint) => hint.node === node && (after === null || hint.key > after.key))
        .slice(0, body['limit'] as number)
      return ok(page)
    }
    if (to === 'replica-store' && msg.kind === 'hint.nodes') {
      const counts: Record<string, number> = {}
      for (const one of w.hints) counts[one.node] = (counts[one.node] ?? 0) + 1
      w.onCount()
      return ok(counts)
    }
    if (to === 'replica-store' && msg.kind === 'hint.closed') {
      w.closed.push(body['nodes'] as string[])
      return ok(null)
    }
    if (to === 'replica-store' && msg.kind === 'hint.done') {
      const done = body['hints'] as Hint[]
      const before = w.hints.length
      w.hints = w.hints.filter(
        (hint) => !done.some((one) => one.node === hint.node && one.key === hint.key),
      )
      return ok(before - w.hints.length)
    }
    if (to === 'coordinator' && msg.kind === 'key.bring') {
      const node = body['node'] as string
      if (!w.reachable.has(node)) return fail('unavailable', `${node} unreachable`)
      const key = body['key'] as string
      if (w.current.has(key)) return ok('current')
      w.brought.push(`${node}/${key}`)
      w.onBring(key)
      return ok('repaired')
    }
    return fail('unavailable', `${to} ${msg.kind} is not wired`)
  })
  return w
}

function hint(node: string, key: string, ageMs: number, now: number): Hint {
  return { node, bucket: 'b', key, stamp: hlcString({ wallMs: now - ageMs, logical: 0, node: 1 }) }
}

/** Lets the queue's calls (each a promise) run, the clock standing still. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve))
}

async function step(w: World, ms: number): Promise<void> {
  for (let passed = 0; passed < ms; passed += LOOK_MS) {
    w.ctx.advance(LOOK_MS)
    await settle()
  }
}

test('an Alive replica gets its hints; an expired one is dropped, not delivered', async () => {
  const w = world()
  const now = w.ctx.now()
  w.hints.push(hint('n2', 'fresh', 60_000, now), hint('n2', 'old', 2 * HOUR_MS, now))
  w.hints.push(hint('n3', 'later', 1_000, now))
  w.current.add('synced')
  w.hints.push(hint('n2', 'synced', 1_000, now))
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, ['n2/fresh'], 'a replica current already has nothing brought')
  assert.equal(state.counters, { delivered: 2, expired: 1 })
  assert.equal(
    w.hints.map((one) => one.key),
    ['later'],
    'the Dead replica keeps its hint; the current one is done with',
  )
  // n3 comes back: its pass starts within the 0-5 s jitter.
  w.status.set('n3', 'Alive')
  await step(w, 5 * LOOK_MS + LOOK_MS)
  assert.equal(w.brought, ['n2/fresh', 'n3/later'])
  await hintQueue.stop?.(state, w.ctx)
})

test('a pass that cannot reach its replica ends, and the next comes 5 s later', async () => {
  const w = world()
  const now = w.ctx.now()
  w.hints.push(hint('n2', 'a', 1_000, now), hint('n2', 'b', 1_000, now))
  w.reachable.delete('n2')
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, [])
  assert.is(w.hints.length, 2, 'nothing removed')
  w.reachable.add('n2')
  await step(w, UNREACHED_RETRY_MS - 2 * LOOK_MS)
  assert.equal(w.brought, [], 'not before its retry')
  await step(w, 3 * LOOK_MS)
  assert.equal(w.brought, ['n2/a', 'n2/b'])
  assert.is(w.hints.length, 0)
  await hintQueue.stop?.(state, w.ctx)
})

test("a pass this node's store fails ends, and the next comes 5 s later", async () => {
  const w = world()
  w.hints.push(hint('n2', 'a', 1_000, w.ctx.now()))
  w.storeDown = true
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, [])
  w.storeDown = false
  await step(w, UNREACHED_RETRY_MS + 2 * LOOK_MS)
  assert.equal(w.brought, ['n2/a'], 'not at the next round, 30 s away')
  assert.is(w.hints.length, 0)
  await hintQueue.stop?.(state, w.ctx)
})

test('a hint recorded behind a running pass gets a pass within 5 s', async () => {
  const w = world()
  w.hints.push(hint('n2', 'b', 1_000, w.ctx.now()))
  // While `b` is brought, a write misses n2 on `a`, before the pass's cursor.
  w.onBring = (key) => {
    if (key === 'b') w.hints.push(hint('n2', 'a', 0, w.ctx.now()))
  }
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, ['n2/b'])
  await step(w, NEW_HINTS_PASS_MS + 2 * LOOK_MS)
  assert.equal(w.brought, ['n2/b', 'n2/a'], 'not at the next round, 30 s away')
  await hintQueue.stop?.(state, w.ctx)
})

test('a hint recorded once a pass delivered the last one gets a pass within 5 s', async () => {
  const w = world()
  w.hints.push(hint('n2', 'b', 1_000, w.ctx.now()))
  // The look before the pass counted one hint for n2; the pass delivers it and its last look at
  // the count finds none. Right after, a write misses n2 on another key: the next look counts
  // one again, as it did before the pass.
  w.onCount = () => {
    if (w.brought.length !== 1 || w.hints.length > 0) return
    w.onCount = () => undefined
    w.hints.push(hint('n2', 'a', 0, w.ctx.now()))
  }
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, ['n2/b'])
  await step(w, NEW_HINTS_PASS_MS + 2 * LOOK_MS)
  assert.equal(w.brought, ['n2/b', 'n2/a'], 'not at the next round, 30 s away')
  await hintQueue.stop?.(state, w.ctx)
})

test('new hints for a replica gossip never saw leave get a pass within 5 s', async () => {
  const w = world()
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, [], 'nothing to deliver: a pass ran, the next one 30 s away')
  // A moment's cut: a write missed n2, hinted, while gossip kept it Alive.
  w.hints.push(hint('n2', 'missed', 1_000, w.ctx.now()))
  await step(w, NEW_HINTS_PASS_MS + 2 * LOOK_MS)
  assert.equal(w.brought, ['n2/missed'])
  await hintQueue.stop?.(state, w.ctx)
})

test("a hint naming the queue's own node (its store missed a change) is delivered", async () => {
  const w = world()
  w.status.set('n1', 'Alive')
  w.reachable.add('n1')
  w.hints.push(hint('n1', 'own', 1_000, w.ctx.now()))
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(w.brought, ['n1/own'])
  assert.is(w.hints.length, 0)
  await hintQueue.stop?.(state, w.ctx)
})

test('the hints of a replica that stays away expire all the same', async () => {
  // A TTL of 36 s: expiry passes of a replica away every LOOK_MS (a tenth of it is less).
  const w = world('0.01')
  const ttlMs = 36_000
  const now = w.ctx.now()
  w.hints.push(hint('n3', 'stale', ttlMs + 1_000, now), hint('n3', 'young', 10_000, now))
  const state = await hintQueue.init(w.ctx)
  await step(w, LOOK_MS)
  assert.equal(
    w.hints.map((one) => one.key),
    ['young'],
  )
  await step(w, ttlMs - 10_000 + 2 * LOOK_MS)
  assert.equal(w.hints, [], 'expired while n3 is still Dead')
  assert.equal(w.brought, [])
  assert.is(state.counters.expired, 2)
  await hintQueue.stop?.(state, w.ctx)
})

test('the store is told which replicas are away past the TTL, and when they are back', async () => {
  const w = world('0.01')
  const ttlMs = 36_000
  const state = await hintQueue.init(w.ctx)
  await step(w, ttlMs - LOOK_MS)
  assert.equal(w.closed, [], 'n3 is away, not yet for the TTL')
  await step(w, 2 * LOOK_MS)
  assert.equal(w.closed.at(-1), ['n3'])
  // Told at every look while it is away (a restarted store forgets), and once more when back.
  const told = w.closed.length
  await step(w, 3 * LOOK_MS)
  assert.ok(w.closed.length >= told + 2, `${w.closed.length} lists told`)
  w.status.set('n3', 'Alive')
  await step(w, LOOK_MS)
  assert.equal(w.closed.at(-1), [])
  const afterBack = w.closed.length
  await step(w, 3 * LOOK_MS)
  assert.is(w.closed.length, afterBack, 'nothing more to tell')
  await hintQueue.stop?.(state, w.ctx)
})

test.run()
