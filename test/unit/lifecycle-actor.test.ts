/** Goal: the lifecycle actor expires what its rules say, bucket after bucket, each action once; and
 * one that dies mid-pass (its state lost, nothing saved at a stop) goes on, in a new actor, from
 * the place its record holds: the buckets it finished are not read again, and its progress does not
 * go back. Method: the real actor on a fake context (test/support/fake-context.ts) whose calls a
 * small in-memory object actor answers, on a clock that moves only when the test moves it. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { Request } from '../../protocol/actor.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type { LifecycleStatus } from '../../protocol/lifecycle.js'
import type { LifecycleConfiguration } from '../../protocol/s3-rules/lifecycle.js'
import { lifecycle } from '../../actors/lifecycle/lifecycle.js'
import type { LifecycleState } from '../../actors/lifecycle/lifecycle-state.js'
import { fakeContext, ManualClock, type FakeContext } from '../support/fake-context.js'

const DAY_MS = 86_400_000
const BUCKETS = ['b0', 'b1', 'b2', 'b3', 'b4']
const KEYS = ['tmp/0', 'tmp/1', 'tmp/2']

const RULES: LifecycleConfiguration = {
  rules: [
    {
      id: 'tmp',
      enabled: true,
      filter: { prefix: 'tmp/', tags: [], sizeGreaterThan: null, sizeLessThan: null },
      expiration: { days: 1, dateMs: null },
      expiredObjectDeleteMarker: false,
      noncurrentExpiration: null,
      abortUploadsAfterDays: null,
    },
  ],
}

/** The buckets' objects, the local records, and what was asked: an object actor in memory. */
class World {
  readonly objects = new Map<string, Set<string>>()
  readonly records = new Map<string, Uint8Array>()
  readonly deleted: string[] = []
  readonly listed: string[] = []
  live = true

  constructor(readonly createdMs: number) {
    for (const bucket of BUCKETS) this.objects.set(bucket, new Set(KEYS))
  }

  answer(msg: { kind: string } & Request & Record<string, unknown>): Result<unknown> {
    if (!this.live) return fail('unavailable', 'this actor was killed')
    const bucket = msg['bucket'] as string
    switch (msg.kind) {
      case 'system.local-get':
        return ok(this.records.get(msg['name'] as string) ?? null)
      case 'system.local-put':
        this.records.set(msg['name'] as string, msg['value'] as Uint8Array)
        return ok(null)
      case 'bucket.list': {
        const after = msg['after'] as string
        const limit = msg['limit'] as number
        const names = BUCKETS.filter((name) => name > after)
        const page = names.slice(0, limit).map((name) => ({ name, createdMs: this.createdMs }))
        return ok({ buckets: page, truncated: names.length > limit })
      }
      case 'bucket.setting.get':
        return ok(RULES)
      case 'object.list-versions': {
        this.listed.push(bucket)
        const versions = [...(this.objects.get(bucket) ?? [])].sort().map((key) => ({
          key,
          versionId: 'null',
          isLatest: true,
          deleteMarker: false,
          size: 1,
          etag: '"e"',
          lastModifiedMs: this.createdMs,
        }))
        return ok({
          versions,
          commonPrefixes: [],
          truncated: false,
          nextKeyMarker: null,
          nextVersionIdMarker: null,
        })
      }
      case 'object.delete': {
        const key = msg['key'] as string
        if (this.objects.get(bucket)?.delete(key) === true) this.deleted.push(`${bucket}/${key}`)
        return ok({ deleteMarker: false })
      }
      case 'upload.list':
        return ok({
          uploads: [],
          commonPrefixes: [],
          truncated: false,
          nextKeyMarker: null,
          nextUploadIdMarker: null,
        })
      default:
        return fail('invalid_request', `not in this test: ${msg.kind}`)
    }
  }
}

function startActor(clock: ManualClock, world: World): { ctx: FakeContext; state: LifecycleState } {
  const ctx = fakeContext({
    self: 'lifecycle',
    clock,
    config: { SVC_MODE: 'single', SVC_LIFECYCLE_INTERVAL_SECS: '3600' },
  })
  ctx.onCall((_to, msg) =>
    world.answer(msg as { kind: string } & Request & Record<string, unknown>),
  )
  const state = lifecycle.init(ctx) as LifecycleState
  return { ctx, state }
}

/** Moves the clock in small steps, letting the actor's promises run between them. */
async function run(clock: ManualClock, until: () => boolean, stepsMax = 5_000): Promise<void> {
  for (let step = 0; step < stepsMax && !until(); step++) {
    clock.advance(5)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

async function statusOf(state: LifecycleState, ctx: FakeContext): Promise<LifecycleStatus> {
  const handler = lifecycle.handlers['lifecycle.status']
  const answer = await handler(
    state,
    { kind: 'lifecycle.status', requestId: 't', deadlineMs: 0 },
    ctx,
  )
  assert.ok(answer.ok)
  return answer.value as LifecycleStatus
}

test('a pass expires every object its rules name, once each', async () => {
  const clock = new ManualClock()
  const world = new World(clock.nowMs - 10 * DAY_MS)
  const { ctx, state } = startActor(clock, world)
  await run(clock, () => world.deleted.length === BUCKETS.length * KEYS.length)
  assert.is(world.deleted.length, BUCKETS.length * KEYS.length)
  assert.is(new Set(world.deleted).size, world.deleted.length)
  await run(clock, () => state.passDone)
  const status = await statusOf(state, ctx)
  assert.is(status.objects_expired, 15)
  assert.is(status.passes_completed, 1)
  state.stopping = true
  state.wake?.()
})

test('an actor killed mid-pass: a new one goes on from its record, not the start', async () => {
  const clock = new ManualClock()
  const world = new World(clock.nowMs - 10 * DAY_MS)
  const first = startActor(clock, world)
  // Two buckets and a bit done, then the thread dies: no stop, no save but the last step's.
  await run(clock, () => world.deleted.length >= 2 * KEYS.length + 1)
  const before = await statusOf(first.state, first.ctx)
  world.live = false
  first.state.stopping = true
  await run(clock, () => false, 20)
  world.live = true
  const listedBefore = world.listed.length
  const second = startActor(clock, world)
  await run(clock, () => second.state.loaded)
  const resumed = await statusOf(second.state, second.ctx)
  assert.ok(
    resumed.pass_progress >= before.pass_progress,
    `progress ${before.pass_progress} before, ${resumed.pass_progress} after`,
  )
  await run(clock, () => world.deleted.length === BUCKETS.length * KEYS.length)
  assert.is(world.deleted.length, 15, 'every object expired')
  assert.is(new Set(world.deleted).size, 15, 'no object expired twice')
  const listedAfter = world.listed.slice(listedBefore)
  assert.not.ok(listedAfter.includes('b0'), `b0 read again: ${listedAfter.join(' ')}`)
  assert.not.ok(listedAfter.includes('b1'), `b1 read again: ${listedAfter.join(' ')}`)
  second.state.stopping = true
  second.state.wake?.()
})

test.run()
