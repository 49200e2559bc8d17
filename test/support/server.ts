/** @module Starts the real server as a child process for integration tests: a free loopback port,
 * a temp data directory, bootstrap keys, and waits (bounded) for /health. Every child is stopped by
 * its PID: `stop` sends SIGTERM and waits, `kill` sends SIGKILL; both are bounded in time. */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { S3Client } from '@aws-sdk/client-s3'
import { sleep } from './wait.js'

const here = dirname(fileURLToPath(import.meta.url))
export const MAIN_JS = join(here, '..', '..', 'runtime', 'main.js')
export const ACCESS_KEY = 'TESTACCESSKEY000001'
export const SECRET_KEY = 'testsecretkeytestsecretkeytestsecret0001'
const HEALTH_WAIT_MS = 30_000
const EXIT_WAIT_MS = 40_000

/** Ports are drawn from here up to the first port the kernel gives outgoing connections. */
const PORT_LOW = 10_000
const PORT_ATTEMPTS_MAX = 100

/** The first port of Linux's range for outgoing connections (the usual one where it cannot be
 * read). */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    )
    return Number.isInteger(low) && low > PORT_LOW + 1000 ? low : 32_768
  } catch {
    return 32_768
  }
}
const EPHEMERAL_LOW = ephemeralLow()

/** A port nothing listens on now, below the range of outgoing connections' ports: a port the
 * kernel chose (listening on 0) can be taken by a connection made before the server that is to
 * bind it has started, as a cluster's nodes connect to one another while the next one starts. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < PORT_ATTEMPTS_MAX; attempt++) {
    const port = PORT_LOW + randomInt(EPHEMERAL_LOW - PORT_LOW)
    if (await bindable(port, host)) return port
  }
  throw new Error(`no free port below ${EPHEMERAL_LOW} in ${PORT_ATTEMPTS_MAX} attempts`)
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, host, () => probe.close(() => resolve(true)))
  })
}

export interface TestServer {
  url: string
  port: number
  dataDir: string
  child: ChildProcess
  /** stdout and stderr as they came, interleaved. */
  output: () => string
  /** stdout alone: the structured log stream. */
  stdout: () => string
  /** stderr alone: what the node tells an operator outside the logs. */
  stderr: () => string
  client(options?: { accessKeyId?: string; secretAccessKey?: string }): S3Client
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>
  /** Removes the data directory (after stop/kill). */
  cleanup(): void
}

/** An SDK client of `url` with the test keys (or others), one attempt per request: a test sees
 * each answer as the server gave it. */
export function clientFor(
  url: string,
  keys: { accessKeyId?: string; secretAccessKey?: string } = {},
): S3Client {
  return new S3Client({
    endpoint: url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: {
      accessKeyId: keys.accessKeyId ?? ACCESS_KEY,
      secretAccessKey: keys.secretAccessKey ?? SECRET_KEY,
    },
    maxAttempts: 1,
  })
}

