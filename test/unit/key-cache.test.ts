/** Goal: the ingress never keeps using a key after iam announced its change, even when the old
 * answer arrives after the announcement (they travel on different links). Method: drive KeyCache
 * with lookups and announcements in both orders. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { KeyCache } from '../../http/s3/key-cache.js'
import type { KeyLookup } from '../../protocol/messages.js'

function lookup(secretKey: string, generation: number): KeyLookup {
  return { secretKey, principal: { userId: 'u1', role: 'Writer' }, generation }
}

test('a remembered lookup is served until its key is forgotten', () => {
  const cache = new KeyCache()
  cache.remember('AK1', lookup('s1', 10))
  assert.is(cache.get('AK1')?.secretKey, 's1')
  cache.forget('AK1', 11)
  assert.is(cache.get('AK1'), undefined)
})

test('an answer older than the announcement is not cached', () => {
  const cache = new KeyCache()
  cache.forget('AK1', 20)
  cache.remember('AK1', lookup('stale', 19))
  assert.is(cache.get('AK1'), undefined)
  cache.remember('AK1', lookup('fresh', 20))
  assert.is(cache.get('AK1')?.secretKey, 'fresh')
})

test('announcements for other keys do not evict a key', () => {
  const cache = new KeyCache()
  cache.remember('AK1', lookup('s1', 5))
  cache.forget('AK2', 6)
  assert.is(cache.get('AK1')?.secretKey, 's1')
})

test('past its bound the cache drops its oldest entry', () => {
  const cache = new KeyCache()
  for (let i = 0; i <= 10_000; i++) cache.remember(`AK${i}`, lookup(`s${i}`, 1))
  assert.is(cache.get('AK0'), undefined)
  assert.is(cache.get('AK10000')?.secretKey, 's10000')
})

test('many announcements fold into a floor that still refuses older answers', () => {
  const cache = new KeyCache()
  for (let i = 0; i <= 10_001; i++) cache.forget(`AK${i}`, 100 + i)
  cache.remember('AK5', lookup('stale', 99))
  assert.is(cache.get('AK5'), undefined)
})

test.run()
