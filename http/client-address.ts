/** @module The client's address as a storage node sees it. A gateway forwards requests over plain
 * HTTP, so the TCP peer of a forwarded request is the gateway, the same for all its clients. The
 * gateway names its client's own address in CLIENT_ADDRESS_HEADER with an HMAC over the address,
 * the request's method and target and a timestamp, keyed with a key derived from the cluster key
 * for this purpose alone (runtime/cluster/cluster-key.ts). A node counts failed logins under that
 * address, and logs it, only when the HMAC verifies and the timestamp is within CLOCK_WINDOW_MS of
 * its clock; otherwise under the TCP peer's. The node removes the header as the request arrives,
 * before anything else reads it, and a gateway drops a client's copy before adding its own: a
 * client cannot choose the address it is counted under. One HMAC per forwarded request, keyed by a
 * KeyObject made once per thread. */
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isIP, type Socket } from 'node:net'

export const CLIENT_ADDRESS_HEADER = 'x-svc-client-address'
/** How far a header's timestamp may be from the node's clock: the time a request takes from the
 * gateway to the node (its attempts, a queue for a connection), and the clocks' skew. A header
 * copied off the wire is good for no other request, and for this one only within the window. */
export const CLOCK_WINDOW_MS = 60_000

/** The addresses that verified, by request. */
const verified = new WeakMap<IncomingMessage, string>()

/** The header's value a gateway sends for a request of `method` on `target` from `address`. */
export function signedClientAddress(
  key: KeyObject,
  method: string,
  target: string,
  address: string,
  nowMs: number,
): string {
  const ts = String(Math.trunc(nowMs))
  return `${address} ${ts} ${mac(key, method, target, address, ts)}`
}

/** Removes CLIENT_ADDRESS_HEADER from a request as it arrives at a node, and remembers its address
 * when it verifies with `key` (null, on a single node: no gateway forwards to it). */
export function takeClientAddress(
  incoming: IncomingMessage,
  key: KeyObject | null,
  nowMs: number,
): void {
  const value = incoming.headers[CLIENT_ADDRESS_HEADER]
  if (value === undefined) return
  delete incoming.headers[CLIENT_ADDRESS_HEADER]
  const raw = incoming.rawHeaders
  for (let at = raw.length - 2; at >= 0; at -= 2) {
    if (raw[at]?.toLowerCase() === CLIENT_ADDRESS_HEADER) raw.splice(at, 2)
  }
  // Repeated, the header arrives joined with ', ' and is malformed: taken as not verified.
  if (key === null || typeof value !== 'string') return
  const address = verifiedAddress(key, incoming.method ?? '', incoming.url ?? '', value, nowMs)
  if (address !== null) verified.set(incoming, address)
}

/** The request's client: the address a gateway vouched for, or else the TCP peer. `socket` is the
 * request's, kept by a caller that asks after the response: Node detaches it from the request
 * once the response is done (then `incoming.socket` is null). */
export function clientAddress(
  incoming: IncomingMessage,
  socket: Socket | null = incoming.socket,
): string | undefined {
  return verified.get(incoming) ?? socket?.remoteAddress
}

function verifiedAddress(
  key: KeyObject,
  method: string,
  target: string,
  value: string,
  nowMs: number,
): string | null {
  const [address = '', ts = '', given = '', ...rest] = value.split(' ')
  if (rest.length > 0 || isIP(address) === 0 || !/^\d{1,15}$/.test(ts)) return null
  if (Math.abs(nowMs - Number(ts)) > CLOCK_WINDOW_MS) return null
  const expected = Buffer.from(mac(key, method, target, address, ts), 'base64url')
  const actual = Buffer.from(given, 'base64url')
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return null
  return address
}

function mac(key: KeyObject, method: string, target: string, address: string, ts: string): string {
  return createHmac('sha256', key)
    .update(`${method}\n${target}\n${address}\n${ts}`)
    .digest('base64url')
}
