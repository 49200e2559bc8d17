/** Goal: a call's signature holds exactly for the call signed: the same cluster, node, method,
 * time and body under the same key, once, within the clock window; the replay window forgets a
 * nonce only once its timestamp is outside the window, and is bounded; an answer's signature ties
 * it to the node and the call. Method: sign and verify in memory with a fixed clock. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  answerMac,
  CALL_CLOCK_WINDOW_MS,
  NonceWindow,
  signCall,
  verifyAnswer,
  verifyCall,
} from '../../runtime/cluster/call-auth.js'

const NOW = 1_700_000_000_000
const KEY = Buffer.from('k'.repeat(32))
const SIGNER = { key: KEY, clusterName: 'blue', nodeId: 'n1' }
const SERVER = { key: KEY, clusterName: 'blue' }
const BODY = Buffer.from('{"seq":1}')

test('a signed call verifies once, naming its node', () => {
  const nonces = new NonceWindow()
  const headers = signCall(SIGNER, 'Membership.Ping', BODY, NOW)
  const verdict = verifyCall(SERVER, headers, 'Membership.Ping', BODY, NOW, nonces)
  assert.equal(verdict, { ok: true, node: 'n1', nonce: headers['x-svc-nonce'] })
  const again = verifyCall(SERVER, headers, 'Membership.Ping', BODY, NOW + 1, nonces)
  assert.equal(again, { ok: false, refusal: 'unauthenticated', reason: 'replayed' })
})

test('any change to what was signed is refused', () => {
  const headers = signCall(SIGNER, 'Membership.Ping', BODY, NOW)
  const cases: [string, Record<string, string>, string, Buffer][] = [
    ['method', headers, 'Catalog.Apply', BODY],
    ['body', headers, 'Membership.Ping', Buffer.from('{"seq":2}')],
    ['node', { ...headers, 'x-svc-node': 'n2' }, 'Membership.Ping', BODY],
    ['ts', { ...headers, 'x-svc-ts': String(NOW + 1) }, 'Membership.Ping', BODY],
  ]
  for (const [what, changed, method, body] of cases) {
    const verdict = verifyCall(SERVER, changed, method, body, NOW, new NonceWindow())
    assert.equal(verdict, { ok: false, refusal: 'unauthenticated', reason: 'bad signature' }, what)
  }
  const otherKey = { key: Buffer.from('z'.repeat(32)), clusterName: 'blue' }
  const verdict = verifyCall(otherKey, headers, 'Membership.Ping', BODY, NOW, new NonceWindow())
  assert.is(verdict.ok, false)
  const otherCluster = { key: KEY, clusterName: 'green' }
  const refused = verifyCall(otherCluster, headers, 'Membership.Ping', BODY, NOW, new NonceWindow())
  assert.equal(refused, { ok: false, refusal: 'unauthenticated', reason: 'another cluster' })
})

test('missing or malformed metadata is refused', () => {
  const headers = signCall(SIGNER, 'Membership.Ping', BODY, NOW)
  for (const name of Object.keys(headers)) {
    const partial: Record<string, string | undefined> = { ...headers, [name]: undefined }
    const verdict = verifyCall(SERVER, partial, 'Membership.Ping', BODY, NOW, new NonceWindow())
    assert.is(verdict.ok, false, name)
  }
  const piped = { ...headers, 'x-svc-node': 'n1|x' }
  const verdict = verifyCall(SERVER, piped, 'Membership.Ping', BODY, NOW, new NonceWindow())
  assert.equal(verdict, { ok: false, refusal: 'unauthenticated', reason: 'malformed' })
})

test('the timestamp must be within the window of the server clock, either way', () => {
  for (const [offsetMs, accepted] of [
    [CALL_CLOCK_WINDOW_MS, true],
    [-CALL_CLOCK_WINDOW_MS, true],
    [CALL_CLOCK_WINDOW_MS + 1, false],
    [-CALL_CLOCK_WINDOW_MS - 1, false],
  ] as const) {
    const headers = signCall(SIGNER, 'Membership.Ping', BODY, NOW + offsetMs)
    const verdict = verifyCall(SERVER, headers, 'Membership.Ping', BODY, NOW, new NonceWindow())
    assert.is(verdict.ok, accepted, String(offsetMs))
  }
})

test('a nonce is remembered while its timestamp is in the window, then forgotten', () => {
  const nonces = new NonceWindow()
  const expiresAtMs = NOW + CALL_CLOCK_WINDOW_MS
  assert.is(nonces.admit('a'.repeat(32), expiresAtMs, NOW), 'new')
  assert.is(nonces.admit('a'.repeat(32), expiresAtMs, expiresAtMs), 'seen')
  assert.is(nonces.size, 1)
  // Past its expiry (and its bucket's), the timestamp check refuses a replay instead.
  assert.is(nonces.admit('b'.repeat(32), expiresAtMs + 60_000, expiresAtMs + 20_000), 'new')
  assert.is(nonces.size, 1)
})

test('a full replay window refuses new calls as busy rather than forgetting', () => {
  const nonces = new NonceWindow(2)
  const expiresAtMs = NOW + CALL_CLOCK_WINDOW_MS
  assert.is(nonces.admit('1'.repeat(32), expiresAtMs, NOW), 'new')
  assert.is(nonces.admit('2'.repeat(32), expiresAtMs, NOW), 'new')
  assert.is(nonces.admit('3'.repeat(32), expiresAtMs, NOW), 'full')
  assert.is(nonces.admit('1'.repeat(32), expiresAtMs, NOW), 'seen')
  const headers = signCall(SIGNER, 'Membership.Ping', BODY, NOW)
  const verdict = verifyCall(SERVER, headers, 'Membership.Ping', BODY, NOW, nonces)
  assert.equal(verdict, { ok: false, refusal: 'busy', reason: 'replay window full' })
  // A call without the key is refused before it can take a place.
  const forged = { ...headers, 'x-svc-mac': '0'.repeat(64) }
  const spare = new NonceWindow(1)
  verifyCall(SERVER, forged, 'Membership.Ping', BODY, NOW, spare)
  assert.is(spare.size, 0)
})

test("an answer's signature binds the answering node, the call and the bytes", () => {
  const server = { ...SIGNER, nodeId: 'n2' }
  const nonce = 'c'.repeat(32)
  const answer = Buffer.from('{"ok":true,"value":1}')
  const mac = answerMac(server, 'Membership.Ping', nonce, answer)
  assert.ok(verifyAnswer(SERVER, 'n2', 'Membership.Ping', nonce, answer, mac))
  assert.not.ok(verifyAnswer(SERVER, 'n3', 'Membership.Ping', nonce, answer, mac))
  assert.not.ok(verifyAnswer(SERVER, 'n2', 'Membership.Ping', 'd'.repeat(32), answer, mac))
  assert.not.ok(verifyAnswer(SERVER, 'n2', 'Membership.Ping', nonce, Buffer.from('{}'), mac))
  assert.not.ok(verifyAnswer(SERVER, 'n2', 'Membership.Ping', nonce, answer, 'nothex'))
})

test.run()
