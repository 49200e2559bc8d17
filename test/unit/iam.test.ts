/** Goal: the iam actor's rules hold without threads: root user created once, admin disabled without
 * users, tokens expire on ctx's clock and follow the user's current state, unknown users and wrong
 * passwords fail alike, failures are throttled per username and per address (in a cluster, with
 * the failures the other nodes tell, and told to them), key changes are
 * announced to the ingress before the change returns, and S3 secrets are stored sealed. Method: the
 * actor on a fake context whose replica-store is a map of system records and whose ingress records
 * (or refuses) announcements. */
import { handle } from '../../protocol/actor.js'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { iam } from '../../actors/iam/iam.js'
import type { IamState } from '../../actors/iam/iam-state.js'
import { fail, ok, type Result } from '../../protocol/errors.js'
import type {
  IamMsg,
  IssuedCredentials,
  KeyLookup,
  LoginGrant,
  Principal,
  SystemRecord,
  UserView,
} from '../../protocol/messages.js'
import { fakeContext, type FakeContext } from '../support/fake-context.js'
import { admitPeerBody } from '../support/peer-boundary.js'

const CONFIG = {
  SVC_MASTER_KEY: 'ab'.repeat(32),
  SVC_JWT_SECRET: 'cd'.repeat(32),
  SVC_ACCESS_KEY_ID: 'BOOTSTRAPKEY',
  SVC_SECRET_ACCESS_KEY: 'bootstrap-secret',
  SVC_JWT_TTL_SECS: '60',
}

interface Harness {
  ctx: FakeContext
  records: Map<string, Uint8Array>
  announced: { accessKey: string; generation: number; instance: number }[]
  /** What the ingress answers to an announcement. */
  ingressAnswer: (instance: number) => Result<null>
  /** What the gossiper answers to membership.view (cluster mode). */
  view?: object
}

function harness(
  config: Record<string, string> = CONFIG,
  records = new Map(),
  ingressInstances = 1,
): Harness {
  const ctx = fakeContext({ self: 'iam', config, instances: { 'http-ingress': ingressInstances } })
  const h: Harness = { ctx, records, announced: [], ingressAnswer: () => ok(null) }
  ctx.onCall((to, msg, instance) => {
    const m = msg as unknown as Record<string, unknown>
    if (to === 'http-ingress') {
      const answer = h.ingressAnswer(instance)
      const accessKey = String(m['accessKey'])
      if (answer.ok) h.announced.push({ accessKey, generation: Number(m['generation']), instance })
      return answer
    }
    switch (msg.kind) {
      case 'membership.view':
        return h.view === undefined ? fail('unavailable', 'no gossiper') : ok(h.view)
      case 'system.get':
        return ok(records.get(String(m['name'])) ?? null)
      case 'system.put':
        records.set(String(m['name']), m['value'] as Uint8Array)
        return ok(null)
      case 'system.delete':
        records.delete(String(m['name']))
        return ok(null)
      case 'system.list': {
        const prefix = String(m['prefix'])
        const listed: SystemRecord[] = [...records.entries()]
          .filter(([name]) => name.startsWith(prefix))
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([name, value]) => ({ name, value }))
        return ok(listed)
      }
      default:
        return fail('internal', `unexpected ${msg.kind}`)
    }
  })
  return h
}

/** An IamMsg without the request fields, kept as a union of its kinds. */
type Body = DistributiveOmit<IamMsg>
type DistributiveOmit<T> = T extends unknown ? Omit<T, 'requestId' | 'deadlineMs'> : never

async function ask<T>(state: IamState, h: Harness, msg: Body): Promise<Result<T>> {
  const full = { ...msg, requestId: 'test', deadlineMs: h.ctx.now() + 30_000 } as IamMsg
  return (await handle(iam, state, full, h.ctx)) as Result<T>
}

