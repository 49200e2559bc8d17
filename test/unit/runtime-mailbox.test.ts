/** Goal: an actor's mailbox is bounded and honest: past its depth a request is answered `busy` at
 * once, an expired request never runs, thrown errors map to Results, an assertion crashes. Method:
 * a Mailbox with depth 2 around handlers the test resolves by hand. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { AssertionError } from 'node:assert'
import { ok, ServiceError, type Result } from '../../protocol/errors.js'
import { ActorMetrics } from '../../runtime/actor-metrics.js'
import { Mailbox, type Handler } from '../../runtime/mailbox.js'

function mailbox(handler: Handler, crashes: AssertionError[] = []): Mailbox {
  return new Mailbox(
    {
      actor: 'test',
      depthMax: 2,
      now: () => 1_000,
      metrics: new ActorMetrics('test'),
      onCrash: (error) => crashes.push(error),
      onFailure: () => undefined,
    },
    handler,
  )
}

test('a full mailbox answers busy at once and admits again when a request finishes', async () => {
  const releases: (() => void)[] = []
  const box = mailbox(
    () => new Promise<Result<unknown>>((resolve) => releases.push(() => resolve(ok('done')))),
  )
  const first = box.deliver({ kind: 'k', deadlineMs: 2_000 })
  const second = box.deliver({ kind: 'k', deadlineMs: 2_000 })
  assert.is(box.depth, 2)
  const third = await box.deliver({ kind: 'k', deadlineMs: 2_000 })
  assert.equal(third.ok ? 'ok' : third.code, 'busy')
  releases[0]!()
  assert.equal(await first, ok('done'))
  const fourth = box.deliver({ kind: 'k', deadlineMs: 2_000 })
  assert.is(box.depth, 2)
  releases[1]!()
  releases[2]!()
  assert.equal(await second, ok('done'))
  assert.equal(await fourth, ok('done'))
  assert.is(box.depth, 0)
})

test('a request past its deadline is dropped without running', async () => {
  let ran = false
  const box = mailbox(() => {
    ran = true
    return ok(null)
  })
  const result = await box.deliver({ kind: 'k', deadlineMs: 999 })
  assert.equal(result.ok ? 'ok' : result.code, 'timeout')
  assert.is(ran, false)
})

test('a ServiceError becomes its code; an assertion crashes; others are internal', async () => {
  const crashes: AssertionError[] = []
  const box = mailbox((msg) => {
    if (msg.kind === 'service') throw new ServiceError('no_such_key', 'gone')
    if (msg.kind === 'assert') throw new AssertionError({ message: 'broken invariant' })
    throw new Error('disk on fire')
  }, crashes)
  const service = await box.deliver({ kind: 'service', deadlineMs: 2_000 })
  assert.equal(service.ok ? 'ok' : service.code, 'no_such_key')
  const asserted = await box.deliver({ kind: 'assert', deadlineMs: 2_000 })
  assert.equal(asserted.ok ? 'ok' : asserted.code, 'internal')
  assert.is(crashes.length, 1)
  const other = await box.deliver({ kind: 'other', deadlineMs: 2_000 })
  assert.equal(other.ok ? 'ok' : other.code, 'internal')
  assert.is(crashes.length, 1)
})

test.run()
