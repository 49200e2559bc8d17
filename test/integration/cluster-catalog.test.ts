/** Goal: the catalog of a cluster is one. A bucket created through one node exists on every node
 * and through the gateway when the call answers; of two racing creations of one name by two owners
 * on two nodes exactly one succeeds; a user created on n1 signs S3 requests on n3 at once, and once
 * deactivated through n2 is refused on n1 right after the admin call answers; the root user exists
 * once; failed logins on n1 throttle the user on n2 and n3 at once, and through the gateway the
 * first 429 comes after as many failures as on one node; clients behind the gateway are throttled
 * per their own address, which no client can forge, through the gateway or straight to a node. A
 * node with another cluster secret never joins, and a gRPC call without the cluster's signature
 * gets no answer but a refusal. A cluster setting a node cannot run with exits 2 with one line.
 * A bucket's settings (CORS rules, tags) reach every node, and a bucket deleted through one node
 * and created again through another has none on any.
 * Method: three real nodes and a gateway (test/support/cluster.ts), the AWS SDK and the admin API;
 * a raw @grpc/grpc-js client for the unsigned call. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import * as grpc from '@grpc/grpc-js'
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  GetBucketCorsCommand,
  GetBucketTaggingCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  PutBucketCorsCommand,
  PutBucketTaggingCommand,
} from '@aws-sdk/client-s3'
import { request as httpRequest } from 'node:http'
import { FAILURES_PER_ADDRESS_MAX, FAILURES_PER_USERNAME_MAX } from '../../actors/iam/throttle.js'
import {
  CLIENT_ADDRESS_HEADER,
  CLOCK_WINDOW_MS,
  signedClientAddress,
} from '../../http/client-address.js'
import { clientAddressKey } from '../../runtime/cluster/cluster-key.js'
import { admin, createUser, issueKeys, login } from '../support/admin-client.js'
import { ROOT_PASSWORD, ROOT_USERNAME, startCluster, type TestCluster } from '../support/cluster.js'
import { failure } from '../support/s3-failure.js'
import { freePort, nodeEnv, runUntilExit, startServer, type TestServer } from '../support/server.js'
import { signedRequest } from '../support/signed-request.js'
import { sleep } from '../support/wait.js'

let cluster: TestCluster

test.before(async () => {
  cluster = await startCluster({ nodes: 3, gateways: 1 })
})

test.after(async () => {
  // Undefined when the cluster did not start: the before hook's error says why.
  await (cluster as TestCluster | undefined)?.destroy()
})

test('a bucket created through one node is on every node and the gateway', async () => {
  await cluster
    .server('n1')
    .client()
    .send(new CreateBucketCommand({ Bucket: 'shared' }))
  for (const id of ['n1', 'n2', 'n3', 'g1']) {
    await cluster
      .server(id)
      .client()
      .send(new HeadBucketCommand({ Bucket: 'shared' }))
  }
  const listed = await cluster.server('g1').client().send(new ListBucketsCommand({}))
  assert.ok(listed.Buckets?.some((bucket) => bucket.Name === 'shared'))
})

test("a bucket's settings reach every node, and go on every node with their bucket", async () => {
  const client = (id: string) => cluster.server(id).client()
  const rules = [{ AllowedOrigins: ['https://example.com'], AllowedMethods: ['GET' as const] }]
  const tags = [{ Key: 'team', Value: 'storage' }]
  await client('n1').send(new CreateBucketCommand({ Bucket: 'configured' }))
  await client('n1').send(
    new PutBucketCorsCommand({ Bucket: 'configured', CORSConfiguration: { CORSRules: rules } }),
  )
  await client('n1').send(
    new PutBucketTaggingCommand({ Bucket: 'configured', Tagging: { TagSet: tags } }),
  )
  for (const id of ['n2', 'n3']) {
    const cors = await client(id).send(new GetBucketCorsCommand({ Bucket: 'configured' }))
    assert.equal(cors.CORSRules?.[0]?.AllowedOrigins, rules[0]?.AllowedOrigins, id)
    const got = await client(id).send(new GetBucketTaggingCommand({ Bucket: 'configured' }))
    assert.equal(got.TagSet, tags, id)
  }
  await client('n2').send(new DeleteBucketCommand({ Bucket: 'configured' }))
  await client('n3').send(new CreateBucketCommand({ Bucket: 'configured' }))
  for (const id of ['n1', 'n2', 'n3']) {
    const noRules = await failure(() =>
      client(id).send(new GetBucketCorsCommand({ Bucket: 'configured' })),
    )
    assert.equal(noRules, { name: 'NoSuchCORSConfiguration', status: 404 }, id)
    const noTags = await failure(() =>
      client(id).send(new GetBucketTaggingCommand({ Bucket: 'configured' })),
    )
    assert.equal(noTags, { name: 'NoSuchTagSet', status: 404 }, id)
  }
})

test('two racing creations of one name by two owners: one succeeds, one gets 409', async () => {
  // Two owners: one owner's racing creations both answer 200 in us-east-1, as Amazon S3's do.
  const token = await login(cluster.server('n1'), ROOT_USERNAME, ROOT_PASSWORD)
  const owners: { accessKeyId: string; secretAccessKey: string }[] = []
  for (const name of ['racer_a', 'racer_b']) {
    const keys = await issueKeys(
      cluster.server('n1'),
      token,
      await createUser(cluster.server('n1'), token, name, 'Writer'),
    )
    owners.push({ accessKeyId: keys.access_key, secretAccessKey: keys.secret_key })
  }
  for (let round = 0; round < 3; round++) {
    const Bucket = `race-${round}`
    const create = (id: string, owner: number) =>
      cluster
        .server(id)
        .client(owners[owner])
        .send(new CreateBucketCommand({ Bucket }))
        .then(
          () => 200,
          (error: unknown) =>
            (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode,
        )
    const statuses = await Promise.all([create('n1', 0), create('n2', 1)])
    assert.equal([...statuses].sort(), [200, 409], `${Bucket}: ${statuses.join(', ')}`)
    const again = await Promise.all([create('n3', 0), create('n2', 0)])
    const owned = statuses[0] === 200 ? [200, 200] : [409, 409]
    assert.equal(again, owned, `${Bucket} again by the first owner: ${again.join(', ')}`)
  }
})

test('one root; a user made on n1 signs on n3, refused on n1 once n2 deactivates it', async () => {
  const token = await login(cluster.server('n1'), ROOT_USERNAME, ROOT_PASSWORD)
  const users = await admin(cluster.server('n3'), 'GET', '/users', token)
  assert.is(users.status, 200, users.text)
  const roots = (users.json as { username: string }[]).filter((u) => u.username === ROOT_USERNAME)
  assert.is(roots.length, 1, users.text)
  const userId = await createUser(cluster.server('n1'), token, 'alice', 'Writer')
  const keys = await issueKeys(cluster.server('n1'), token, userId)
  const credentials = { accessKeyId: keys.access_key, secretAccessKey: keys.secret_key }
  // At once on n3: no wait between the admin call's answer and the signed request.
  const listed = await cluster.server('n3').client(credentials).send(new ListBucketsCommand({}))
  assert.ok(Array.isArray(listed.Buckets ?? []))
  const tokenOnN2 = await login(cluster.server('n2'), ROOT_USERNAME, ROOT_PASSWORD)
  const deactivated = await admin(cluster.server('n2'), 'PUT', `/users/${userId}`, tokenOnN2, {
    is_active: false,
  })
  assert.is(deactivated.status, 200, deactivated.text)
  const refused = await failure(() =>
    cluster.server('n1').client(credentials).send(new ListBucketsCommand({})),
  )
  assert.is(refused.status, 403, JSON.stringify(refused))
})

test('failed logins count cluster-wide, and through the gateway as on one node', async () => {
  const token = await login(cluster.server('n1'), ROOT_USERNAME, ROOT_PASSWORD)
  await createUser(cluster.server('n1'), token, 'bob', 'Reader')
  const attempt = (id: string, username: string, password: string) =>
    admin(cluster.server(id), 'POST', '/login', undefined, { username, password })
  for (let failures = 1; failures <= FAILURES_PER_USERNAME_MAX; failures++) {
    const wrong = await attempt('n1', 'bob', 'not-the-password')
    assert.is(wrong.status, 401, wrong.text)
  }
  // At once on the other nodes, and before the password is checked: the right one is refused too.
  for (const id of ['n2', 'n3']) {
    const throttled = await attempt(id, 'bob', 'bob-password')
    assert.is(throttled.status, 429, `${id}: ${throttled.text}`)
    assert.ok(Number(throttled.headers.get('retry-after')) > 0, `${id}: no Retry-After`)
  }
  // The gateway spreads attempts over the nodes: the first 429 comes where one node gives it.
  const statuses: number[] = []
  for (let tries = 0; tries <= FAILURES_PER_USERNAME_MAX; tries++) {
    statuses.push((await attempt('g1', 'carol', 'not-the-password')).status)
  }
  assert.equal(statuses, [...Array<number>(FAILURES_PER_USERNAME_MAX).fill(401), 429])
})

/** POST /api/admin/login from the client address `from` (loopback has all of 127/8), with extra
 * headers; answers the status. */