function value<T>(result: Result<T>): T {
  if (!result.ok) throw new Error(`${result.code}: ${result.detail}`)
  return result.value
}

const ROOT = { ...CONFIG, SVC_ROOT_PASSWORD: 'root-pass' }

async function loginAs(state: IamState, h: Harness, username: string, password: string) {
  return ask<LoginGrant>(state, h, {
    kind: 'iam.login',
    username,
    password,
    clientAddress: '10.0.0.1',
  })
}

test('without users the admin API is disabled; the bootstrap key still works', async () => {
  const h = harness()
  const state = await iam.init(h.ctx)
  const denied = await loginAs(state, h, 'root', 'x')
  assert.is(denied.ok ? 'ok' : denied.code, 'admin_disabled')
  const token = await ask(state, h, { kind: 'iam.authorize', token: 'a.b.c' })
  assert.is(token.ok ? 'ok' : token.code, 'admin_disabled')
  const key = value(
    await ask<KeyLookup>(state, h, { kind: 'iam.lookup-key', accessKey: 'BOOTSTRAPKEY' }),
  )
  assert.equal(key.principal, { userId: 'bootstrap', role: 'SuperUser' })
})

test('root is created once; a later start keeps the stored user and password', async () => {
  const h = harness(ROOT)
  const state = await iam.init(h.ctx)
  assert.ok((await loginAs(state, h, 'root', 'root-pass')).ok)
  const restarted = harness({ ...ROOT, SVC_ROOT_PASSWORD: 'changed' }, h.records)
  const again = await iam.init(restarted.ctx)
  const users = value(await ask<UserView[]>(again, restarted, { kind: 'iam.user.list' }))
  assert.equal(
    users.map((user) => [user.username, user.role]),
    [['root', 'SuperUser']],
  )
  assert.ok((await loginAs(again, restarted, 'root', 'root-pass')).ok)
  const refused = await loginAs(again, restarted, 'root', 'changed')
  assert.is(refused.ok ? 'ok' : refused.code, 'invalid_credentials')
})

test('tokens expire on the clock and follow the user: inactive or deleted: 401', async () => {
  const h = harness(ROOT)
  const state = await iam.init(h.ctx)
  const grant = value(await loginAs(state, h, 'root', 'root-pass'))
  assert.is(grant.expiresAtMs, Math.floor(h.ctx.now() / 1000) * 1000 + 60_000)
  const who = value(await ask<Principal>(state, h, { kind: 'iam.authorize', token: grant.token }))
  assert.is(who.role, 'SuperUser')
  const tampered = grant.token.slice(0, -2) + (grant.token.endsWith('AA') ? 'BB' : 'AA')
  const bad = await ask(state, h, { kind: 'iam.authorize', token: tampered })
  assert.is(bad.ok ? 'ok' : bad.code, 'unauthorized')
  h.ctx.advance(59_000)
  assert.ok((await ask(state, h, { kind: 'iam.authorize', token: grant.token })).ok)
  h.ctx.advance(1_000)
  const expired = await ask(state, h, { kind: 'iam.authorize', token: grant.token })
  assert.is(expired.ok ? 'ok' : expired.code, 'unauthorized')

  const created = value(
    await ask<UserView>(state, h, {
      kind: 'iam.user.create',
      username: 'ops',
      password: 'ops-pass',
      role: 'SuperUser',
    }),
  )
  const opsToken = value(await loginAs(state, h, 'ops', 'ops-pass')).token
  await ask(state, h, { kind: 'iam.user.update', userId: created.id, role: 'Reader' })
  const demoted = value(await ask<Principal>(state, h, { kind: 'iam.authorize', token: opsToken }))
  assert.is(demoted.role, 'Reader')
  await ask(state, h, { kind: 'iam.user.update', userId: created.id, isActive: false })
  const off = await ask(state, h, { kind: 'iam.authorize', token: opsToken })
  assert.is(off.ok ? 'ok' : off.code, 'unauthorized')
  const offLogin = await loginAs(state, h, 'ops', 'ops-pass')
  assert.is(offLogin.ok ? 'ok' : offLogin.code, 'invalid_credentials')
  await ask(state, h, { kind: 'iam.user.update', userId: created.id, isActive: true })
  assert.ok((await ask(state, h, { kind: 'iam.authorize', token: opsToken })).ok)
  assert.ok((await ask(state, h, { kind: 'iam.user.delete', userId: created.id })).ok)
  const gone = await ask(state, h, { kind: 'iam.authorize', token: opsToken })
  assert.is(gone.ok ? 'ok' : gone.code, 'unauthorized')
})

