/** Goal: several ingress threads serve one port as one node. Each opens its own SO_REUSEPORT
 * socket and the kernel spreads new connections over them; a key change reaches every thread's key
 * cache before the admin call returns; a killed ingress thread takes no connections with it (its
 * socket closes with it, so the others serve every new connection) and comes back alone; with
 * port 0 every thread listens on the port the first one got. Method: a real server with
 * SVC_HTTP_WORKERS=2, raw signed requests each on a fresh connection (`connection: close`), so
 * that successive requests land on either thread. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { signedRequest, errorCode, type RawResponse } from '../support/signed-request.js'
import { startServer, waitHealthy, type TestServer } from '../support/server.js'
import { admin, createUser, issueKeys, login, type Credentials } from '../support/admin-client.js'
import { sample } from '../support/metrics-text.js'
import { pollUntil } from '../support/wait.js'

const ROOT_PASSWORD = 'root-password-for-tests'
/** Fresh connections per round: with two sockets, all of them landing on one has odds 2^-31. */
const CONNECTIONS = 32
const REQUEST_TIMEOUT_MS = 5_000
/** How long a restart may take to show in the metrics. */
const SCRAPE_WAIT_MS = 10_000

/** A signed ListBuckets on a connection of its own. */
function listBuckets(server: TestServer, keys?: Credentials): Promise<RawResponse> {
  return signedRequest(server.url, {
    method: 'GET',
    path: '/',
    headers: { connection: 'close' },
    ...(keys === undefined ? {} : { accessKey: keys.access_key, secretKey: keys.secret_key }),
  })
}

/** The outcome of each of CONNECTIONS fresh-connection requests, counted by outcome. */
async function round(run: () => Promise<string>): Promise<Record<string, number>> {
  const outcomes: Record<string, number> = {}
  for (let i = 0; i < CONNECTIONS; i++) {
    const outcome = await run()
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
  }
  return outcomes
}

async function listOutcome(server: TestServer, keys?: Credentials): Promise<string> {
  const response = await listBuckets(server, keys)
  return response.status === 200 ? 'ok' : (errorCode(response) ?? String(response.status))
}

async function metrics(server: TestServer): Promise<string> {
  const response = await fetch(`${server.url}/metrics`, {
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  })
  assert.is(response.status, 200)
  return response.text()
}

async function restarts(server: TestServer, actor: string): Promise<number | undefined> {
  return sample(await metrics(server), 'svc_actor_restarts_total', `actor="${actor}"`)
}

test('a key change reaches the key cache of every ingress thread', async () => {
  const server = await startServer({
    env: { SVC_HTTP_WORKERS: '2', SVC_ROOT_PASSWORD: ROOT_PASSWORD },
  })
  try {
    const token = await login(server, 'root', ROOT_PASSWORD)
    const userId = await createUser(server, token, 'spread', 'Writer')
    const keys = await issueKeys(server, token, userId)
    // Warms both threads' caches with the key: a thread that kept it would still let it in.
    assert.equal(await round(() => listOutcome(server, keys)), { ok: CONNECTIONS })
    const off = await admin(server, 'PUT', `/users/${userId}`, token, { is_active: false })
    assert.is(off.status, 200, off.text)
    assert.equal(await round(() => listOutcome(server, keys)), { AccessDenied: CONNECTIONS })

    const text = await metrics(server)
    for (const actor of ['http-ingress-1', 'http-ingress-2']) {
      assert.is(sample(text, 'svc_actor_up', `actor="${actor}"`), 1, actor)
      const forgot = sample(
        text,
        'svc_actor_messages_total',
        `kind="ingress.forget-key",actor="${actor}"`,
      )
      assert.ok((forgot ?? 0) >= 1, `${actor} took the key change: ${String(forgot)}`)
    }
    // The threads' HTTP counters add up to one figure per operation.
    const lists = sample(
      text,
      'svc_http_requests_total',
      'operation="ListBuckets",method="GET",status="200"',
    )
    assert.ok((lists ?? 0) >= CONNECTIONS, `ListBuckets counted ${String(lists)}`)
    // Both threads drain and close on SIGTERM: a clean stop.
    assert.is(await server.stop(), 0)
  } finally {
    await server.stop()
    server.cleanup()
  }
})

/** A request of the object API on a connection of its own. */
function objectRequest(server: TestServer, method: string, path: string, body?: Buffer) {
  return signedRequest(server.url, {
    method,
    path,
    headers: { connection: 'close' },
    ...(body === undefined ? {} : { body }),
  })
}

