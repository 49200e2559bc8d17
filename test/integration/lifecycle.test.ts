/** Goal: the node's lifecycle as an operator sees it: HTTPS when certificates are configured,
 * generated bootstrap credentials kept (secret sealed) across restarts, /health refused or 503
 * until every actor is up, a graceful SIGTERM that answers 503 to new requests while an in-flight
 * upload finishes and exits 0. Method: real server child processes, /health polled from the spawn
 * on; a slow upload (Expect: 100-continue tells the test the server admitted it) holds the drain
 * open until the test has seen the 503s; a self-signed certificate made with openssl for TLS. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { request, type ClientRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { errorCode, signedRequest } from '../support/signed-request.js'
import { selfSignedCertificate } from '../support/tls-cert.js'
import { probeHealth, startServer, type HealthProbe } from '../support/server.js'
import { sleep } from '../support/wait.js'

/** Probes of /health: bounded in number and in total time; each probe is bounded by probeHealth. */
const PROBES_MAX = 1_000
const PROBING_MS = 60_000
const PROBE_INTERVAL_MS = 20

/** Probes /health until `done` holds for a probe, within PROBES_MAX and PROBING_MS; every probe is
 * returned, the last one first satisfied `done` unless the bounds ran out. */
async function probeUntil(
  url: string,
  done: (probe: HealthProbe) => boolean,
): Promise<HealthProbe[]> {
  const probes: HealthProbe[] = []
  const deadline = Date.now() + PROBING_MS
  while (probes.length < PROBES_MAX && Date.now() < deadline) {
    const probe = await probeHealth(url)
    probes.push(probe)
    if (done(probe)) break
    await sleep(PROBE_INTERVAL_MS)
  }
  return probes
}

/** Consecutive repeats folded, for messages: `no answer,503,200`. */
function runs(probes: HealthProbe[]): string {
  return probes.filter((probe, i) => i === 0 || probe !== probes[i - 1]).join(',')
}

interface SlowUpload {
  /** Resolves once the server has admitted the request (it answered 100 Continue) and the first
   * half of the body is written. */
  admitted: Promise<void>
  /** The response's status. */
  status: Promise<number>
  /** Sends the second half of the body. */
  finish(): void
}

/** A PUT to a presigned URL whose body comes in two halves, the second only on `finish()`. */
function slowUpload(url: URL, size: number): SlowUpload {
  let admit: () => void = () => undefined
  const admitted = new Promise<void>((resolve) => {
    admit = resolve
  })
  let req: ClientRequest | null = null
  const status = new Promise<number>((resolve, reject) => {
    req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: 'PUT',
        headers: { 'content-length': size, expect: '100-continue' },
      },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      },
    )
    req.on('error', reject)
    req.on('continue', () => {
      req?.write(Buffer.alloc(size / 2, 1), () => admit())
    })
    req.flushHeaders()
  })
  return { admitted, status, finish: () => req?.end(Buffer.alloc(size / 2, 2)) }
}

