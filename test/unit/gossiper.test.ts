/** Goal: the gossiper's SWIM membership meets issue 17's promises between real gossiper actors: all
 * members Alive after join, a killed node Dead everywhere within 15 s, a stopped one Left within
 * 5 s, a restarted one Alive again within 15 s, a false suspicion refuted, a healed partition
 * found again, clock skew above 500 ms reported and warned once (and a peer whose messages leave
 * late, as a paused process's do, not taken for skew), another cluster and malformed
 * bodies refused. Method: several gossipers in this thread, each with its own fake
 * context on one shared ManualClock, joined by a small network in the test that hands each peer
 * call to the target's `handle` as grpc-ingress would (a `peer.request`, bodies through JSON), and
 * that drops a node's traffic to model kill -9 or a partition (a dropped call never answers: the
 * caller's own deadline ends it). Virtual time moves in 100 ms steps; the checks are about virtual
 * time only, so the machine's load cannot change an outcome. */
import { handle } from '../../protocol/actor.js'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { gossiper } from '../../actors/gossiper/gossiper.js'
import type { GossiperState } from '../../actors/gossiper/exchange.js'
import type { Member, MemberStatus, PeerRequestMsg } from '../../protocol/cluster.js'
import type { Result } from '../../protocol/errors.js'
import type { MembershipView } from '../../protocol/membership.js'
import { fakeContext, ManualClock, type FakeContext } from '../support/fake-context.js'
import { admitPeerBody } from '../support/peer-boundary.js'

const STEP_MS = 100
const POOL = ['n1', 'n2', 'n3', 'n4']

interface Instance {
  id: string
  grpcAddr: string
  ctx: FakeContext
  state: GossiperState
  up: boolean
}

/** Nodes n1.. listen on 9101.., gateways g1.. on 9201.. */
const portOf = (id: string): number => (id.startsWith('g') ? 9200 : 9100) + Number(id.slice(1))
const grpcAddrOf = (id: string): string => `127.0.0.1:${portOf(id)}`

function configOf(id: string, cluster: string): Record<string, string> {
  const common = {
    SVC_CLUSTER_NAME: cluster,
    SVC_NODE_ID: id,
    SVC_NODE_HTTP_ADDR: `127.0.0.1:${portOf(id) - 1_100}`,
    SVC_NODE_GRPC_ADDR: grpcAddrOf(id),
    SVC_VERSION: '0.1.0',
  }
  if (id.startsWith('g')) return { ...common, SVC_MODE: 'gateway', SVC_SEEDS: grpcAddrOf('n1') }
  return {
    ...common,
    SVC_MODE: 'cluster',
    SVC_SEEDS: '',
    SVC_POOL_NAME: 'p1',
    SVC_POOL_NODES: POOL.map((node) => `${node}:${grpcAddrOf(node)}`).join(),
  }
}

class Network {
  readonly clock = new ManualClock()
  private readonly byAddr = new Map<string, Instance>()
  /** Nodes whose traffic, both ways, is dropped. */
  readonly cut = new Set<string>()
  /** Nodes every second message of which (a request or an answer) leaves this late, as from a
   * process paused or too busy between making the message and sending it. */
  readonly lagMs = new Map<string, number>()
  private readonly sent = new Map<string, number>()

  async start(
    id: string,
    options: { offsetMs?: number; cluster?: string } = {},
  ): Promise<Instance> {
    const base = fakeContext({
      self: 'gossiper',
      config: configOf(id, options.cluster ?? 'test'),
      seed: Number(id.slice(1)) + (id.startsWith('g') ? 100 : 0) + this.clock.nowMs,
    })
    const ctx: FakeContext = {
      ...base,
      now: () => this.clock.nowMs + (options.offsetMs ?? 0),
      after: (ms, task) => this.clock.after(ms, task),
    }
    const instance = { id, grpcAddr: grpcAddrOf(id), ctx, up: true } as Instance
    ctx.onPeerCall((to, method, body) => this.deliver(instance, to.grpcAddr, method, body))
    // The store of a node that has pulled the catalog: the gossiper starts out serving.
    ctx.onCall((to, msg) =>
      to === 'replica-store' && msg.kind === 'system.phase'
        ? { ok: true, value: 'serving' }
        : { ok: false, code: 'unavailable', detail: `${to} is not part of this test` },
    )
    this.byAddr.set(instance.grpcAddr, instance)
    instance.state = await gossiper.init(ctx)
    return instance
  }

  /** kill -9: the process is gone, its address answers nothing. */
  kill(id: string): void {
    const instance = this.byAddr.get(grpcAddrOf(id))
    if (instance !== undefined) instance.up = false
  }

