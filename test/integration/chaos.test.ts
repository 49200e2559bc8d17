/** Goal: killing actors while the node serves loses no acknowledged write, requests to a dead actor
 * fail fast with a retryable 503, the supervisor brings the actor back without restarting the
 * others, and a crash loop stops the node with a non-zero exit. Method: a bounded PUT/GET load runs
 * while the chaos route kills replica-store, then http-ingress; afterwards every acknowledged
 * object must read back exactly and /metrics must show the restarts. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { randomBytes } from 'node:crypto'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { signedRequest } from '../support/signed-request.js'
import { startServer, waitHealthy, type TestServer } from '../support/server.js'
import { sleep } from '../support/wait.js'

const LOAD_MS = 8_000
const LOAD_OPS_MAX = 5_000

async function kill(server: TestServer, actor: string): Promise<number> {
  try {
    const response = await signedRequest(server.url, {
      method: 'POST',
      path: `/admin/chaos/kill/${actor}`,
    })
    return response.status
  } catch {
    return 0 // The ingress may go before its answer does.
  }
}

test('killing replica-store and http-ingress under load loses no acknowledged write', async () => {
  const server = await startServer({ env: { SVC_CHAOS: '1' } })
  const s3 = server.client()
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'chaos' }))
    const acked = new Map<string, Buffer>()
    const failures: { status: number | undefined; ms: number }[] = []
    const stopAt = Date.now() + LOAD_MS
    let ops = 0
    const worker = async (id: number): Promise<void> => {
      while (Date.now() < stopAt && ops < LOAD_OPS_MAX) {
        const key = `w${id}-${ops++}`
        const body = randomBytes(ops % 3 === 0 ? 200 * 1024 : 2048)
        const started = Date.now()
        try {
          await s3.send(new PutObjectCommand({ Bucket: 'chaos', Key: key, Body: body }))
          acked.set(key, body)
        } catch (error) {
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
            ?.httpStatusCode
          failures.push({ status, ms: Date.now() - started })
          await sleep(20)
        }
      }
    }
    const load = Promise.all(Array.from({ length: 8 }, (_, i) => worker(i)))
    await sleep(1_500)
    assert.is(await kill(server, 'replica-store'), 200)
    await sleep(2_500)
    await kill(server, 'http-ingress')
    await load
    await waitHealthy(server.url)
    assert.ok(acked.size > 50, `too little load got through: ${acked.size}`)
    // Requests caught by a dead store answer 503 (or lose their connection with the ingress),
    // fast: no request waited for a timeout.
    for (const failure of failures) {
      assert.ok(failure.status === undefined || failure.status === 503, `status ${failure.status}`)
      assert.ok(failure.ms < 10_000, `a failed request took ${failure.ms} ms`)
    }
    for (const [key, body] of acked) {
      const got = await s3.send(new GetObjectCommand({ Bucket: 'chaos', Key: key }))
      const bytes = Buffer.from(await got.Body!.transformToByteArray())
      assert.ok(bytes.equals(body), `acknowledged ${key} lost or changed`)
    }
    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    assert.match(metrics, /svc_actor_restarts_total\{actor="replica-store"\} 1\b/)
    assert.match(metrics, /svc_actor_restarts_total\{actor="http-ingress"\} 1\b/)
    assert.match(metrics, /svc_actor_restarts_total\{actor="iam"\} 0\b/)
    assert.match(metrics, /svc_actor_up\{actor="replica-store"\} 1\b/)
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

test('one actor crashing again and again stops the node with a non-zero exit', async () => {
  const server = await startServer({ env: { SVC_CHAOS: '1' } })
  try {
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', resolve))
    let kills = 0
    const deadline = Date.now() + 30_000
    while (server.child.exitCode === null && Date.now() < deadline && kills < 20) {
      if ((await kill(server, 'iam')) === 200) kills++
      await sleep(100)
    }
    const code = await Promise.race([exited, sleep(20_000).then(() => 'still running')])
    assert.is(code, 1)
    assert.ok(kills >= 5 && kills <= 7, `node stopped after ${kills} kills`)
  } finally {
    await server.kill()
    server.cleanup()
  }
})

test('killing iam while logins hash their passwords leaves the node serving', async () => {
  // argon2 in flight on a thread that is terminated aborts the whole process, so the hashing must
  // not run on iam's thread. Three kills stay under the crash-loop limit.
  const password = 'chaos-root-password'
  const server = await startServer({ env: { SVC_CHAOS: '1', SVC_ROOT_PASSWORD: password } })
  const login = async (): Promise<number> => {
    try {
      const response = await fetch(`${server.url}/api/admin/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'root', password }),
        signal: AbortSignal.timeout(30_000),
      })
      await response.arrayBuffer()
      return response.status
    } catch {
      return 0
    }
  }
  try {
    for (let round = 0; round < 3; round++) {
      const logins = Array.from({ length: 8 }, () => login())
      await sleep(20 + round * 15) // The first hashes are running now.
      assert.is(await kill(server, 'iam'), 200)
      const statuses = await Promise.all(logins)
      for (const status of statuses) assert.ok([200, 503].includes(status), `status ${status}`)
      await waitHealthy(server.url)
      const deadline = Date.now() + 10_000
      while ((await login()) !== 200 && Date.now() < deadline) await sleep(100)
    }
    assert.is(server.child.exitCode, null, server.output())
    assert.is(server.child.signalCode, null, server.output())
    assert.is(await login(), 200)
  } finally {
    await server.kill()
    server.cleanup()
  }
})

test('without SVC_CHAOS the chaos route does not exist', async () => {
  const server = await startServer()
  try {
    const response = await signedRequest(server.url, {
      method: 'POST',
      path: '/admin/chaos/kill/iam',
    })
    assert.is.not(response.status, 200)
    assert.ok((await fetch(`${server.url}/health`)).ok)
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test.run()
