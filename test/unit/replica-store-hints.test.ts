/** Goal: a cluster-mode replica-store's count of its hints (`hint.count`, `hint.nodes`: what
 * health, repair-status and svc_cluster_hints_pending show) is the number of its hint records
 * whatever happens to a batch, and it records no hint for a replica the hint queue says is away
 * past the TTL (`hint.closed`) until the queue says it is back.
 * Method: the real replica-store on a fake context (test/support/store-harness.ts) over an
 * in-memory kv that can be told to refuse its next commit for want of room (the database goes on
 * after it, as RocksDB does); the records are read from the kv's hint range. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { HINT_END, HINT_PREFIX } from '../../actors/replica-store/keys.js'
import type { KvOp } from '../../protocol/actor.js'
import { ServiceError } from '../../protocol/errors.js'
import { hlcString } from '../../protocol/hlc.js'
import type { Hint } from '../../protocol/messages.js'
import { MemoryKv } from '../support/fake-context.js'
import { clusterStore, code, value, type TestStore } from '../support/store-harness.js'

/** A kv whose next commit fails as a full volume's does: nothing of it lands. */
class FullOnceKv extends MemoryKv {
  full = false

  override commit(ops: readonly KvOp[]): Promise<void> {
    if (!this.full) return super.commit(ops)
    this.full = false
    return Promise.reject(new ServiceError('insufficient_storage', 'no room for the batch'))
  }
}

function hint(node: string, key: string, wallMs: number): Hint {
  return { node, bucket: 'bkt', key, stamp: hlcString({ wallMs, logical: 0, node: 1 }) }
}

function records(store: TestStore): string[] {
  return store.ctx.kv
    .scan({ gte: HINT_PREFIX, lt: HINT_END, limit: 100 })
    .map(([key]) => key.slice(HINT_PREFIX.length).replaceAll('\0', '/'))
}

async function counts(store: TestStore): Promise<{ all: number; nodes: object }> {
  return {
    all: value(await store.send<number>({ kind: 'hint.count' })),
    nodes: value(await store.send<object>({ kind: 'hint.nodes' })),
  }
}

test('a batch of hints the volume has no room for is not counted', async () => {
  const kv = new FullOnceKv()
  const store = await clusterStore({ kv })
  const now = store.ctx.now()
  value(await store.send({ kind: 'hint.put', hints: [hint('n2', 'a', now)] }))
  kv.full = true
  const refused = await store.send({ kind: 'hint.put', hints: [hint('n2', 'b', now)] })
  assert.is(code(refused), 'insufficient_storage')
  assert.equal(records(store), ['n2/bkt/a'])
  assert.equal(await counts(store), { all: 1, nodes: { n2: 1 } })
  // Delivered: the count goes with the record, to nothing left.
  value(await store.send({ kind: 'hint.done', hints: [hint('n2', 'a', now)] }))
  assert.equal(records(store), [])
  assert.equal(await counts(store), { all: 0, nodes: {} })
})

test('no hint is recorded for a replica away past the TTL, until it is back', async () => {
  const store = await clusterStore()
  const now = store.ctx.now()
  value(await store.send({ kind: 'hint.closed', nodes: ['n3'] }))
  const missed = [hint('n2', 'a', now), hint('n3', 'a', now)]
  value(await store.send({ kind: 'hint.put', hints: missed }))
  assert.equal(records(store), ['n2/bkt/a'])
  assert.equal(await counts(store), { all: 1, nodes: { n2: 1 } })
  // Back (the queue's list no longer names it): its misses are hinted again.
  value(await store.send({ kind: 'hint.closed', nodes: [] }))
  value(await store.send({ kind: 'hint.put', hints: [hint('n3', 'b', now)] }))
  assert.equal(records(store), ['n2/bkt/a', 'n3/bkt/b'])
  assert.equal(await counts(store), { all: 2, nodes: { n2: 1, n3: 1 } })
})

test.run()