function loginFrom(
  server: TestServer,
  from: string,
  username: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<number> {
  const body = JSON.stringify({ username, password })
  return new Promise<number>((resolve, reject) => {
    const sent = httpRequest(
      `${server.url}${LOGIN_PATH}`,
      {
        method: 'POST',
        localAddress: from,
        headers: { 'content-type': 'application/json', ...headers },
        timeout: 30_000,
      },
      (answer) => {
        answer.resume()
        answer.on('end', () => resolve(answer.statusCode ?? 0))
        answer.on('error', reject)
      },
    )
    sent.on('timeout', () => sent.destroy(new Error('login timed out')))
    sent.on('error', reject)
    sent.end(body)
  })
}

const LOGIN_PATH = '/api/admin/login'
/** Long enough to be checked: a password no account can have is refused without counting. */
const WRONG_PASSWORD = 'not-the-password'

/** The header a gateway of a cluster with `secret` would send for a login from 127.0.0.2. */
function vouchFor127002(secret: string, method = 'POST', atMs = Date.now()): string {
  const key = clientAddressKey({ SVC_CLUSTER_SECRET: secret })
  return signedClientAddress(key, method, LOGIN_PATH, '127.0.0.2', atMs)
}

test('clients behind one gateway are throttled apart, by the address it vouches for', async () => {
  const g1 = cluster.server('g1')
  // 127.0.0.2 through the gateway up to the per-address limit (a new username each time, so that
  // the per-username limit never applies), then throttled.
  for (let n = 0; n < FAILURES_PER_ADDRESS_MAX; n++) {
    const status = await loginFrom(g1, '127.0.0.2', `guess_${n}`, WRONG_PASSWORD)
    assert.is(status, 401, `failure ${n + 1} from 127.0.0.2`)
  }
  assert.is(await loginFrom(g1, '127.0.0.2', 'guess_last', WRONG_PASSWORD), 429)
  // Another client of the same gateway is not, on whichever nodes the gateway picks.
  for (let n = 0; n < 3; n++) {
    assert.is(await loginFrom(g1, '127.0.0.3', `other_${n}`, WRONG_PASSWORD), 401)
  }
  assert.is(await loginFrom(g1, '127.0.0.3', ROOT_USERNAME, ROOT_PASSWORD), 200)
  // A client's own copy of the header, even one signed as a gateway signs, is replaced.
  const claim = { [CLIENT_ADDRESS_HEADER]: vouchFor127002(cluster.secret) }
  const status = await loginFrom(g1, '127.0.0.3', 'other_x', WRONG_PASSWORD, claim)
  assert.is(status, 401, 'counted under the address the client named')
})

test('a client address forged straight to a node is ignored: the TCP peer counts', async () => {
  // 127.0.0.2 is throttled (the test before): a login counted under it answers 429.
  const valid = { [CLIENT_ADDRESS_HEADER]: vouchFor127002(cluster.secret) }
  const n2 = cluster.server('n2')
  const vouched = await loginFrom(n2, '127.0.0.6', 'vouched', WRONG_PASSWORD, valid)
  assert.is(vouched, 429, 'a header signed as a gateway signs it is taken')
  const forgeries: [string, () => string][] = [
    ['no HMAC', () => '127.0.0.2'],
    ['another key', () => vouchFor127002('another-secret-of-at-least-32-characters')],
    ['another request', () => vouchFor127002(cluster.secret, 'GET')],
    ['stale', () => vouchFor127002(cluster.secret, 'POST', Date.now() - 2 * CLOCK_WINDOW_MS)],
  ]
  // Counted under 127.0.0.4, the TCP peer, up to its limit, whatever address the header claims.
  for (let n = 0; n < FAILURES_PER_ADDRESS_MAX; n++) {
    const [why, forge] = forgeries[n % forgeries.length] ?? ['', () => '']
    const claim = { [CLIENT_ADDRESS_HEADER]: forge() }
    const status = await loginFrom(n2, '127.0.0.4', `forged_${n}`, WRONG_PASSWORD, claim)
    assert.is(status, 401, `${why}: counted under the address it claims`)
  }
  assert.is(await loginFrom(cluster.server('n3'), '127.0.0.4', 'forged_last', WRONG_PASSWORD), 429)
})

test('a node with another secret never joins; an unsigned gRPC call is refused', async () => {
  const n1 = cluster.nodes[0]
  assert.ok(n1 !== undefined)
  const grpcPort = await freePort()
  const intruder = await startServer({
    env: {
      SVC_MODE: 'cluster',
      SVC_CLUSTER_NAME: cluster.name,
      SVC_CLUSTER_SECRET: 'another-secret-of-at-least-32-characters',
      SVC_NODE_ID: 'n9',
      SVC_NODE_GRPC_ADDR: `127.0.0.1:${grpcPort}`,
      SVC_SEEDS: `127.0.0.1:${n1.grpcPort}`,
      SVC_POOL_NAME: 'p9',
      SVC_POOL_NODES: `n9:127.0.0.1:${grpcPort}`,
      SVC_REPLICATION_FACTOR: '1',
      SVC_WRITE_QUORUM: '1',
      SVC_READ_QUORUM: '1',
    },
  })
  try {
    // Several gossip rounds: long enough for a join that the cluster would have accepted.
    await sleep(5_000)
    const topology = await signedRequest(cluster.server('n1').url, {
      method: 'GET',
      path: '/admin/cluster/topology',
    })
    assert.is(topology.status, 200)
    assert.not.ok(topology.body.toString().includes('"n9"'), 'the intruder joined')
    const seen = await signedRequest(intruder.url, {
      method: 'GET',
      path: '/admin/cluster/topology',
    })
    assert.not.ok(/"id":"n1","status":"Alive"/.test(seen.body.toString()), 'n9 sees n1 alive')
  } finally {
    await intruder.kill()
    intruder.cleanup()
  }
  const code = await unsignedPing(`127.0.0.1:${n1.grpcPort}`)
  assert.is(code, grpc.status.UNAUTHENTICATED)
})

/** Calls Membership.Ping with no signature, as a stranger would. */
function unsignedPing(address: string): Promise<number> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure())
  return new Promise<number>((resolve) => {
    client.makeUnaryRequest(
      '/svc.cluster.Membership/Ping',
      (value: Buffer) => value,
      (bytes: Buffer) => bytes,
      Buffer.alloc(0),
      { deadline: Date.now() + 5_000 },
      (error) => {
        client.close()
        resolve(error?.code ?? grpc.status.OK)
      },
    )
  })
}