test('unknown users and wrong passwords fail alike; failures are throttled', async () => {
  const h = harness(ROOT)
  const state = await iam.init(h.ctx)
  const unknown = await loginAs(state, h, 'nobody', 'x')
  const wrong = await loginAs(state, h, 'root', 'x')
  assert.equal(unknown, { ...wrong })
  assert.is(unknown.ok ? 'ok' : unknown.code, 'invalid_credentials')
  for (let i = 0; i < 4; i += 1) await loginAs(state, h, 'root', 'x')
  // Five failures for root: the sixth attempt is refused before the password is checked.
  const throttled = await loginAs(state, h, 'root', 'root-pass')
  assert.is(throttled.ok ? 'ok' : throttled.code, 'too_many_requests')
  assert.ok(!throttled.ok && throttled.retryAfterSecs !== undefined)
  assert.ok(!throttled.ok && (throttled.retryAfterSecs ?? 0) <= 300)
  h.ctx.advance(5 * 60_000)
  assert.ok((await loginAs(state, h, 'root', 'root-pass')).ok)
  // Per address: 20 failures under different names lock the address out, whatever the name.
  for (let i = 0; i < 20; i += 1) await loginAs(state, h, `guess_${i}`, 'x')
  const sprayed = await loginAs(state, h, 'root', 'root-pass')
  assert.is(sprayed.ok ? 'ok' : sprayed.code, 'too_many_requests')
  const elsewhere = await ask<LoginGrant>(state, h, {
    kind: 'iam.login',
    username: 'root',
    password: 'root-pass',
    clientAddress: '10.0.0.2',
  })
  assert.ok(elsewhere.ok)
})

test('cluster: failures are told to the live storage nodes, and theirs count here', async () => {
  const h = harness({ ...ROOT, SVC_MODE: 'cluster' })
  const state = await iam.init(h.ctx)
  assert.ok((await ask(state, h, { kind: 'iam.catalog-synced' })).ok)
  const member = (id: string, kind: string, status: string) => ({ id, kind, status, grpcAddr: id })
  const members = [
    member('n1', 'node', 'Alive'),
    member('n2', 'node', 'Alive'),
    member('n3', 'node', 'Dead'),
    member('n4', 'node', 'Suspect'),
    member('g1', 'gateway', 'Alive'),
  ]
  h.view = { self: members[0], members }
  const told: { to: string | null; body: object }[] = []
  h.ctx.onPeerCall((to, method, body) => {
    assert.is(method, 'Iam.LoginOutcome')
    told.push({ to: to.id, body })
    // n4 does not answer: the login answers all the same.
    return to.id === 'n4' ? fail('unavailable', 'n4 is unreachable') : ok(null)
  })
  const wrong = await loginAs(state, h, 'root', 'x')
  assert.is(wrong.ok ? 'ok' : wrong.code, 'invalid_credentials')
  // The live storage nodes but this one: not the dead one, not the gateway.
  assert.equal(told.map(({ to }) => to).sort(), ['n2', 'n4'])
  assert.equal(told[0]?.body, { username: 'root', address: '10.0.0.1', failed: true })
  // Four failures told by another node: with the one made here, root is throttled here.
  const failed = { username: 'root', address: '10.9.9.9', failed: true }
  for (let i = 0; i < 4; i += 1) assert.ok((await peerOutcome(state, h, failed)).ok)
  const throttled = await loginAs(state, h, 'root', 'root-pass')
  assert.is(throttled.ok ? 'ok' : throttled.code, 'too_many_requests')
  // A success elsewhere clears the username's count here.
  assert.ok((await peerOutcome(state, h, { ...failed, failed: false })).ok)
  told.length = 0
  assert.ok((await loginAs(state, h, 'root', 'root-pass')).ok)
  assert.equal(told, [], 'a success with no failures to clear is told to nobody')
  // A malformed outcome is refused by the transport's check (its schema), before iam.
  for (const malformed of [{}, { ...failed, username: 'a b' }, { ...failed, failed: 1 }, null]) {
    const refused = await peerOutcome(state, h, malformed)
    assert.is(refused.ok ? 'ok' : refused.code, 'invalid_argument')
  }
})