/** Bounds a wait of the test itself, so that a server that never answers fails the test. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)
  })
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer))
}

function grep(dir: string, needle: string): string[] {
  const found: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) found.push(...grep(path, needle))
    else if (readFileSync(path).includes(needle)) found.push(path)
  }
  return found
}

test('HTTPS with a self-signed certificate serves the S3 API, on two ingress threads', async () => {
  const { cert, key, cleanup } = selfSignedCertificate()
  process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0' // The test's own self-signed certificate.
  const server = await startServer({
    protocol: 'https',
    // Two threads: each serves TLS on its own shared socket, not only the one that listens alone.
    env: { SVC_TLS_CERT: cert, SVC_TLS_KEY: key, SVC_HTTP_WORKERS: '2' },
  })
  const s3 = server.client()
  try {
    assert.ok(server.url.startsWith('https://'))
    await s3.send(new CreateBucketCommand({ Bucket: 'secure' }))
    await s3.send(new PutObjectCommand({ Bucket: 'secure', Key: 'k', Body: 'over tls' }))
    const got = await s3.send(new GetObjectCommand({ Bucket: 'secure', Key: 'k' }))
    assert.is(await got.Body!.transformToString(), 'over tls')
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
    cleanup()
  }
})

test('generated credentials are printed once, kept sealed, and work after restart', async () => {
  const noKeys = { SVC_ACCESS_KEY_ID: '', SVC_SECRET_ACCESS_KEY: '', SVC_LOG_LEVEL: 'info' }
  const first = await startServer({ env: noKeys })
  const printed = /access key: (SVCAK[A-Z0-9]{20})\n\s+secret key: ([A-Za-z0-9]{40})/.exec(
    first.output(),
  )
  assert.ok(printed, 'the generated pair was not printed')
  const [, accessKeyId = '', secretAccessKey = ''] = printed
  assert.is(await first.stop(), 0)
  assert.equal(grep(first.dataDir, secretAccessKey), [], 'the secret is stored in clear')
  const second = await startServer({ env: noKeys, dataDir: first.dataDir })
  const s3 = second.client({ accessKeyId, secretAccessKey })
  try {
    await s3.send(new ListBucketsCommand({}))
    assert.not.match(second.output(), secretAccessKey)
    const keyFile = statSync(join(first.dataDir, 'master.key'))
    assert.is(keyFile.mode & 0o777, 0o600)
  } finally {
    s3.destroy()
    await second.stop()
    second.cleanup()
  }
})

test('/health is refused or 503 while the node starts, then 200 with S3 serving', async () => {
  const server = await startServer({ waitHealthy: false })
  const s3 = server.client()
  try {
    const probes = await probeUntil(server.url, (probe) => probe === 200)
    // The first 200 means every actor is up: S3 serves at once, no retry needed.
    assert.is(probes.at(-1), 200, `never healthy: ${runs(probes)}`)
    const buckets = await s3.send(new ListBucketsCommand({}))
    assert.is(buckets.$metadata.httpStatusCode, 200)
    // The ingress listens before the other actors start: 503 is seen, never a 200 before it, and
    // once the port answers it keeps answering.
    const firstAnswer = probes.findIndex((probe) => probe !== 'no answer')
    assert.is(probes[firstAnswer], 503, runs(probes))
    assert.ok(
      probes.slice(firstAnswer, -1).every((probe) => probe === 503),
      `between the first answer and 200: ${runs(probes)}`,
    )
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

test('SIGTERM: new requests answer 503 while an upload in flight finishes, exit 0', async () => {
  const server = await startServer()
  const s3: S3Client = server.client()
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'drain' }))
    const url = new URL(
      await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'drain', Key: 'slow' })),
    )
    const size = 4 * 1024 * 1024
    const upload = slowUpload(url, size)
    await within(upload.admitted, 30_000, 'upload admitted')
    server.child.kill('SIGTERM')
    // The upload waits for its second half, so the node drains until the test sends it.
    const probes = await probeUntil(server.url, (probe) => probe === 503)
    assert.is(probes.at(-1), 503, `health during the drain: ${runs(probes)}`)
    assert.ok(
      probes.every((probe) => probe === 200 || probe === 503),
      `the port closed during the drain: ${runs(probes)}`,
    )
    const refused = await signedRequest(server.url, { method: 'GET', path: '/' })
    assert.is(refused.status, 503)
    assert.is(errorCode(refused), 'ServiceUnavailable')
    assert.is(refused.headers['retry-after'], '1')
    assert.ok(refused.headers['x-amz-request-id'] !== undefined)
    upload.finish()
    assert.is(await within(upload.status, 30_000, 'upload answered'), 200)
    assert.is(await server.stop(), 0)
    const again = await startServer({ dataDir: server.dataDir })
    const s3Again = again.client()
    const got = await s3Again.send(new GetObjectCommand({ Bucket: 'drain', Key: 'slow' }))
    assert.is(got.ContentLength, size)
    s3Again.destroy()
    await again.stop()
  } finally {
    s3.destroy()
    await server.kill()
    server.cleanup()
  }
})

test.run()
