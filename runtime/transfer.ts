/** @module Transfer lists for postMessage. Bodies move between threads as transferred buffers; a
 * view on a larger buffer (Node's pooled socket buffers, subarrays) is copied first, because
 * transferring its buffer would detach bytes that other code still uses. */
import { MessagePort } from 'node:worker_threads'

/** A Uint8Array that owns its whole buffer, so that buffer can be transferred. */
export function owningCopy(view: Uint8Array): Uint8Array {
  if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength) {
    if (view.buffer instanceof ArrayBuffer) return view
  }
  return new Uint8Array(view)
}

/** The transferables of a message: its `body` bytes and `stream` port, at the top level or inside
 * a result's `value`. Mutates `body` into an owning copy where needed. */
export function transferablesOf(message: unknown): (ArrayBuffer | MessagePort)[] {
  const list: (ArrayBuffer | MessagePort)[] = []
  collect(message, list)
  if (typeof message === 'object' && message !== null && 'value' in message) {
    collect((message as { value: unknown }).value, list)
  }
  return list
}

/** Closes the stream ports a message carries when it will never be delivered: its other end, held
 * by a stream on this thread, then fails at once instead of waiting for a peer that never came. */
export function closeUndelivered(message: unknown): void {
  for (const transferable of transferablesOf(message)) {
    if (transferable instanceof MessagePort) transferable.close()
  }
}

function collect(holder: unknown, list: (ArrayBuffer | MessagePort)[]): void {
  if (typeof holder !== 'object' || holder === null) return
  const record = holder as { body?: unknown; stream?: unknown }
  if (record.body instanceof Uint8Array) {
    const body = owningCopy(record.body)
    record.body = body
    list.push(body.buffer as ArrayBuffer)
  }
  if (record.stream instanceof MessagePort) list.push(record.stream)
}