async function peerOutcome(state: IamState, h: Harness, body: unknown): Promise<Result<unknown>> {
  const admitted = admitPeerBody('Iam.LoginOutcome', body)
  if (!admitted.ok) return admitted
  const call = { kind: 'peer.request', method: 'Iam.LoginOutcome', from: 'n2' } as const
  return ask(state, h, { ...call, body: admitted.value })
}

/** A Writer named `username` (password `<username>-pass`) with a pair of S3 keys. */
async function writerWithKeys(
  state: IamState,
  h: Harness,
  username: string,
): Promise<{ user: UserView; keys: IssuedCredentials }> {
  const user = value(
    await ask<UserView>(state, h, {
      kind: 'iam.user.create',
      username,
      password: `${username}-pass`,
      role: 'Writer',
    }),
  )
  const keys = value(
    await ask<IssuedCredentials>(state, h, { kind: 'iam.credentials.create', userId: user.id }),
  )
  return { user, keys }
}

test('key changes are announced to the ingress before returning; secrets sealed', async () => {
  const h = harness(ROOT)
  const state = await iam.init(h.ctx)
  const { user, keys: first } = await writerWithKeys(state, h, 'writer')
  assert.equal(h.announced, [])
  for (const bytes of h.records.values()) {
    assert.is(Buffer.from(bytes).indexOf(first.secretKey), -1, 'secret stored in clear')
    assert.is(Buffer.from(bytes).indexOf('writer-pass'), -1, 'password stored in clear')
  }
  const lookup = value(
    await ask<KeyLookup>(state, h, { kind: 'iam.lookup-key', accessKey: first.accessKey }),
  )
  assert.is(lookup.secretKey, first.secretKey)
  const second = value(
    await ask<IssuedCredentials>(state, h, { kind: 'iam.credentials.create', userId: user.id }),
  )
  assert.equal(
    h.announced.map((entry) => entry.accessKey),
    [first.accessKey],
  )
  assert.ok((h.announced[0]?.generation ?? 0) > lookup.generation, 'announcement newer than answer')
  const old = await ask(state, h, { kind: 'iam.lookup-key', accessKey: first.accessKey })
  assert.is(old.ok ? 'ok' : old.code, 'invalid_access_key')

  await ask(state, h, { kind: 'iam.user.update', userId: user.id, isActive: false })
  assert.is(h.announced.at(-1)?.accessKey, second.accessKey)
  const inactive = await ask(state, h, { kind: 'iam.lookup-key', accessKey: second.accessKey })
  assert.is(inactive.ok ? 'ok' : inactive.code, 'access_denied')
  await ask(state, h, { kind: 'iam.user.update', userId: user.id, isActive: true })
  const count = h.announced.length
  // A password change alone does not touch the key: nothing to announce.
  await ask(state, h, { kind: 'iam.user.update', userId: user.id, password: 'new-pass' })
  assert.is(h.announced.length, count)

  // An ingress that stays busy makes the change fail visibly instead of returning early.
  h.ingressAnswer = () => fail('busy', 'mailbox full')
  const pending = ask(state, h, { kind: 'iam.credentials.delete', userId: user.id })
  for (let i = 0; i < 10; i += 1) {
    await new Promise((resolve) => setImmediate(resolve))
    h.ctx.advance(20)
  }
  const refused = await pending
  assert.is(refused.ok ? 'ok' : refused.code, 'busy')
  // A dead ingress has no cache: the change is done.
  h.ingressAnswer = () => fail('unavailable', 'restarting')
  const third = await ask(state, h, { kind: 'iam.credentials.create', userId: user.id })
  assert.ok(third.ok)
  const none = await ask(state, h, { kind: 'iam.credentials.delete', userId: user.id })
  assert.ok(none.ok)
  const twice = await ask(state, h, { kind: 'iam.credentials.delete', userId: user.id })
  assert.is(twice.ok ? 'ok' : twice.code, 'no_s3_credentials')
})

