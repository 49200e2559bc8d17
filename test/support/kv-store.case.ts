/** @module Contract cases of KvStore (protocol/actor.ts), run against the real RocksDB adapter and
 * against the fake's MemoryKv, so the fake the actor tests rely on behaves like production:
 * UTF-8 byte order, scan bounds and limits, reads that see commits still in flight, group commit
 * resolving every commit, last commit wins, and durability across a reopen. */
import { suite } from 'uvu'
import * as assert from 'uvu/assert'
import type { KvOp, KvStore } from '../../protocol/actor.js'

export interface KvHarness {
  kv: KvStore
  /** Closes (after every commit landed) and opens the same store again. */
  reopen(): Promise<KvStore>
  close(): Promise<void>
}

const text = new TextEncoder()
const bytes = (value: string): Uint8Array => text.encode(value)
const str = (value: Uint8Array | undefined): string | undefined =>
  value === undefined ? undefined : Buffer.from(value).toString('utf8')
const put = (key: string, value: string): KvOp => ({ type: 'put', key, value: bytes(value) })
const del = (key: string): KvOp => ({ type: 'del', key })
const keysOf = (rows: [string, unknown][]): string[] => rows.map(([key]) => key)

type Case = [title: string, run: (harness: KvHarness) => Promise<void>]

