/** Goal: the sockets that ingress threads share. Two sockets on one loopback address and port both
 * take connections, on IPv4 and (where the loopback has it) IPv6; port 0 gets a port the second
 * socket can join; a port held by a socket without SO_REUSEPORT is refused with EADDRINUSE, and
 * the descriptor of the failed attempt is closed. Method: node:net servers over the descriptors,
 * fresh connections counted per server. */
import { readdirSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { openSharedListener } from '../../runtime/reuse-port.js'

const CONNECTIONS = 32

/** A server on the descriptor that counts the connections it accepted. */
async function serve(fd: number): Promise<{ server: Server; accepted: () => number }> {
  let count = 0
  const server = createServer((socket) => {
    count++
    socket.end()
  })
  await new Promise<void>((resolve) => server.listen({ fd }, resolve))
  return { server, accepted: () => count }
}

function connectOnce(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: 2_000 })
    socket.on('timeout', () => socket.destroy(new Error('connect timed out')))
    socket.on('error', reject)
    socket.on('close', () => resolve())
    socket.resume()
  })
}

async function bothTakeConnections(host: string): Promise<void> {
  const first = await openSharedListener(host, 0)
  const second = await openSharedListener(host, first.port)
  assert.ok(first.port > 0)
  assert.is(second.port, first.port)
  const a = await serve(first.fd)
  const b = await serve(second.fd)
  try {
    for (let i = 0; i < CONNECTIONS; i++) await connectOnce(host, first.port)
    assert.is(a.accepted() + b.accepted(), CONNECTIONS)
    assert.ok(a.accepted() > 0 && b.accepted() > 0, `${a.accepted()} / ${b.accepted()}`)
  } finally {
    a.server.close()
    b.server.close()
  }
}

test('two sockets on one IPv4 port both take connections', async () => {
  await bothTakeConnections('127.0.0.1')
})

const loopbackIpv6 = Object.values(networkInterfaces())
  .flat()
  .some((address) => address?.internal === true && address.family === 'IPv6')

test('two sockets on one IPv6 port both take connections', async () => {
  if (!loopbackIpv6) return // This machine's loopback has no IPv6 address.
  await bothTakeConnections('::1')
})

test('a port held without SO_REUSEPORT is refused; the failed socket is closed', async () => {
  const holder = createServer()
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const port = (holder.address() as { port: number }).port
  try {
    const open = (): number => readdirSync('/proc/self/fd').length
    const before = open()
    const error = await openSharedListener('127.0.0.1', port).then(
      () => null,
      (e: unknown) => e as NodeJS.ErrnoException,
    )
    assert.is(error?.code, 'EADDRINUSE')
    assert.is(error?.syscall, 'bind')
    assert.is(open(), before, 'descriptors open after the failed attempt')
  } finally {
    holder.close()
  }
})

test.run()
