/** Goal: the bench's node ceiling counts only the threads that stay one per node as cores are
 * added, and its figures are the ones the issue defines (1e6 / the busiest shared thread's CPU per
 * request, ratios to the floor's CPU per request of the same phase). Method: thread names as
 * /proc shows them on a running node, and load results built by hand. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { busiestShared, CEILING_GOALS, ceilingOf, requestsPerSecond } from '../../bench/ceiling.js'
import { withinGoal } from '../../bench/ceiling.js'
import { threadKind } from '../../bench/thread-kinds.js'
import type { LoadResult } from '../../bench/wrk.js'

test('ingress threads, pools and store shards that grow with cores, the rest told apart', () => {
  for (const name of ['http-ingress', 'http-ingress-1', 'http-ingress-2', 'http-ingress-12']) {
    assert.is(threadKind(name), 'ingress', name)
  }
  for (const name of [
    'V8Worker',
    'libuv-worker',
    'rocksdb:low',
    'rocksdb:high',
    'rocksdb:bottom',
  ]) {
    assert.is(threadKind(name), 'pool', name)
  }
  for (const name of ['replica-store-1', 'replica-store-16', 'kv-writer-2']) {
    assert.is(threadKind(name), 'shard', name)
  }
  const shared = ['MainThread', 'replica-store', 'kv-writer', 'iam', 'scrubber', 'coordinator']
  for (const name of [...shared, 'DelayedTaskSche', 'WorkerThread', 'http-ingress-x']) {
    assert.is(threadKind(name), 'shared', name)
  }
})

test('the busiest shared thread ignores busier ingress and pool threads', () => {
  const byThread = new Map([
    ['http-ingress', 900_000],
    ['V8Worker', 700_000],
    ['rocksdb:low', 650_000],
    ['replica-store', 400_000],
    ['kv-writer', 500_000],
    ['MainThread', 10_000],
  ])
  assert.equal(busiestShared(byThread, 10_000), { name: 'kv-writer', usPerRequest: 50 })
  assert.is(busiestShared(byThread, 0), null, 'nothing answered')
  assert.is(busiestShared(new Map([['V8Worker', 5]]), 10), null, 'no shared thread ran')
})

test('the ceiling is 1e6 over the busiest shared CPU per request; ratios are to the floor', () => {
  assert.is(requestsPerSecond(50), 20_000)
  assert.is(requestsPerSecond(null), null)
  assert.is(requestsPerSecond(0), null)
  const service = [
    run({ answers: 1000, us: 200_000, byThread: { 'replica-store': 40_000, iam: 10_000 } }),
    run({ answers: 1000, us: 300_000, byThread: { 'replica-store': 60_000, iam: 70_000 } }),
    run({ answers: 1000, us: 250_000, byThread: { 'replica-store': 50_000, iam: 5_000 } }),
  ]
  const floor = [run({ answers: 2000, us: 200_000, byThread: { MainThread: 200_000 } })]
  const ceiling = ceilingOf(service, floor)
  // Per run the busiest shared thread takes 40, 70 and 50 us: the median is 50.
  assert.is(ceiling.busiestSharedUs, 50)
  assert.is(ceiling.requestsPerSecond, 20_000)
  assert.is(ceiling.thread, 'iam', 'the name of the run where it took the most')
  assert.is(ceiling.nodeUs, 250)
  assert.is(ceiling.floorUs, 100)
  assert.is(ceiling.busiestSharedToFloor, 0.5)
  assert.is(ceiling.nodeToFloor, 2.5)
  const goal = CEILING_GOALS['GET 4 KiB c16']
  assert.ok(goal !== undefined)
  assert.is(withinGoal(ceiling.busiestSharedToFloor, goal.busiestShared), true, 'at the bound')
  assert.is(withinGoal(ceiling.nodeToFloor, goal.node), true, 'at the bound')
  assert.is(withinGoal(2.6, goal.node), false)
})

test('without the floor or without answers the figures are not measured', () => {
  const service = [run({ answers: 1000, us: 100_000, byThread: { 'replica-store': 10_000 } })]
  const noFloor = ceilingOf(service, undefined)
  assert.is(noFloor.busiestSharedUs, 10)
  assert.is(noFloor.busiestSharedToFloor, null)
  assert.is(noFloor.nodeToFloor, null)
  assert.is(withinGoal(noFloor.nodeToFloor, 1), null)
  const silent = ceilingOf([run({ answers: 0, us: 0, byThread: {} })], undefined)
  assert.equal(silent, {
    thread: null,
    busiestSharedUs: null,
    requestsPerSecond: null,
    nodeUs: null,
    floorUs: null,
    busiestSharedToFloor: null,
    nodeToFloor: null,
  })
})

test('the goals are the issue targets at 16 connections, PUTs of new keys', () => {
  assert.equal(CEILING_GOALS, {
    'GET 4 KiB c16': { busiestShared: 0.5, node: 2.5 },
    'PUT 4 KiB c16': { busiestShared: 1.0, node: 4 },
    'GET 1 MiB c16': { busiestShared: 0.15, node: 1.6 },
    'PUT 1 MiB c16': { busiestShared: 0.1, node: 1.3 },
  })
})

/** A run that answered `answers` requests, all 2xx, with this CPU (us) in all and by thread. */
function run(spent: { answers: number; us: number; byThread: Record<string, number> }): LoadResult {
  return {
    ops: spent.answers,
    answers: spent.answers,
    failed: 0,
    bytes: 0,
    seconds: 1,
    p50Ms: 1,
    p99Ms: 1,
    firstError: null,
    cpu: { us: spent.us, byNode: [spent.us], byThread: new Map(Object.entries(spent.byThread)) },
    clientCpuUs: 0,
    written: [],
  }
}

test.run()
