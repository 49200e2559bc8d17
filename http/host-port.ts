/** @module Addresses as members announce them (`host:port`, the host perhaps a bracketed IPv6
 * address), split for node:http. */

export function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':')
  return [address.slice(0, at).replace(/^\[|\]$/g, ''), Number(address.slice(at + 1))]
}