export interface StartOptions {
  env?: Record<string, string>
  dataDir?: string
  host?: string
  /** The HTTP port; a free one when not given. */
  port?: number
  protocol?: 'http' | 'https'
  /** Wait for /health; false for tests of start-up failures. */
  waitHealthy?: boolean
  /** How long to wait for /health (a cluster node waits for its peers too). */
  healthWaitMs?: number
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const host = options.host ?? '127.0.0.1'
  const port = options.port ?? (await freePort(host))
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-test-'))
  const child = spawn(process.execPath, [MAIN_JS], {
    env: nodeEnv(`${host}:${port}`, dataDir, options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (data: Buffer) => {
    output += data.toString()
    stdout += data.toString()
  })
  child.stderr?.on('data', (data: Buffer) => {
    output += data.toString()
    stderr += data.toString()
  })
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  )
  const url = `${options.protocol ?? 'http'}://${host}:${port}`
  const server: TestServer = {
    url,
    port,
    dataDir,
    child,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    client: (keys = {}) => clientFor(url, keys),
    async stop() {
      if (child.exitCode !== null) return child.exitCode
      child.kill('SIGTERM')
      return waitExit(child, exited)
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGKILL')
      await waitExit(child, exited)
    },
    cleanup: () => rmSync(dataDir, { recursive: true, force: true }),
  }
  if (options.waitHealthy !== false) {
    try {
      await waitHealthy(url, exited, options.healthWaitMs)
    } catch (error) {
      await server.kill()
      throw new Error(`${String(error)}\n--- server output ---\n${output}`)
    }
  }
  return server
}

/** The environment of a test node: its address and data directory, the test's keys, quiet logs. */
export function nodeEnv(
  address: string,
  dataDir: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    SVC_NODE_HTTP_ADDR: address,
    SVC_DATA_DIR: dataDir,
    SVC_ACCESS_KEY_ID: ACCESS_KEY,
    SVC_SECRET_ACCESS_KEY: SECRET_KEY,
    SVC_LOG_LEVEL: 'warn',
    // One ingress thread unless a test asks for more: the default follows the core count, and
    // actor names in metrics and chaos routes follow the ingress's thread count.
    SVC_HTTP_WORKERS: '1',
    // One store shard and one coordinator likewise: the S3 suites (test/support/s3-suite.ts,
    // test/run.ts) and store-shards ask for more.
    SVC_STORE_SHARDS: '1',
    SVC_COORDINATORS: '1',
    ...extra,
  }
}

export interface FinishedRun {
  /** The exit code, or null when the node had to be killed after the time limit. */
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a node that is expected to stop on its own (a start-up failure) and collects its output;
 * past `timeoutMs` it is killed by its PID and the run reports code null. */
export async function runUntilExit(options: {
  env: Record<string, string>
  timeoutMs: number
  uid?: number
  gid?: number
}): Promise<FinishedRun> {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid !== undefined && { uid: options.uid, gid: options.gid ?? options.uid }),
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()))
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()))
  let timer: NodeJS.Timeout | undefined
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', (exitCode) => resolve(exitCode))
    // A node that could not be spawned fails its case, not the whole suite.
    child.once('error', (error) => {
      stderr += `spawn failed: ${error.message}\n`
      resolve(null)
    })
    timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve(null)
    }, options.timeoutMs)
  })
  clearTimeout(timer)
  return { code, stdout, stderr }
}

async function waitExit(
  child: ChildProcess,
  exited: Promise<number | null>,
): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve(null)
    }, EXIT_WAIT_MS)
  })
  const code = await Promise.race([exited, limit])
  clearTimeout(timer)
  return code
}

export async function waitHealthy(
  url: string,
  exited?: Promise<unknown>,
  waitMs = HEALTH_WAIT_MS,
): Promise<void> {
  let gone = false
  void exited?.then(() => (gone = true))
  const deadline = Date.now() + waitMs
  // What the last probe saw, for a failure to say: no answer (not listening, or too slow), or the
  // status of a node that listens but does not serve.
  let last = 'no answer'
  while (Date.now() < deadline) {
    if (gone) throw new Error('server exited before it became healthy')
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) })
      if (response.status === 200) return
      last = `${response.status} ${await response.text()}`
    } catch (error) {
      last = `no answer (${error instanceof Error ? error.message : String(error)})`
    }
    await sleep(50)
  }
  throw new Error(`server at ${url} not healthy within ${waitMs} ms; the last probe: ${last}`)
}

/** What one /health probe saw: a status, or 'no answer' when the port refused the connection or
 * did not answer within HEALTH_PROBE_TIMEOUT_MS. */
export type HealthProbe = number | 'no answer'
const HEALTH_PROBE_TIMEOUT_MS = 1_000

export async function probeHealth(url: string): Promise<HealthProbe> {
  try {
    const response = await fetch(`${url}/health`, {
      signal: AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS),
    })
    await response.arrayBuffer()
    return response.status
  } catch {
    return 'no answer'
  }
}