  async stop(id: string): Promise<void> {
    const instance = this.byAddr.get(grpcAddrOf(id)) as Instance
    const stopped = gossiper.stop?.(instance.state, instance.ctx)
    await this.run(3_000)
    await stopped
    instance.up = false
  }

  private deliver(
    sender: Instance,
    grpcAddr: string,
    method: PeerRequestMsg['method'],
    body: object,
  ): Promise<Result<unknown>> {
    const target = this.byAddr.get(grpcAddr)
    const lost =
      !sender.up ||
      target === undefined ||
      !target.up ||
      this.cut.has(sender.id) ||
      this.cut.has(target.id)
    if (lost) return new Promise(() => undefined)
    const msg: PeerRequestMsg = {
      kind: 'peer.request',
      requestId: 'gossip',
      deadlineMs: target.ctx.now() + 1_000,
      method,
      from: sender.id,
      body: JSON.parse(JSON.stringify(body)),
    }
    // Answers travel like requests: asynchronously, through JSON, and not out of a cut.
    return this.lag(sender)
      .then(() => handle(gossiper, target.state, msg, target.ctx))
      .then(async (answer): Promise<Result<unknown>> => {
        await this.lag(target)
        if (!target.up || this.cut.has(target.id) || this.cut.has(sender.id)) {
          return new Promise(() => undefined)
        }
        return JSON.parse(JSON.stringify(answer)) as Result<unknown>
      })
  }

  /** Resolves when a message `from` sends may leave: at once, or after its lag. */
  private lag(from: Instance): Promise<void> {
    const count = (this.sent.get(from.id) ?? 0) + 1
    this.sent.set(from.id, count)
    const lagMs = count % 2 === 0 ? (this.lagMs.get(from.id) ?? 0) : 0
    return new Promise((resolve) => (lagMs > 0 ? this.clock.after(lagMs, resolve) : resolve()))
  }

  /** Moves virtual time, letting every message in flight settle after each step. */
  async run(ms: number, each?: () => boolean): Promise<number> {
    for (let elapsed = 0; elapsed < ms; elapsed += STEP_MS) {
      this.clock.advance(STEP_MS)
      await new Promise((resolve) => setImmediate(resolve))
      if (each?.() === true) return elapsed + STEP_MS
    }
    return ms
  }

  instance(id: string): Instance {
    return this.byAddr.get(grpcAddrOf(id)) as Instance
  }

  view(id: string): MembershipView {
    const instance = this.instance(id)
    const answer = handle(
      gossiper,
      instance.state,
      { kind: 'membership.view', requestId: 'view', deadlineMs: instance.ctx.now() + 1_000 },
      instance.ctx,
    ) as Result<MembershipView>
    assert.ok(answer.ok)
    return answer.value
  }

  statusOf(observer: string, member: string): MemberStatus | undefined {
    return this.view(observer).members.find((entry) => entry.id === member)?.status
  }

  /** Whether every observer holds `member` with `status`. */
  allSee(observers: readonly string[], member: string, status: MemberStatus): boolean {
    return observers.every((observer) => this.statusOf(observer, member) === status)
  }
}

const ALL = [...POOL, 'g1']

async function joined(): Promise<Network> {
  const net = new Network()
  for (const id of ALL) await net.start(id)
  const tookMs = await net.run(20_000, () =>
    ALL.every((observer) => ALL.every((member) => net.statusOf(observer, member) === 'Alive')),
  )
  assert.ok(tookMs < 20_000, 'every member Alive at every member')
  return net
}

test('after join every member, gateway included, is Alive at every member', async () => {
  const net = await joined()
  const view = net.view('n2')
  assert.equal(
    view.members.map((member) => member.id),
    ['n2', 'g1', 'n1', 'n3', 'n4'],
    'self first, then the others by id',
  )
  const gateway = view.members.find((member) => member.id === 'g1')
  assert.is(gateway?.kind, 'gateway')
  assert.is(gateway?.pool, null)
  assert.is(view.self.pool, 'p1')
  assert.is(view.self.httpAddr, '127.0.0.1:8002')
  // Stays so: healthy members are not suspected while time goes on.
  await net.run(30_000, () => !ALL.every((member) => net.allSee(ALL, member, 'Alive')))
  for (const member of ALL) assert.ok(net.allSee(ALL, member, 'Alive'), `${member} Alive`)
})

test('pool members are known from the start, Dead until heard from', async () => {
  const net = new Network()
  await net.start('n1')
  const view = net.view('n1')
  // Its own incarnation is its start time, or one more once it said it serves.
  const incarnation = (member: Member): number | boolean =>
    member.id === 'n1' ? member.incarnation >= net.clock.nowMs : member.incarnation
  assert.equal(
    view.members.map((member) => [member.id, member.status, incarnation(member)]),
    [
      ['n1', 'Alive', true],
      ['n2', 'Dead', 0],
      ['n3', 'Dead', 0],
      ['n4', 'Dead', 0],
    ],
  )
})

