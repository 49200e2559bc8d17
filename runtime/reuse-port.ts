/** @module Listening sockets that several ingress threads share. Each thread opens its own socket
 * on the same address with SO_REUSEPORT, and the kernel spreads new connections over them. Node
 * 20 cannot ask for SO_REUSEPORT (`reusePort` arrived in Node 22.12), and a worker thread cannot
 * take over another thread's server handle, so the socket is made through koffi (socket,
 * setsockopt, bind, listen) and handed to node:net by its file descriptor. Linux only; the
 * configuration allows one ingress thread elsewhere. When a thread ends, Node closes the handle
 * and the kernel stops sending that socket connections. */
import { lookup } from 'node:dns/promises'
import { constants } from 'node:os'
import ipaddr from 'ipaddr.js'
import { loadLibc } from './libc.js'

const AF_INET = 2
const AF_INET6 = 10
const SOCK_STREAM = 1
const SOCK_NONBLOCK = 0o4000
const SOCK_CLOEXEC = 0o2000000
const SOL_SOCKET = 1
const SO_REUSEADDR = 2
const SO_REUSEPORT = 15
const IPPROTO_IPV6 = 41
const IPV6_V6ONLY = 26
/** Node's own default backlog for server.listen. */
const LISTEN_BACKLOG = 511

interface SocketCalls {
  socket(domain: number, type: number, protocol: number): number
  setsockopt(fd: number, level: number, name: number, value: Buffer, length: number): number
  bind(fd: number, address: Buffer, length: number): number
  listen(fd: number, backlog: number): number
  getsockname(fd: number, address: Buffer, length: Buffer): number
  close(fd: number): number
  errno(): number
}

let calls: Promise<SocketCalls> | null = null

function socketCalls(): Promise<SocketCalls> {
  calls ??= loadLibc().then(({ lib, errno }) => ({
    socket: lib.func('int socket(int, int, int)'),
    setsockopt: lib.func('int setsockopt(int, int, int, const void *, uint32_t)'),
    bind: lib.func('int bind(int, const void *, uint32_t)'),
    listen: lib.func('int listen(int, int)'),
    getsockname: lib.func('int getsockname(int, void *, void *)'),
    close: lib.func('int close(int)'),
    errno,
  }))
  return calls
}

export interface SharedListener {
  /** The listening socket's descriptor, for `server.listen({ fd })`. */
  fd: number
  /** The bound port: the one asked for, or the kernel's choice when that was 0. */
  port: number
}

/** Opens a listening TCP socket on host:port that other threads and processes of this user may
 * also listen on. `host` may be a name; it resolves as node:net would resolve it. Rejects with the
 * system's error code (EADDRINUSE when a socket without SO_REUSEPORT holds the port). */
export async function openSharedListener(host: string, port: number): Promise<SharedListener> {
  const c = await socketCalls()
  const { address, family } = await lookup(host)
  const fd = c.socket(
    family === 6 ? AF_INET6 : AF_INET,
    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
    0,
  )
  if (fd < 0) throw systemError(c.errno(), 'socket', host, port)
  const check = (result: number, call: string): void => {
    if (result === 0) return
    const error = systemError(c.errno(), call, host, port)
    c.close(fd)
    throw error
  }
  check(c.setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, int32(1), 4), 'setsockopt')
  check(c.setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, int32(1), 4), 'setsockopt')
  // node:net listens on both families when bound to '::'; do the same.
  if (family === 6) check(c.setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, int32(0), 4), 'setsockopt')
  const local = sockaddr(family, address, port)
  check(c.bind(fd, local, local.length), 'bind')
  check(c.listen(fd, LISTEN_BACKLOG), 'listen')
  const bound = Buffer.alloc(local.length)
  check(c.getsockname(fd, bound, int32(bound.length)), 'getsockname')
  return { fd, port: bound.readUInt16BE(2) }
}

function int32(value: number): Buffer {
  const buffer = Buffer.alloc(4)
  buffer.writeInt32LE(value)
  return buffer
}

/** struct sockaddr_in (16 bytes: family, port, address, zeros) or sockaddr_in6 (28 bytes: family,
 * port, flow info, address, scope id); the family in host order, the port in network order. */
function sockaddr(family: number, address: string, port: number): Buffer {
  const v6 = family === 6
  const buffer = Buffer.alloc(v6 ? 28 : 16)
  buffer.writeUInt16LE(v6 ? AF_INET6 : AF_INET, 0)
  buffer.writeUInt16BE(port, 2)
  const parsed = v6 ? ipaddr.IPv6.parse(address) : ipaddr.IPv4.parse(address)
  Buffer.from(parsed.toByteArray()).copy(buffer, v6 ? 8 : 4)
  return buffer
}

function systemError(errno: number, call: string, host: string, port: number): Error {
  const code =
    Object.entries(constants.errno).find(([, value]) => value === errno)?.[0] ?? `errno ${errno}`
  return Object.assign(new Error(`${call} ${code} ${host}:${port}`), { code, syscall: call })
}
