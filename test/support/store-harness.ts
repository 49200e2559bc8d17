/** @module A replica-store running in the test's thread on a fake context (fake-context.ts), as
 * the store's unit tests drive it: messages without their request id and deadline, answers as
 * Results, and the helpers that read them. */
import { handle } from '../../protocol/actor.js'
import * as assert from 'uvu/assert'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import type { Result } from '../../protocol/errors.js'
import type { StoreMsg } from '../../protocol/messages.js'
import { fakeContext, type FakeContext, type FakeContextOptions } from './fake-context.js'

type Distribute<T> = T extends unknown ? Omit<T, 'requestId' | 'deadlineMs'> : never
/** A store message as a test writes it: the harness adds the request id and deadline. */
export type StoreBody = Distribute<StoreMsg>

export interface TestStore {
  ctx: FakeContext
  state: StoreState
  /** Sends one message, by default with a minute to answer. */
  send<T>(body: StoreBody, deadlineMs?: number): Promise<Result<T>>
}

export async function startStore(ctx: FakeContext = fakeContext()): Promise<TestStore> {
  const state = await replicaStore.init(ctx)
  return {
    ctx,
    state,
    async send<T>(body: StoreBody, deadlineMs = ctx.now() + 60_000): Promise<Result<T>> {
      const msg = { ...body, requestId: 'test', deadlineMs } as StoreMsg
      return (await handle(replicaStore, state, msg, ctx)) as Result<T>
    },
  }
}

/** The value of an ok Result; the test fails on any other. */
export function value<T>(result: Result<T>): T {
  if (!result.ok) assert.unreachable(`expected ok, got ${result.code}: ${result.detail}`)
  return (result as { ok: true; value: T }).value
}

/** `ok`, or the failure's code. */
export function code(result: Result<unknown>): string {
  return result.ok ? 'ok' : result.code
}

/** Waits for background work (promotions, garbage removal, GET streams) to finish. */
export async function idle(state: StoreState): Promise<void> {
  while (state.tasks.size + state.streams.size > 0) {
    await Promise.allSettled([...state.tasks, ...state.streams.keys()])
  }
}

/** A node of a one-node cluster (the catalog's calls answered by a gossiper of itself). */
export async function clusterStore(options: FakeContextOptions = {}): Promise<TestStore> {
  const config = { ...options.config, SVC_MODE: 'cluster', SVC_NODE_ID: 'n1' }
  const ctx = fakeContext({ ...options, config })
  const self = {
    id: 'n1',
    kind: 'node',
    pool: 'p1',
    poolHash: 'h',
    httpAddr: 'n1:9000',
    grpcAddr: 'n1:9100',
    incarnation: 1,
    status: 'Alive',
    phase: 'serving',
    version: '0',
    freeBytes: 1,
    wallMs: 0,
  }
  ctx.onCall((to, msg) => {
    if (to === 'gossiper' && msg.kind === 'membership.view') {
      return { ok: true, value: { self, members: [self] } }
    }
    return { ok: true, value: null }
  })
  return startStore(ctx)
}
