/** Goal: a node takes the client address a gateway vouches for only when its HMAC verifies for
 * this request (method, target) within the clock window, under the cluster's client address key,
 * and otherwise the TCP peer's; the header is gone from the request either way. Method: real
 * IncomingMessages on an unconnected socket, headers set as node:http sets them. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import type { KeyObject } from 'node:crypto'
import { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import {
  CLIENT_ADDRESS_HEADER,
  CLOCK_WINDOW_MS,
  clientAddress,
  signedClientAddress,
  takeClientAddress,
} from '../../http/client-address.js'
import { clientAddressKey } from '../../runtime/cluster/cluster-key.js'

const NOW_MS = 1_800_000_000_000
const KEY = clientAddressKey({ SVC_CLUSTER_SECRET: 'the-cluster-secret-of-32-characters-or-more' })
const TARGET = '/api/admin/login'

/** A request of `method` on TARGET carrying `value` in the header (and another header). */
function requestWith(value: string, method = 'POST'): IncomingMessage {
  const incoming = new IncomingMessage(new Socket())
  incoming.method = method
  incoming.url = TARGET
  incoming.rawHeaders = ['Host', 'node', 'X-Svc-Client-Address', value]
  incoming.headers = { host: 'node', [CLIENT_ADDRESS_HEADER]: value }
  return incoming
}

function taken(value: string, key: KeyObject | null = KEY): string | undefined {
  const incoming = requestWith(value)
  takeClientAddress(incoming, key, NOW_MS)
  assert.equal(incoming.headers, { host: 'node' }, 'the header is removed')
  assert.equal(incoming.rawHeaders, ['Host', 'node'], 'the raw header is removed')
  return clientAddress(incoming)
}

test('an address the gateway signed for this request is taken, IPv4 and IPv6', () => {
  for (const address of ['192.0.2.7', '2001:db8::7', '::ffff:192.0.2.7']) {
    assert.is(taken(signedClientAddress(KEY, 'POST', TARGET, address, NOW_MS)), address)
  }
  const skewed = signedClientAddress(KEY, 'POST', TARGET, '192.0.2.7', NOW_MS + CLOCK_WINDOW_MS)
  assert.is(taken(skewed), '192.0.2.7', 'within the window, ahead')
})

test('a header that does not verify leaves the TCP peer (none here)', () => {
  const other = clientAddressKey({ SVC_CLUSTER_SECRET: 'another-cluster-secret-of-32-characters' })
  const good = signedClientAddress(KEY, 'POST', TARGET, '192.0.2.7', NOW_MS)
  const [, ts, mac] = good.split(' ')
  const forged: [string, string][] = [
    ['no HMAC', '192.0.2.7'],
    ['another key', signedClientAddress(other, 'POST', TARGET, '192.0.2.7', NOW_MS)],
    ['another method', signedClientAddress(KEY, 'GET', TARGET, '192.0.2.7', NOW_MS)],
    ['another target', signedClientAddress(KEY, 'POST', '/api/admin/users', '192.0.2.7', NOW_MS)],
    ['another address', `192.0.2.8 ${ts} ${mac}`],
    ['another time', `192.0.2.7 ${Number(ts) + 1} ${mac}`],
    ['stale', signedClientAddress(KEY, 'POST', TARGET, '192.0.2.7', NOW_MS - CLOCK_WINDOW_MS - 1)],
    ['not an address', signedClientAddress(KEY, 'POST', TARGET, 'gateway', NOW_MS)],
    ['a field more', `${good} x`],
    ['repeated', `${good}, ${good}`],
  ]
  for (const [why, value] of forged) assert.is(taken(value), undefined, why)
  assert.is(taken(good, null), undefined, 'a single node trusts no gateway')
})

test.run()
