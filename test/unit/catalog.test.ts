/** Goal: cluster mode's catalog. A bucket created, configured or deleted, and a user record
 * written, through one node is on every live node before the request answers; of two racing
 * creations of one name exactly one succeeds; an Alive node that does not take a change fails the
 * request (`unavailable`), a Dead one does not count; a record applies only when its stamp is
 * newer, so a deletion is never undone by an older copy; a node that missed changes catches up by
 * pulling the catalog, and then tells iam to create the root user if none exists.
 * Method: three replica-store actors in this thread on fake contexts; their peer calls go to each
 * other's `handle` as `peer.request` messages (a table says who is reachable), and a fake gossiper
 * answers `membership.view` with the statuses the test sets. */
import { handle } from '../../protocol/actor.js'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { replicaStore, type StoreState } from '../../actors/replica-store/replica-store.js'
import type { Member, MemberStatus, PeerMethod, PeerTarget } from '../../protocol/cluster.js'
import { fail, type Result } from '../../protocol/errors.js'
import type { StoreMsg } from '../../protocol/messages.js'
import { fakeContext, type FakeContext } from '../support/fake-context.js'
import {
  PULL_GAP_MS,
  SYNC_INTERVAL_MS,
  WATCH_MS,
} from '../../actors/replica-store/replication/catalog-sync.js'

type Distribute<T> = T extends unknown ? Omit<T, 'requestId' | 'deadlineMs'> : never
type Body = Distribute<StoreMsg>

const IDS = ['n1', 'n2', 'n3'] as const
type Id = (typeof IDS)[number]

interface Node {
  id: Id
  ctx: FakeContext
  state: StoreState
  /** What iam of this node was told. */
  iam: { kind: string; names?: string[] }[]
}

class Cluster {
  readonly nodes = new Map<Id, Node>()
  readonly status = new Map<Id, MemberStatus>(IDS.map((id) => [id, 'Alive']))
  /** Nodes whose peer calls fail (killed or cut off), whatever gossip says of them. */
  readonly down = new Set<Id>()
  /** Nodes cut off whose gossip finds every other node Dead. */
  readonly alone = new Set<Id>()
  /** Catalog pages each node asked a peer for. */
  readonly pulls = new Map<Id, number>()
  /** Pool and free bytes of each node, as gossip tells them. */
  readonly pool = new Map<Id, string>()
  readonly free = new Map<Id, number>()

  member(id: Id): Member {
    return {
      id,
      kind: 'node',
      pool: this.pool.get(id) ?? 'p1',
      poolHash: 'h',
      httpAddr: `${id}:9000`,
      grpcAddr: `${id}:9100`,
      incarnation: 1,
      status: this.status.get(id) ?? 'Dead',
      phase: 'serving',
      version: '0',
      freeBytes: this.free.get(id) ?? 1,
      wallMs: 0,
    }
  }

  async start(id: Id): Promise<Node> {
    const ctx = fakeContext({
      config: { SVC_MODE: 'cluster', SVC_NODE_ID: id },
      seed: IDS.indexOf(id),
    })
    const node: Node = { id, ctx, state: undefined as never, iam: [] }
    ctx.onCall((to, msg) => {
      if (to === 'gossiper' && msg.kind === 'membership.view') {
        const members = IDS.map((other) => this.member(other)).map((member) =>
          this.alone.has(id) && member.id !== id ? { ...member, status: 'Dead' as const } : member,
        )
        return { ok: true, value: { self: this.member(id), members } }
      }
      if (to === 'gossiper') return { ok: true, value: null }
      if (to === 'iam') {
        node.iam.push(msg as { kind: string; names?: string[] })
        return { ok: true, value: null }
      }
      return fail('unavailable', `${to} is not wired`)
    })
    ctx.onPeerCall((target, method, body) => this.deliver(id, target, method, body))
    node.state = await replicaStore.init(ctx)
    this.nodes.set(id, node)
    return node
  }

  private async deliver(
    from: Id,
    target: PeerTarget,
    method: PeerMethod,
    body: object,
  ): Promise<Result<unknown>> {
    const to = this.nodes.get(target.id as Id)
    if (method === 'Catalog.Snapshot') this.pulls.set(from, (this.pulls.get(from) ?? 0) + 1)
    if (to === undefined || this.down.has(to.id) || this.down.has(from)) {
      return fail('unavailable', `${target.id} unreachable`)
    }
    const msg = { kind: 'peer.request' as const, method, from, body, requestId: 'p', deadlineMs: 0 }
    return handle(replicaStore, to.state, { ...msg, deadlineMs: to.ctx.now() + 2_000 }, to.ctx)
  }

  send<T>(id: Id, body: Body): Promise<Result<T>> {
    const node = this.nodes.get(id) as Node
    const msg = { ...body, requestId: 'r', deadlineMs: node.ctx.now() + 30_000 } as StoreMsg
    return handle(replicaStore, node.state, msg, node.ctx) as Promise<Result<T>>
  }

  async has(id: Id, bucket: string): Promise<boolean> {
    return (await this.send(id, { kind: 'bucket.head', bucket })).ok
  }
}