const CASES: Case[] = [
  [
    'put, get, getMany and delete',
    async (harness) => {
      const { kv } = harness
      await kv.commit([put('a', '1'), put('b', '2')])
      assert.is(str(kv.get('a')), '1')
      assert.is(kv.get('missing'), undefined)
      assert.equal(kv.getMany(['b', 'missing', 'a']).map(str), ['2', undefined, '1'])
      await kv.commit([del('a'), put('b', '3')])
      assert.is(kv.get('a'), undefined)
      assert.is(str(kv.get('b')), '3')
    },
  ],
  [
    'scan orders keys as UTF-8 bytes, not UTF-16 units',
    async (harness) => {
      const { kv } = harness
      // UTF-16 puts U+1F600 (a surrogate pair, 0xD83D...) before U+FFFF; UTF-8 puts it after.
      const keys = ['k\u{1F600}', 'k\uffff', 'k', 'k\0', 'k/', 'kA', 'k\u00e9', 'j', 'l']
      await kv.commit(keys.map((key) => put(key, key)))
      const rows = kv.scan({ gte: 'k', lt: 'l', limit: 100 })
      assert.equal(keysOf(rows), ['k', 'k\0', 'k/', 'kA', 'k\u00e9', 'k\uffff', 'k\u{1F600}'])
      assert.equal(
        rows.map(([, value]) => str(value)),
        keysOf(rows),
      )
    },
  ],
  [
    'scan bounds: gte, gt, lt and limit',
    async (harness) => {
      const { kv } = harness
      await kv.commit(['a', 'b', 'c', 'd', 'e'].map((key) => put(key, key)))
      assert.equal(keysOf(kv.scan({ gte: 'b', lt: 'd', limit: 10 })), ['b', 'c'])
      assert.equal(keysOf(kv.scan({ gt: 'b', lt: 'e', limit: 10 })), ['c', 'd'])
      assert.equal(keysOf(kv.scan({ gte: 'a', lt: 'z', limit: 2 })), ['a', 'b'])
      assert.equal(keysOf(kv.scan({ lt: 'c', limit: 10 })), ['a', 'b'])
      assert.equal(keysOf(kv.scan({ gt: 'bb', lt: 'z', limit: 1 })), ['c'])
      assert.equal(kv.scan({ gte: 'a', lt: 'z', limit: 0 }), [])
      assert.equal(kv.scan({ gte: 'x', lt: 'z', limit: 5 }), [])
    },
  ],
  [
    'reads see a commit before it is durable',
    async (harness) => {
      const { kv } = harness
      await kv.commit([put('a', 'old'), put('b', 'gone'), put('c', 'kept')])
      const pending = kv.commit([put('a', 'new'), del('b'), put('ab', 'added')])
      assert.is(str(kv.get('a')), 'new')
      assert.is(kv.get('b'), undefined)
      assert.equal(kv.getMany(['ab', 'b']).map(str), ['added', undefined])
      const rows = kv.scan({ gte: 'a', lt: 'z', limit: 10 })
      assert.equal(keysOf(rows), ['a', 'ab', 'c'])
      assert.equal(
        rows.map(([, value]) => str(value)),
        ['new', 'added', 'kept'],
      )
      // The limit counts merged entries: the pending delete of b must not cost a slot.
      assert.equal(keysOf(kv.scan({ gt: 'a', lt: 'z', limit: 2 })), ['ab', 'c'])
      await pending
      assert.equal(keysOf(kv.scan({ gte: 'a', lt: 'z', limit: 10 })), ['a', 'ab', 'c'])
    },
  ],
  [
    'scanText: the rows of scan, values as UTF-8 text, pending commits merged in',
    async (harness) => {
      const { kv } = harness
      const keys = ['k\u{1F600}', 'k\uffff', 'k', 'kA', 'k\u00e9', 'j', 'l']
      await kv.commit(keys.map((key) => put(key, `{"key":"${key}"}`)))
      const stored = kv.scan({ gt: 'k', lt: 'l', limit: 4 })
      assert.equal(
        kv.scanText({ gt: 'k', lt: 'l', limit: 4 }),
        stored.map(([key, value]) => [key, str(value)]),
      )
      assert.equal(keysOf(stored), ['kA', 'k\u00e9', 'k\uffff', 'k\u{1F600}'])
      const pending = kv.commit([put('kA', 'new \u00e9'), del('k\u00e9'), put('kB', 'added')])
      assert.equal(kv.scanText({ gte: 'k', lt: 'l', limit: 4 }), [
        ['k', '{"key":"k"}'],
        ['kA', 'new \u00e9'],
        ['kB', 'added'],
        ['k\uffff', '{"key":"k\uffff"}'],
      ])
      await pending
      assert.equal(keysOf(kv.scan({ gte: 'k', lt: 'l', limit: 10 })), [
        'k',
        'kA',
        'kB',
        'k\uffff',
        'k\u{1F600}',
      ])
      assert.equal(kv.scanText({ gte: 'x', lt: 'z', limit: 5 }), [])
      assert.equal(kv.scanText({ gte: 'a', lt: 'z', limit: 0 }), [])
    },
  ],
  [
    'concurrent commits all land; the later commit of a key wins',
    async (harness) => {
      const { kv } = harness
      const commits: Promise<void>[] = []
      for (let index = 0; index < 200; index++) {
        commits.push(
          kv.commit([
            put(`n${String(index).padStart(3, '0')}`, `${index}`),
            put('last', `${index}`),
          ]),
        )
      }
      await Promise.all(commits)
      assert.is(str(kv.get('last')), '199')
      assert.is(kv.scan({ gte: 'n', lt: 'o', limit: 1000 }).length, 200)
      const reopened = await harness.reopen()
      assert.is(str(reopened.get('last')), '199')
      assert.is(reopened.scan({ gte: 'n', lt: 'o', limit: 1000 }).length, 200)
    },
  ],
  [
    'a landed commit survives a reopen; a delete stays deleted',
    async (harness) => {
      await harness.kv.commit([put('keep', 'yes'), put('drop', 'x'), put('bytes', '\u0000\u00ff')])
      await harness.kv.commit([del('drop')])
      const kv = await harness.reopen()
      assert.is(str(kv.get('keep')), 'yes')
      assert.is(kv.get('drop'), undefined)
      assert.is(str(kv.get('bytes')), '\u0000\u00ff')
    },
  ],
  [
    'a large commit and a large scan',
    async (harness) => {
      const { kv } = harness
      const ops: KvOp[] = []
      for (let index = 0; index < 6000; index++)
        ops.push(put(`big${String(index).padStart(5, '0')}`, 'v'))
      await kv.commit(ops)
      const rows = kv.scan({ gte: 'big', lt: 'bih', limit: 10_000 })
      assert.is(rows.length, 6000)
      assert.is(rows[5999]?.[0], 'big05999')
    },
  ],
]

/** Registers every case in a uvu suite; each case gets a fresh store from `open`. */
export function kvStoreCases(
  name: string,
  open: () => Promise<KvHarness>,
): ReturnType<typeof suite> {
  const cases = suite(`kv-store contract: ${name}`)
  for (const [title, run] of CASES) {
    cases(title, async () => {
      const harness = await open()
      try {
        await run(harness)
      } finally {
        await harness.close()
      }
    })
  }
  return cases
}
