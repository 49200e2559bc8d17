/** @module Links: request/reply over a MessagePort between two actors. A link is directed: the
 * caller end sends requests and awaits replies, the serving end hands them to its actor. Every call
 * has a deadline and a bounded number of calls may be outstanding; a link that closes (its peer
 * died or was rewired) fails its pending calls at once with `unavailable`, so callers fail fast. */
import assert from 'node:assert/strict'
import type { MessagePort } from 'node:worker_threads'
import { fail, type Result } from '../protocol/errors.js'
import { PENDING_CALLS_MAX } from './knobs.js'
import { transferablesOf } from './transfer.js'

export type Envelope =
  | { t: 'req'; id: number; msg: { kind: string; deadlineMs: number } }
  | { t: 'res'; id: number; result: Result<unknown> }

interface Pending {
  resolve: (result: Result<unknown>) => void
  timer: NodeJS.Timeout
}

export class CallerLink {
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private closed = false

  constructor(
    private readonly port: MessagePort,
    readonly peer: string,
  ) {
    port.on('message', (envelope: Envelope) => this.onReply(envelope))
    port.on('close', () => this.close('peer closed the link'))
  }

  get outstanding(): number {
    return this.pending.size
  }

  call<T>(msg: { kind: string; deadlineMs: number }): Promise<Result<T>> {
    if (this.closed) return Promise.resolve(fail('unavailable', `${this.peer} is restarting`))
    if (this.pending.size >= PENDING_CALLS_MAX) {
      return Promise.resolve(fail('busy', `${this.peer}: too many outstanding requests`))
    }
    const waitMs = msg.deadlineMs - Date.now()
    if (waitMs <= 0) return Promise.resolve(fail('timeout', `deadline passed before ${msg.kind}`))
    const id = this.nextId++
    return new Promise<Result<T>>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        resolve(fail('timeout', `${this.peer} did not answer ${msg.kind} in time`))
      }, waitMs)
      this.pending.set(id, { resolve: resolve as (r: Result<unknown>) => void, timer })
      const envelope: Envelope = { t: 'req', id, msg }
      this.port.postMessage(envelope, transferablesOf(msg))
    })
  }

  private onReply(envelope: Envelope): void {
    assert(envelope.t === 'res')
    const entry = this.pending.get(envelope.id)
    if (entry === undefined) return // Answered after its deadline: already failed as a timeout.
    this.pending.delete(envelope.id)
    clearTimeout(entry.timer)
    entry.resolve(envelope.result)
  }

  /** Fails every pending call; later calls fail at once. */
  close(reason: string): void {
    if (this.closed) return
    this.closed = true
    for (const entry of this.pending.values()) {
      clearTimeout(entry.timer)
      entry.resolve(fail('unavailable', `${this.peer}: ${reason}`))
    }
    this.pending.clear()
    this.port.close()
  }
}

export type Dispatch = (msg: { kind: string; deadlineMs: number }) => Promise<Result<unknown>>

/** The serving end: every request goes to `dispatch` (which applies the mailbox bound); the reply
 * goes back with its body transferred. */
export function serveLink(port: MessagePort, dispatch: Dispatch): void {
  port.on('message', (envelope: Envelope) => {
    assert(envelope.t === 'req')
    void dispatch(envelope.msg).then(
      (result) => reply(port, envelope.id, result),
      (error: unknown) => reply(port, envelope.id, fail('internal', String(error))),
    )
  })
}

function reply(port: MessagePort, id: number, result: Result<unknown>): void {
  const envelope: Envelope = { t: 'res', id, result }
  try {
    port.postMessage(envelope, transferablesOf(result))
  } catch {
    // The caller's end is gone (it restarted); its pending call already failed there.
  }
}
