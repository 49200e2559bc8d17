/** Goal: the actor table's links are checked when the runtime loads it, not at a first message:
 * every mode's own table holds, and a link to an actor outside the table, to an actor that takes
 * no request (grpc-ingress), from an actor to itself, or listed twice is refused; an actor's
 * handler table answers each kind of its protocol, and a kind it lacks fails `invalid_request`
 * rather than reaching another handler.
 * Method: the pure checks and the real actor tables, no threads. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { handle } from '../../protocol/actor.js'
import { actorTable, checkLinks, SINGLE_NODE_ACTORS } from '../../runtime/actor-table.js'
import { SINGLE_NODE_LINKS } from '../../runtime/actor-table.js'
import { hintQueue } from '../../actors/hint-queue/hint-queue.js'
import { fakeContext } from '../support/fake-context.js'

test('each mode loads a table whose links hold', () => {
  for (const mode of ['single', 'cluster', 'gateway'] as const) {
    const table = actorTable(mode)
    assert.ok(table.links.length > 0, mode)
  }
})

test('a link to an actor outside the table is refused at load', () => {
  const links = [...SINGLE_NODE_LINKS, ['http-ingress', 'gossiper'] as const]
  assert.throws(
    () => checkLinks({ actors: SINGLE_NODE_ACTORS, links }),
    /http-ingress -> gossiper: gossiper is not in the table/,
  )
})

test('a link to an actor whose protocol takes no request is refused at load', () => {
  const actors = [...SINGLE_NODE_ACTORS, 'grpc-ingress' as const]
  const links = [...SINGLE_NODE_LINKS, ['iam', 'grpc-ingress'] as const]
  assert.throws(() => checkLinks({ actors, links }), /grpc-ingress takes no request/)
})

test('a self link and a link listed twice are refused at load', () => {
  const self = [...SINGLE_NODE_LINKS, ['iam', 'iam'] as const]
  assert.throws(() => checkLinks({ actors: SINGLE_NODE_ACTORS, links: self }), /itself/)
  const twice = [...SINGLE_NODE_LINKS, ['iam', 'replica-store'] as const]
  assert.throws(() => checkLinks({ actors: SINGLE_NODE_ACTORS, links: twice }), /listed twice/)
})

test('a request goes to the handler of its kind; a kind without one is refused', async () => {
  const ctx = fakeContext({ config: { SVC_NODE_ID: 'n1' } })
  const state = await hintQueue.init(ctx)
  const msg = { requestId: 'r', deadlineMs: ctx.now() + 1_000 }
  const counted = await handle(hintQueue, state, { ...msg, kind: 'hint-queue.counters' }, ctx)
  assert.equal(counted, { ok: true, value: { delivered: 0, expired: 0 } })
  // A message from another thread is not checked by the compiler: its kind is, by the table.
  const stray = { kind: 'hint.count', requestId: 'r', deadlineMs: ctx.now() + 1_000 }
  const refused = await handle(hintQueue, state, stray as never, ctx)
  assert.equal(refused.ok, false)
  if (!refused.ok) assert.equal(refused.code, 'invalid_request')
  await hintQueue.stop?.(state, ctx)
})

test.run()