async function threeNodes(): Promise<Cluster> {
  const cluster = new Cluster()
  for (const id of IDS) await cluster.start(id)
  return cluster
}

test('a bucket and its settings made on one node are on every node when it answers', async () => {
  const cluster = await threeNodes()
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'photos', owner: 'u1' })).ok)
  for (const id of IDS) assert.ok(await cluster.has(id, 'photos'), id)
  const put = await cluster.send('n2', {
    kind: 'bucket.versioning.put',
    bucket: 'photos',
    status: 'Enabled',
  })
  assert.ok(put.ok)
  const got = await cluster.send<{ status: string }>('n3', {
    kind: 'bucket.versioning.get',
    bucket: 'photos',
  })
  assert.equal(got, { ok: true, value: { status: 'Enabled' } })
  // The owner travels with the record: n3 answers as S3 does for one's own bucket.
  const again = await cluster.send('n3', { kind: 'bucket.create', bucket: 'photos', owner: 'u1' })
  assert.is(again.ok ? 'created' : again.code, 'bucket_owned_by_you')
  assert.ok((await cluster.send('n3', { kind: 'bucket.delete', bucket: 'photos' })).ok)
  for (const id of IDS) assert.not.ok(await cluster.has(id, 'photos'), id)
})

test('a new bucket goes to the pool with the most room, on every node', async () => {
  const cluster = await threeNodes()
  cluster.pool.set('n3', 'p2')
  cluster.free.set('n1', 100).set('n2', 100).set('n3', 1_000)
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'big', owner: 'u' })).ok)
  cluster.free.set('n3', 10)
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'small', owner: 'u' })).ok)
  for (const node of cluster.nodes.values()) {
    const poolOf = (bucket: string) => {
      const stored = node.ctx.kv.get(`B\0${bucket}`)
      return (JSON.parse(Buffer.from(stored ?? []).toString()) as { pool?: string }).pool
    }
    assert.equal([poolOf('big'), poolOf('small')], ['p2', 'p1'], node.id)
  }
})

test('two racing creations of one name on two nodes: exactly one succeeds', async () => {
  const cluster = await threeNodes()
  for (let round = 0; round < 5; round++) {
    const bucket = `race-${round}`
    const [first, second] = round % 2 === 0 ? (['n1', 'n2'] as const) : (['n3', 'n1'] as const)
    const answers = await Promise.all([
      cluster.send(first, { kind: 'bucket.create', bucket, owner: 'u1' }),
      cluster.send(second, { kind: 'bucket.create', bucket, owner: 'u2' }),
    ])
    const created = answers.filter((answer) => answer.ok)
    assert.is(created.length, 1, `${bucket}: ${JSON.stringify(answers)}`)
    const lost = answers.find((answer) => !answer.ok)
    assert.ok(lost !== undefined && !lost.ok && lost.code === 'bucket_exists', JSON.stringify(lost))
    for (const id of IDS) assert.ok(await cluster.has(id, bucket), `${bucket} on ${id}`)
  }
})

test('an Alive node that does not take a change fails it; a Dead one does not count', async () => {
  const cluster = await threeNodes()
  cluster.down.add('n3')
  const refused = await cluster.send('n1', { kind: 'bucket.create', bucket: 'b1', owner: 'u' })
  assert.is(refused.ok ? 'ok' : refused.code, 'unavailable')
  cluster.status.set('n3', 'Dead')
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'b2', owner: 'u' })).ok)
  assert.ok(await cluster.has('n2', 'b2'))
  assert.not.ok(await cluster.has('n3', 'b2'))
  // Without a majority nothing is created: n2 and n3 both down.
  cluster.down.add('n2')
  cluster.status.set('n2', 'Dead')
  const alone = await cluster.send('n1', { kind: 'bucket.create', bucket: 'b3', owner: 'u' })
  assert.is(alone.ok ? 'ok' : alone.code, 'unavailable')
  assert.not.ok(await cluster.has('n1', 'b3'), 'a creation without a majority left no bucket')
})