test("a read after a write's answer sees it on either thread, without the store", async () => {
  const server = await startServer({ env: { SVC_HTTP_WORKERS: '2' } })
  try {
    assert.is((await objectRequest(server, 'PUT', '/fresh')).status, 200)
    const storeGets = async (): Promise<number> =>
      sample(
        await metrics(server),
        'svc_actor_messages_total',
        'kind="object.get",actor="replica-store"',
      ) ?? 0
    const before = await storeGets()
    for (let round = 0; round < CONNECTIONS; round++) {
      const body = Buffer.from(`version ${round} `.repeat(round + 1))
      assert.is((await objectRequest(server, 'PUT', '/fresh/key', body)).status, 200)
      const got = await objectRequest(server, 'GET', '/fresh/key')
      assert.is(got.status, 200)
      assert.is(got.body.toString(), body.toString(), `round ${round}`)
      const head = await objectRequest(server, 'HEAD', '/fresh/key')
      assert.is(head.headers['content-length'], String(body.byteLength), `round ${round}`)
    }
    assert.is((await objectRequest(server, 'DELETE', '/fresh/key')).status, 204)
    const gone = await objectRequest(server, 'GET', '/fresh/key')
    assert.is(errorCode(gone), 'NoSuchKey')
    // Only the GET after the delete asked the store: the others were read on the threads.
    assert.is((await storeGets()) - before, 1)
  } finally {
    await server.kill()
    server.cleanup()
  }
})

test('killing one ingress thread leaves every new connection served', async () => {
  const server = await startServer({ env: { SVC_HTTP_WORKERS: '2', SVC_CHAOS: '1' } })
  try {
    assert.equal(await round(() => listOutcome(server)), { ok: CONNECTIONS })
    const killed = await signedRequest(server.url, {
      method: 'POST',
      path: '/admin/chaos/kill/http-ingress-1',
      headers: { connection: 'close' },
    }).catch(() => null) // The victim may be the thread that carries the answer.
    assert.ok(killed === null || killed.status === 200, `kill answered ${killed?.status}`)
    // Connections already queued on the victim's socket when it dies are reset, as with any
    // killed server; the ones after that must all reach the other thread, or the new one.
    const died = await pollUntil(
      async () => (await restarts(server, 'http-ingress-1')) === 1,
      SCRAPE_WAIT_MS,
      50,
    )
    assert.ok(died, 'the supervisor saw http-ingress-1 die')
    const served = await round(async () => {
      try {
        return await listOutcome(server)
      } catch (error) {
        return String((error as NodeJS.ErrnoException).code ?? error)
      }
    })
    assert.equal(served, { ok: CONNECTIONS })
    const back = await pollUntil(
      async () => sample(await metrics(server), 'svc_actor_up', 'actor="http-ingress-1"') === 1,
      SCRAPE_WAIT_MS,
      50,
    )
    assert.ok(back, 'http-ingress-1 is back')
    const text = await metrics(server)
    assert.is(sample(text, 'svc_actor_up', 'actor="http-ingress-1"'), 1)
    assert.is(sample(text, 'svc_actor_restarts_total', 'actor="http-ingress-1"'), 1)
    assert.is(sample(text, 'svc_actor_restarts_total', 'actor="http-ingress-2"'), 0)
    assert.equal(await round(() => listOutcome(server)), { ok: CONNECTIONS })
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('with port 0 every ingress thread listens on the port the first one got', async () => {
  const server = await startServer({
    env: { SVC_HTTP_WORKERS: '2', SVC_NODE_HTTP_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'info' },
    waitHealthy: false,
  })
  try {
    const ports = (): number[] =>
      server
        .output()
        .split('\n')
        .filter((line) => line.includes('"msg":"listening"'))
        .map((line) => (JSON.parse(line) as { port: number }).port)
    await pollUntil(() => ports().length >= 2, 20_000, 50)
    const [first, second] = ports()
    assert.ok(first !== undefined && first > 0, server.output())
    assert.is(second, first)
    const url = `http://127.0.0.1:${first}`
    await waitHealthy(url)
    const health = await fetch(`${url}/health`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    assert.is(health.status, 200)
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('SVC_HTTP_WORKERS out of range stops the node with a configuration error', async () => {
  for (const workers of ['0', '65', 'two']) {
    const server = await startServer({ env: { SVC_HTTP_WORKERS: workers }, waitHealthy: false })
    try {
      await pollUntil(() => server.child.exitCode !== null, 10_000, 50)
      assert.is(server.child.exitCode, 2, workers)
      assert.match(server.output(), /SVC_HTTP_WORKERS must be an integer from 1 to 64/)
    } finally {
      await server.kill()
      server.cleanup()
    }
  }
})

test.run()
