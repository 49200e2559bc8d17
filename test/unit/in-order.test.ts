/** Goal: requests pipelined on one connection start one at a time, in order, each once the
 * response before it has closed; a connection that pipelines past the bound is cut, and requests
 * that waited on a cut connection never start. Method: drive inOrder with stand-in requests and
 * responses (event emitters) on stand-in sockets, and record which handlers start. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { inOrder, PIPELINED_WAITING_MAX } from '../../http/in-order.js'

interface FakeSocket {
  destroyed: boolean
  destroy(): void
}

function fakeSocket(): FakeSocket {
  return {
    destroyed: false,
    destroy() {
      this.destroyed = true
    },
  }
}

function exchange(socket: FakeSocket, url: string): [IncomingMessage, EventEmitter] {
  const incoming = { socket, url } as unknown as IncomingMessage
  return [incoming, new EventEmitter()]
}

function recorder(): { started: string[]; listener: ReturnType<typeof inOrder> } {
  const started: string[] = []
  const listener = inOrder((incoming) => started.push(incoming.url ?? ''))
  return { started, listener }
}

test('the next request on a connection starts when the response before it closes', () => {
  const { started, listener } = recorder()
  const socket = fakeSocket()
  const [first, firstOut] = exchange(socket, '/put')
  const [second, secondOut] = exchange(socket, '/get')
  listener(first, firstOut as ServerResponse)
  listener(second, secondOut as ServerResponse)
  assert.equal(started, ['/put'])
  firstOut.emit('close')
  assert.equal(started, ['/put', '/get'])
  secondOut.emit('close')
  const [third, thirdOut] = exchange(socket, '/later')
  listener(third, thirdOut as ServerResponse)
  assert.equal(started, ['/put', '/get', '/later'], 'an idle connection starts at once')
})

test('connections do not wait on each other', () => {
  const { started, listener } = recorder()
  const [a, aOut] = exchange(fakeSocket(), '/a')
  const [b, bOut] = exchange(fakeSocket(), '/b')
  listener(a, aOut as ServerResponse)
  listener(b, bOut as ServerResponse)
  assert.equal(started, ['/a', '/b'])
})

test('pipelining past the bound cuts the connection; waiting requests then never start', () => {
  const { started, listener } = recorder()
  const socket = fakeSocket()
  const outs: EventEmitter[] = []
  for (let i = 0; i <= PIPELINED_WAITING_MAX; i++) {
    const [incoming, outgoing] = exchange(socket, `/${i}`)
    outs.push(outgoing)
    listener(incoming, outgoing as ServerResponse)
  }
  assert.not.ok(socket.destroyed, 'the bound itself is allowed')
  const [over, overOut] = exchange(socket, '/over')
  listener(over, overOut as ServerResponse)
  assert.ok(socket.destroyed)
  outs[0]?.emit('close')
  assert.equal(started, ['/0'])
})

test.run()