test('a node that missed changes catches up by pulling; a deletion is never undone', async () => {
  const cluster = await threeNodes()
  const n3 = cluster.nodes.get('n3') as Node
  // Its first pull finds no change and ends its joining: iam may create the root user.
  n3.ctx.advance(0)
  await idle(cluster)
  assert.ok(n3.iam.some((told) => told.kind === 'iam.catalog-synced'))
  cluster.down.add('n3')
  cluster.status.set('n3', 'Dead')
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'kept', owner: 'u' })).ok)
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'gone', owner: 'u' })).ok)
  const user = new Uint8Array(Buffer.from('{"user":1}'))
  assert.ok((await cluster.send('n2', { kind: 'system.put', name: 'iam.user.x', value: user })).ok)
  assert.ok((await cluster.send('n2', { kind: 'bucket.delete', bucket: 'gone' })).ok)
  assert.not.ok(await cluster.has('n3', 'kept'))
  cluster.down.delete('n3')
  cluster.status.set('n3', 'Alive')
  n3.ctx.advance(30_000)
  await idle(cluster)
  assert.ok(await cluster.has('n3', 'kept'), 'pulled')
  assert.not.ok(await cluster.has('n3', 'gone'), 'its deletion pulled too')
  const record = await cluster.send<Uint8Array | null>('n3', {
    kind: 'system.get',
    name: 'iam.user.x',
  })
  assert.ok(record.ok && record.value !== null)
  assert.ok(
    n3.iam.some((told) => told.kind === 'iam.records-changed'),
    'iam told',
  )
  // An older copy of the deleted bucket (n1's record of its creation) changes nothing.
  const stale = await cluster.send<{ applied: number }>('n1', {
    kind: 'peer.request',
    method: 'Catalog.Snapshot',
    from: 'n2',
    body: { after: null, limit: 500 },
  })
  assert.ok(stale.ok)
  const old = {
    key: 'B\0gone',
    value: Buffer.from('{"createdMs":1,"objects":0,"bytes":0}').toString('base64'),
    stamp: '000000000001000000000000',
  }
  const applied = await cluster.send<{ applied: number }>('n3', {
    kind: 'peer.request',
    method: 'Catalog.Apply',
    from: 'n1',
    body: { records: [old] },
  })
  assert.equal(applied, { ok: true, value: { applied: 0 } })
  assert.not.ok(await cluster.has('n3', 'gone'))
})

test('a snapshot after a key outside the catalog is refused, the store unharmed', async () => {
  const cluster = await threeNodes()
  // Its schema takes any key: which keys are the catalog's is the store's own layout.
  const body = { after: 'O\0bucket\0key', limit: 10 }
  const page = { kind: 'peer.request', method: 'Catalog.Snapshot', from: 'n2', body } as const
  const refused = await cluster.send('n1', page)
  assert.is(refused.ok ? 'ok' : refused.code, 'invalid_argument')
  const whole = await cluster.send('n1', { ...page, body: { after: null, limit: 10 } })
  assert.ok(whole.ok)
})

/** Lets every pending promise and landing commit run. */
async function idle(cluster: Cluster): Promise<void> {
  for (let turn = 0; turn < 20; turn++) {
    await new Promise((resolve) => setImmediate(resolve))
    for (const node of cluster.nodes.values()) node.ctx.advance(0)
  }
}

test('a node back from a partition, or that sees a peer come back, pulls at once', async () => {
  const cluster = await threeNodes()
  const n3 = cluster.nodes.get('n3') as Node
  await settle(cluster, 0)
  assert.ok((await cluster.send('n1', { kind: 'bucket.create', bucket: 'b', owner: 'u' })).ok)
  // n3 is cut off: the others find it Dead, it finds them Dead, and misses a change.
  cluster.down.add('n3')
  cluster.alone.add('n3')
  cluster.status.set('n3', 'Dead')
  await settle(cluster, 2 * WATCH_MS)
  const suspended = { kind: 'bucket.versioning.put', bucket: 'b', status: 'Suspended' } as const
  assert.ok((await cluster.send('n1', suspended)).ok)
  assert.is(await versioningOn(cluster, 'n3'), null)
  // The partition heals: n3 pulls within a gap, not a sync interval, after its last pull.
  cluster.down.delete('n3')
  cluster.alone.delete('n3')
  cluster.status.set('n3', 'Alive')
  await settle(cluster, PULL_GAP_MS + WATCH_MS)
  assert.is(await versioningOn(cluster, 'n3'), 'Suspended')
  // A peer away and back (n1 restarted) brings a pull too, on every node that saw it go.
  cluster.status.set('n1', 'Dead')
  cluster.down.add('n1')
  await settle(cluster, 2 * WATCH_MS)
  cluster.status.set('n1', 'Alive')
  cluster.down.delete('n1')
  const before = cluster.pulls.get('n3') ?? 0
  await settle(cluster, PULL_GAP_MS + WATCH_MS)
  assert.ok((cluster.pulls.get('n3') ?? 0) > before, 'a pull when n1 came back')
  // All of it well within a sync interval of the first pull.
  assert.ok(4 * WATCH_MS + 2 * (PULL_GAP_MS + WATCH_MS) < SYNC_INTERVAL_MS)
})

/** Moves every node's clock by `ms`, a WATCH_MS at a time, letting each step's work run. */
async function settle(cluster: Cluster, ms: number): Promise<void> {
  for (let moved = 0; moved <= ms; moved += WATCH_MS) {
    for (const node of cluster.nodes.values()) node.ctx.advance(moved === 0 ? 0 : WATCH_MS)
    await idle(cluster)
  }
}

async function versioningOn(cluster: Cluster, id: Id): Promise<string | null> {
  const answer = await cluster.send<{ status: string | null }>(id, {
    kind: 'bucket.versioning.get',
    bucket: 'b',
  })
  assert.ok(answer.ok)
  return answer.value.status
}

test('object replica calls answer invalid_request until objects replicate', async () => {
  const cluster = await threeNodes()
  for (const method of ['Replica.Write', 'Replica.Read'] as const) {
    const answer = await cluster.send('n1', { kind: 'peer.request', method, from: 'n2', body: {} })
    assert.is(answer.ok ? 'ok' : answer.code, 'invalid_request', method)
  }
})

test.run()
