// Goal: the KvStore contract holds for the RocksDB adapter and for the fake the actor tests use.
// Method: the same cases (support/kv-store.case.ts) against openRocksKv in a temp dir and against
// MemoryKv; then adapter-specific checks: group commit writes many commits as few batches, and a
// closed store refuses reads.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { openRocksKv, type RocksKv } from '../../runtime/rocks-kv.js'
import { MemoryKv } from '../support/fake-context.js'
import { kvStoreCases, type KvHarness } from '../support/kv-store.case.js'

async function rocksHarness(): Promise<KvHarness> {
  const dir = await mkdtemp(join(tmpdir(), 'kv-store-test-'))
  let kv: RocksKv = await openRocksKv(dir)
  return {
    get kv() {
      return kv
    },
    async reopen() {
      await kv.close()
      kv = await openRocksKv(dir)
      return kv
    },
    async close() {
      await kv.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

function memoryHarness(): Promise<KvHarness> {
  let kv = new MemoryKv()
  return Promise.resolve({
    get kv() {
      return kv
    },
    async reopen() {
      // Let every queued commit land, then keep only what is durable, as a restart would.
      while (kv.pendingCommits > 0) await new Promise((resolve) => setImmediate(resolve))
      kv = kv.durableCopy()
      return kv
    },
    close: () => Promise.resolve(),
  })
}

kvStoreCases('rocksdb', rocksHarness).run()
kvStoreCases('memory', memoryHarness).run()

test('rocks-kv groups commits made while a write is in flight', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kv-store-test-'))
  const kv = await openRocksKv(dir)
  const commits: Promise<void>[] = []
  for (let index = 0; index < 500; index++) {
    commits.push(kv.commit([{ type: 'put', key: `g${index}`, value: new Uint8Array(8) }]))
  }
  await Promise.all(commits)
  // The first commit goes out alone; the other 499 queue behind it and share one synced write.
  assert.equal(kv.counts, { commits: 500, batches: 2 })
  assert.is(kv.scan({ gte: 'g', lt: 'h', limit: 1000 }).length, 500)
  await kv.close()
  await rm(dir, { recursive: true, force: true })
})

test('rocks-kv refuses use after close, and close waits for commits in flight', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kv-store-test-'))
  const kv = await openRocksKv(dir)
  const pending = kv.commit([{ type: 'put', key: 'late', value: new Uint8Array([7]) }])
  await kv.close()
  await pending
  assert.throws(() => kv.get('late'))
  const reopened = await openRocksKv(dir)
  assert.equal([...(reopened.get('late') ?? [])], [7])
  await reopened.close()
  await rm(dir, { recursive: true, force: true })
})

test.run()
