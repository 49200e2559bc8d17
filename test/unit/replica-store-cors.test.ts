/** @module Unit tests of the store's bucket CORS requests as the bucket setting `cors`
 * (actors/replica-store/engine/bucket-settings.ts).
 * Goal: a bucket's rules are stored durably, read back exactly, deleted on request (idempotently)
 * and with their bucket, refused for a bucket that does not exist, reach the store unchanged
 * through the coordinator, and a damaged record reads as `corrupt` rather than crashing the store.
 * Method: the replica-store actor on test/support/fake-context.ts, a restart on the durable image
 * of its kv. */
import { handle } from '../../protocol/actor.js'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { coordinator } from '../../actors/coordinator/coordinator.js'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import type { CorsConfiguration } from '../../protocol/cors.js'
import type { Result } from '../../protocol/errors.js'
import type { CoordinatorMsg, StoreMsg } from '../../protocol/messages.js'
import {
  code,
  startStore,
  value,
  type StoreBody as Body,
  type TestStore as Store,
} from '../support/store-harness.js'
import { fakeContext, type FakeContext } from '../support/fake-context.js'

const CORS: CorsConfiguration = {
  rules: [
    {
      id: 'browser uploads',
      allowedOrigins: ['http://*.example.com'],
      allowedMethods: ['PUT', 'GET'],
      allowedHeaders: ['*'],
      exposeHeaders: ['ETag', 'x-amz-version-id'],
      maxAgeSeconds: 3000,
    },
    { allowedOrigins: ['*'], allowedMethods: ['HEAD'], allowedHeaders: [], exposeHeaders: [] },
  ],
}

test('put, get (exactly), replace and delete a bucket configuration, durably', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  assert.is(
    code(await store.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
    'no_such_cors_configuration',
  )
  value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', name: 'cors', value: CORS }))
  assert.equal(
    value(await store.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
    CORS,
  )
  const restarted = await startStore(fakeContext({ kv: store.ctx.kv.durableCopy() }))
  assert.equal(
    value(await restarted.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
    CORS,
  )
  const replaced: CorsConfiguration = { rules: CORS.rules.slice(1) }
  value(
    await restarted.send({
      kind: 'bucket.setting.put',
      bucket: 'b',
      name: 'cors',
      value: replaced,
    }),
  )
  assert.equal(
    value(await restarted.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
    replaced,
  )
  value(await restarted.send({ kind: 'bucket.setting.delete', bucket: 'b', name: 'cors' }))
  assert.is(
    code(await restarted.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
    'no_such_cors_configuration',
  )
  // Deleting what is not there succeeds, as S3 answers 204 either way.
  value(await restarted.send({ kind: 'bucket.setting.delete', bucket: 'b', name: 'cors' }))
  assert.is(restarted.ctx.kv.durableCopy().get('R\0b'), undefined)
})

test('a bucket that does not exist answers no_such_bucket to every CORS request', async () => {
  const store = await startStore()
  assert.is(
    code(await store.send({ kind: 'bucket.setting.get', bucket: 'nope', name: 'cors' })),
    'no_such_bucket',
  )
  assert.is(
    code(
      await store.send({ kind: 'bucket.setting.put', bucket: 'nope', name: 'cors', value: CORS }),
    ),
    'no_such_bucket',
  )
  assert.is(
    code(await store.send({ kind: 'bucket.setting.delete', bucket: 'nope', name: 'cors' })),
    'no_such_bucket',
  )
  assert.is(store.ctx.kv.get('R\0nope'), undefined)
})

test('deleting a bucket deletes its rules: a new bucket of that name has none', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', name: 'cors', value: CORS }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'b' }))
  assert.is(store.ctx.kv.durableCopy().get('R\0b'), undefined)
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  assert.is(
    code(await store.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
    'no_such_cors_configuration',
  )
  value(await store.send({ kind: 'bucket.setting.put', bucket: 'b', name: 'cors', value: CORS }))
  value(await store.send({ kind: 'bucket.delete', bucket: 'b', force: true }))
  assert.is(store.ctx.kv.get('R\0b'), undefined)
})

test('an invalid configuration is our bug: the store asserts', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const empty: CorsConfiguration = { rules: [] }
  try {
    await store.send({ kind: 'bucket.setting.put', bucket: 'b', name: 'cors', value: empty })
    assert.unreachable('an empty configuration was stored')
  } catch (error) {
    assert.match(String(error), /invalid cors/)
  }
})

test('a damaged record reads as corrupt', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const damaged = ['not json', '{"rules":5}', '{"rules":[]}', '{"rules":[{"allowedOrigins":[]}]}']
  for (const text of damaged) {
    await store.ctx.kv.commit([{ type: 'put', key: 'R\0b', value: new TextEncoder().encode(text) }])
    assert.is(
      code(await store.send({ kind: 'bucket.setting.get', bucket: 'b', name: 'cors' })),
      'corrupt',
      text,
    )
  }
})

test('coordinator: CORS requests reach the store unchanged', async () => {
  const store = await startStore()
  value(await store.send({ kind: 'bucket.create', bucket: 'b' }))
  const ctx = fakeContext({ self: 'coordinator' })
  const forwarded: unknown[] = []
  ctx.onCall((to, msg) => {
    assert.is(to, 'replica-store')
    forwarded.push(structuredClone(msg))
    return handle(replicaStore, store.state, msg as StoreMsg, store.ctx)
  })
  const state = await coordinator.init(ctx)
  const deadlineMs = store.ctx.now() + 5_000
  const put: CoordinatorMsg = {
    kind: 'bucket.setting.put',
    bucket: 'b',
    name: 'cors',
    value: CORS,
    requestId: 'p',
    deadlineMs,
  }
  const get: CoordinatorMsg = {
    kind: 'bucket.setting.get',
    bucket: 'b',
    name: 'cors',
    requestId: 'g',
    deadlineMs,
  }
  value(await handle(coordinator, state, put, ctx))
  assert.equal(value(await handle(coordinator, state, get, ctx)), CORS)
  assert.equal(forwarded, [put, get])
})

test.run()
