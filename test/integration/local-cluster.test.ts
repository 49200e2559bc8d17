/** Goal: `npm run cluster` (the compiled dev/cluster.js it runs) starts a working cluster of 3
 * storage nodes and a gateway, says where and with which keys, and leaves no process behind:
 * SIGINT stops every member and the script exits 0; a member that dies on its own is reported and
 * the rest are stopped, exit 1. Method: run the script with free loopback ports (CLUSTER_BASE_PORT)
 * and a temp data root, read the endpoints and keys it prints, ask the gateway for the topology
 * and create a bucket through it (SigV4 with the printed keys) that another node then has, then
 * signal and check by PID, bounded, that the script and every member exited. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dev', 'cluster.js')
/** Four nodes starting together on a loaded two-core machine. */
const READY_TIMEOUT_MS = 120_000
/** Idle members stop in seconds; the script's own bound before SIGKILL is 40 s. */
const EXIT_TIMEOUT_MS = 60_000
const PORTS_PER_CLUSTER = [0, 1, 2, 3, 100, 101, 102, 103]

interface Running {
  child: ChildProcess
  output: () => string
  exit: Promise<number | null>
  dataRoot: string
}

interface Printed {
  urls: Map<string, string>
  pids: Map<string, number>
  accessKey: string
  secretKey: string
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)))
  })
}

/** A base port whose 8 ports (HTTP and gRPC of 4 members) are all free now. */
async function freeBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000)
    const free = await Promise.all(PORTS_PER_CLUSTER.map((offset) => portFree(base + offset)))
    if (free.every(Boolean)) return base
  }
  throw new Error('no free range of ports found')
}

async function startScript(): Promise<Running> {
  const dataRoot = mkdtempSync(join(tmpdir(), 'svc-local-cluster-'))
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      PATH: process.env['PATH'] ?? '',
      CLUSTER_BASE_PORT: String(await freeBase()),
      CLUSTER_DATA_ROOT: dataRoot,
      SVC_LOG_LEVEL: 'warn',
      SVC_HTTP_WORKERS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr?.on('data', (data: Buffer) => (output += data.toString()))
  const exit = new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { child, output: () => output, exit, dataRoot }
}

async function waitPrinted(running: Running): Promise<Printed> {
  const ready = await pollUntil(
    () =>
      running.output().includes('Ctrl+C stops every member.') || running.child.exitCode !== null,
    READY_TIMEOUT_MS,
    100,
  )
  const text = running.output()
  assert.ok(ready && running.child.exitCode === null, `not ready:\n${text}`)
  const urls = new Map<string, string>()
  const pids = new Map<string, number>()
  for (const match of text.matchAll(/^ {2}(\w+) {2}(http:\/\/\S+) {2}[a-z ]+, pid (\d+)/gm)) {
    urls.set(match[1] ?? '', match[2] ?? '')
    pids.set(match[1] ?? '', Number(match[3]))
  }
  const keys = /access key (\S+) {2}secret key (\S+)/.exec(text)
  assert.ok(keys !== null, text)
  assert.equal([...pids.keys()].sort(), ['g1', 'n1', 'n2', 'n3'], text)
  return { urls, pids, accessKey: keys[1] ?? '', secretKey: keys[2] ?? '' }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function exitOf(running: Running): Promise<number | null> {
  const timeout = new Promise<'timeout'>((resolve) =>
    setTimeout(() => resolve('timeout'), EXIT_TIMEOUT_MS).unref(),
  )
  const code = await Promise.race([running.exit, timeout])
  assert.ok(code !== 'timeout', `the script did not exit:\n${running.output()}`)
  return code
}

async function assertAllGone(pids: Map<string, number>): Promise<void> {
  // Each member was the script's child and is reaped when it exits, so its PID is free.
  const gone = await pollUntil(() => [...pids.values()].every((pid) => !alive(pid)), 10_000, 50)
  const left = [...pids].filter(([, pid]) => alive(pid)).map(([id]) => id)
  assert.ok(gone, `still running: ${left.join(' ')}`)
}

/** Whatever a failed test left running is killed, by PID, and the data root removed. */
function cleanUp(running: Running, printed: Printed | null): void {
  for (const pid of printed?.pids.values() ?? []) if (alive(pid)) process.kill(pid, 'SIGKILL')
  if (running.child.exitCode === null) running.child.kill('SIGKILL')
  rmSync(running.dataRoot, { recursive: true, force: true })
}

test('the gateway serves the printed keys and topology; SIGINT stops every member', async () => {
  const running = await startScript()
  let printed: Printed | null = null
  try {
    printed = await waitPrinted(running)
    const keys = { accessKey: printed.accessKey, secretKey: printed.secretKey }
    const gateway = printed.urls.get('g1') ?? ''
    const answer = await signedRequest(gateway, {
      method: 'GET',
      path: '/admin/cluster/topology',
      ...keys,
    })
    assert.is(answer.status, 200, answer.body.toString())
    const topology = JSON.parse(answer.body.toString()) as {
      pools: { nodes: { id: string; status: string; http_addr: string }[] }[]
      gateways: { id: string }[]
    }
    const nodes = topology.pools.flatMap((pool) => pool.nodes)
    assert.equal(
      nodes.map((node) => [node.id, node.status, `http://${node.http_addr}`]).sort(),
      ['n1', 'n2', 'n3'].map((id) => [id, 'Alive', printed?.urls.get(id)]),
    )
    assert.equal(
      topology.gateways.map((member) => member.id),
      ['g1'],
    )
    const created = await signedRequest(gateway, {
      method: 'PUT',
      path: '/made-via-gateway',
      ...keys,
    })
    assert.is(created.status, 200, created.body.toString())
    const seen = await signedRequest(printed.urls.get('n3') ?? '', {
      method: 'HEAD',
      path: '/made-via-gateway',
      ...keys,
    })
    assert.is(seen.status, 200)
    running.child.kill('SIGINT')
    assert.is(await exitOf(running), 0, running.output())
    assert.match(running.output(), 'every member stopped')
    await assertAllGone(printed.pids)
  } finally {
    cleanUp(running, printed)
  }
})

test('a member that dies on its own is reported and the others are stopped', async () => {
  const running = await startScript()
  let printed: Printed | null = null
  try {
    printed = await waitPrinted(running)
    const n2 = printed.pids.get('n2')
    assert.ok(n2 !== undefined && n2 > 0)
    process.kill(n2, 'SIGKILL')
    assert.is(await exitOf(running), 1, running.output())
    assert.match(running.output(), 'n2 exited on its own (signal SIGKILL): stopping the others')
    await assertAllGone(printed.pids)
  } finally {
    cleanUp(running, printed)
  }
})

test.run()