test('a cluster setting a node cannot run with exits 2 with one line naming it', async () => {
  const cases: [Record<string, string>, string][] = [
    [{ SVC_WRITE_QUORUM: '4' }, 'SVC_WRITE_QUORUM'],
    [{ SVC_POOL_NODES: 'other:127.0.0.1:1' }, 'SVC_POOL_NODES'],
    [{ SVC_GC_GRACE_DAYS: '1' }, 'SVC_GC_GRACE_DAYS'],
  ]
  for (const [change, variable] of cases) {
    const env = nodeEnv(`127.0.0.1:${await freePort()}`, '/nonexistent-data-dir', {
      SVC_MODE: 'cluster',
      SVC_CLUSTER_NAME: 'c',
      SVC_NODE_ID: 'n1',
      SVC_POOL_NAME: 'p1',
      SVC_POOL_NODES: 'n1:127.0.0.1:9101,n2:127.0.0.1:9102,n3:127.0.0.1:9103',
      ...change,
    })
    const run = await runUntilExit({ env, timeoutMs: 20_000 })
    assert.is(run.code, 2, `${variable}: ${run.stderr}`)
    const lines = run.stderr.trim().split('\n')
    assert.is(lines.length, 1, run.stderr)
    assert.match(lines[0] ?? '', variable)
  }
})

test.run()