test('a key change reaches every ingress instance; a busy one is asked again', async () => {
  const h = harness(ROOT, new Map(), 3)
  const state = await iam.init(h.ctx)
  const { user, keys } = await writerWithKeys(state, h, 'spread')
  // Instance 2's mailbox is full on the first try; instance 3 is restarting (no cache to clear).
  let busyOnce = true
  h.ingressAnswer = (instance) => {
    if (instance === 2 && busyOnce) {
      busyOnce = false
      return fail('busy', 'mailbox full')
    }
    return instance === 3 ? fail('unavailable', 'restarting') : ok(null)
  }
  const pending = ask(state, h, { kind: 'iam.credentials.delete', userId: user.id })
  for (let i = 0; i < 3; i += 1) {
    await new Promise((resolve) => setImmediate(resolve))
    h.ctx.advance(20)
  }
  const deleted = await pending
  assert.ok(deleted.ok, JSON.stringify(deleted))
  const reached = new Set(h.announced.map((entry) => `${entry.instance} ${entry.accessKey}`))
  assert.equal([...reached].sort(), [`1 ${keys.accessKey}`, `2 ${keys.accessKey}`])
})

test('user operations: duplicates, unknown ids, restart keeps users and keys', async () => {
  const h = harness(ROOT)
  const state = await iam.init(h.ctx)
  const create = {
    kind: 'iam.user.create',
    username: 'alice',
    password: 'pw',
    role: 'Reader',
  } as const
  const alice = value(await ask<UserView>(state, h, create))
  assert.equal(Object.keys(alice).sort(), [
    'accessKey',
    'createdMs',
    'id',
    'isActive',
    'role',
    'username',
  ])
  assert.match(alice.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  const duplicate = await ask(state, h, create)
  assert.is(duplicate.ok ? 'ok' : duplicate.code, 'user_exists')
  for (const kind of ['iam.user.get', 'iam.user.delete', 'iam.credentials.create'] as const) {
    const missing = await ask(state, h, { kind, userId: 'no-such-id' })
    assert.is(missing.ok ? 'ok' : missing.code, 'user_not_found', kind)
  }
  const keys = value(
    await ask<IssuedCredentials>(state, h, { kind: 'iam.credentials.create', userId: alice.id }),
  )
  const restarted = harness(ROOT, h.records)
  const again = await iam.init(restarted.ctx)
  const found = value(
    await ask<UserView>(again, restarted, { kind: 'iam.user.get', userId: alice.id }),
  )
  assert.equal(found, { ...alice, accessKey: keys.accessKey })
  const lookup = value(
    await ask<KeyLookup>(again, restarted, { kind: 'iam.lookup-key', accessKey: keys.accessKey }),
  )
  assert.equal([lookup.secretKey, lookup.principal.role], [keys.secretKey, 'Reader'])
})

test.run()