test('a killed node is Dead at all others within 15 s; restarted, Alive within 15 s', async () => {
  const net = await joined()
  const others = ALL.filter((id) => id !== 'n4')
  const before = net.view('n1').members.find((member) => member.id === 'n4')?.incarnation ?? 0
  net.kill('n4')
  const deadMs = await net.run(15_000, () => net.allSee(others, 'n4', 'Dead'))
  assert.ok(net.allSee(others, 'n4', 'Dead'), `n4 Dead everywhere (${deadMs} ms)`)
  assert.ok(deadMs <= 15_000)
  for (const id of others)
    assert.ok(
      net.allSee(
        ALL.filter((o) => o !== 'n4'),
        id,
        'Alive',
      ),
    )
  await net.start('n4')
  const aliveMs = await net.run(15_000, () => net.allSee(ALL, 'n4', 'Alive'))
  assert.ok(net.allSee(ALL, 'n4', 'Alive'), `n4 Alive again everywhere (${aliveMs} ms)`)
  const after = net.view('n1').members.find((member) => member.id === 'n4')?.incarnation ?? 0
  assert.ok(after > before, 'the restart came with a higher incarnation')
})

test('a stopped node is Left at all others within 5 s, and stays Left', async () => {
  const net = await joined()
  const others = ALL.filter((id) => id !== 'n3')
  const stopping = net.stop('n3')
  const leftMs = await net.run(5_000, () => net.allSee(others, 'n3', 'Left'))
  await stopping
  assert.ok(leftMs < 5_000, `n3 Left everywhere within 5 s (${leftMs} ms)`)
  await net.run(20_000)
  assert.ok(net.allSee(others, 'n3', 'Left'), 'Left is not overturned by suspicion or probes')
})

test('a falsely suspected node refutes with a higher incarnation and is never Dead', async () => {
  const net = await joined()
  const others = ALL.filter((id) => id !== 'n2')
  const before = net.view('n1').members.find((member) => member.id === 'n2')?.incarnation ?? 0
  net.cut.add('n2')
  const suspectedMs = await net.run(10_000, () =>
    others.some((id) => net.statusOf(id, 'n2') === 'Suspect'),
  )
  assert.ok(suspectedMs < 10_000, 'n2 suspected while cut off')
  net.cut.delete('n2')
  let everDead = false
  await net.run(10_000, () => {
    everDead ||= others.some((id) => net.statusOf(id, 'n2') === 'Dead')
    return false
  })
  assert.not.ok(everDead, 'n2 was never declared Dead')
  assert.ok(net.allSee(ALL, 'n2', 'Alive'))
  const after = net.view('n1').members.find((member) => member.id === 'n2')?.incarnation ?? 0
  assert.ok(after > before, 'the refutation raised the incarnation')
  assert.ok(net.instance('n2').ctx.logs.some((entry) => entry.message === 'suspicion refuted'))
})

test('a node cut off long enough is Dead, and Alive again once the partition heals', async () => {
  const net = await joined()
  const others = ALL.filter((id) => id !== 'n4')
  net.cut.add('n4')
  // Until each side holds the other Dead: then no probe of either reaches across.
  const deadMs = await net.run(20_000, () =>
    others.every((id) => net.statusOf(id, 'n4') === 'Dead' && net.statusOf('n4', id) === 'Dead'),
  )
  assert.ok(deadMs < 20_000, 'n4 Dead at the others, and they at n4')
  net.cut.delete('n4')
  // Found again by the pings of Dead members (every 10 s), well before the next PushPull round
  // (30 s), and told of its death, which it refutes.
  const aliveMs = await net.run(12_000, () =>
    ALL.every((member) => net.allSee(ALL, member, 'Alive')),
  )
  assert.ok(aliveMs < 12_000, `every member Alive at every member again (${aliveMs} ms)`)
})

test("a malformed body or one carrying another node's record is refused", async () => {
  const net = new Network()
  const n1 = await net.start('n1')
  const n2 = await net.start('n2')
  // A malformed body is refused by the transport's check (its schema), before the gossiper.
  const call = async (from: string, body: unknown): Promise<Result<unknown>> => {
    const admitted = admitPeerBody('Membership.Ping', body)
    if (!admitted.ok) return admitted
    const deadlineMs = n1.ctx.now() + 1_000
    const msg = { kind: 'peer.request', requestId: 'r', deadlineMs, from } as const
    const request = { ...msg, method: 'Membership.Ping', body: admitted.value } as const
    return handle(gossiper, n1.state, request, n1.ctx)
  }
  const codeOf = (answer: Result<unknown>): string => (answer.ok ? 'ok' : answer.code)
  const good = { cluster: 'test', sender: n2.state.table.self, wallMs: 0, updates: [] }
  assert.is(codeOf(await call('n2', good)), 'ok')
  assert.is(codeOf(await call('n3', good)), 'invalid_argument', 'n3 speaking for n2')
  assert.is(codeOf(await call('n2', { ...good, updates: 'x' })), 'invalid_argument')
  const badSender = { ...good, sender: { ...good.sender, status: 'Gone' } }
  assert.is(codeOf(await call('n2', badSender)), 'invalid_argument')
  assert.is(codeOf(await call('n2', null)), 'invalid_argument')
})

test('a clock 2 s ahead is reported as skew and warned about once per crossing', async () => {
  const net = new Network()
  await net.start('n1')
  await net.start('n2')
  await net.start('n3', { offsetMs: 2_000 })
  await net.run(20_000)
  const view = net.view('n1')
  const skewOf = (id: string): number | null =>
    view.members.find((member) => member.id === id)?.skewMs ?? null
  assert.ok((skewOf('n3') ?? 0) > 1_500 && (skewOf('n3') ?? 0) <= 2_000, `n3 ${skewOf('n3')}`)
  assert.ok((skewOf('n2') ?? 1_000) < 500, `n2 ${skewOf('n2')}`)
  assert.is(view.maxClockSkewMs, skewOf('n3'))
  const warnings = net
    .instance('n1')
    .ctx.logs.filter((entry) => entry.level === 'warn' && entry.message.includes('clock skew'))
  assert.equal(
    warnings.map((entry) => entry.fields['member']),
    ['n3'],
  )
})

test('a paused or busy peer is not clock skew: a late message is not a sample', async () => {
  // n3's clock is right, but every second message of its own leaves 1.5 s late: an envelope made
  // before a pause (a request, or the answer to a call) arrives with a clock 1.5 s behind. n4's
  // clock is 2 s ahead, with no lag: that one is skew.
  const net = new Network()
  for (const id of POOL) await net.start(id, id === 'n4' ? { offsetMs: 2_000 } : {})
  net.lagMs.set('n3', 1_500)
  await net.run(30_000)
  const view = net.view('n1')
  const skewOf = (id: string): number | null =>
    view.members.find((member) => member.id === id)?.skewMs ?? null
  assert.ok(skewOf('n3') !== null, 'answers of n3 on time were sampled')
  assert.ok((skewOf('n3') ?? 1_000) < 100, `n3 ${skewOf('n3')}`)
  assert.ok((skewOf('n4') ?? 0) > 1_500 && (skewOf('n4') ?? 0) <= 2_000, `n4 ${skewOf('n4')}`)
  for (const observer of ['n1', 'n2']) {
    const warned = net
      .instance(observer)
      .ctx.logs.filter((entry) => entry.level === 'warn' && entry.message.includes('clock skew'))
      .map((entry) => entry.fields['member'])
    assert.not.ok(warned.includes('n3'), `${observer} warned of n3`)
  }
})

test('a node of another cluster is refused and never joins', async () => {
  const net = new Network()
  await net.start('n1')
  await net.start('n2', { cluster: 'other' })
  await net.run(10_000)
  assert.is(net.statusOf('n1', 'n2'), 'Dead', 'still not heard from')
  assert.is(net.statusOf('n2', 'n1'), 'Dead')
  const instance = net.instance('n1')
  const foreign = net.instance('n2')
  const answer = (await handle(
    gossiper,
    instance.state,
    {
      kind: 'peer.request',
      requestId: 'r',
      deadlineMs: instance.ctx.now() + 1_000,
      method: 'Membership.Ping',
      from: 'n2',
      body: { cluster: 'other', sender: foreign.state.table.self, wallMs: 0, updates: [] },
    },
    instance.ctx,
  )) as Result<unknown>
  assert.equal(answer.ok ? 'ok' : answer.code, 'forbidden')
})

test('update-self is disseminated: others see the new free bytes and phase', async () => {
  const net = await joined()
  const n1 = net.instance('n1')
  const answer = handle(
    gossiper,
    n1.state,
    {
      kind: 'membership.update-self',
      requestId: 'u',
      deadlineMs: n1.ctx.now() + 1_000,
      freeBytes: 123_456,
      phase: 'needs_bootstrap',
    },
    n1.ctx,
  )
  assert.ok((answer as Result<unknown>).ok)
  const seenMs = await net.run(10_000, () =>
    ALL.every((id) => {
      const member = net.view(id).members.find((entry) => entry.id === 'n1')
      return member?.freeBytes === 123_456 && member.phase === 'needs_bootstrap'
    }),
  )
  assert.ok(seenMs < 10_000, 'every member holds the new record')
})

test.run()
