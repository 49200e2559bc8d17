/** Goal: the node as an operator meets it. `--help` lists every variable and `--version` the
 * version; `npm start` stopped with SIGTERM or SIGINT stops the node too; logs carry ISO-8601
 * times, level names and, per request, the client's address, user agent and bytes, while
 * generated credentials go to stderr once and never into the JSON stream; buckets named like the
 * node's own routes (`metrics`, `health`, `api`) work for every S3 operation; the data directory
 * and everything in it is owner-only whatever the umask; a clean start and a client's request the
 * node does not implement log no warning or error. Method: real node child processes (and npm's),
 * real S3 clients; the npm case finds the node's PID among npm's descendants in /proc and
 * stops everything by PID in the end. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { VARIABLES } from '../../runtime/usage.js'
import { freePort, MAIN_JS, nodeEnv, startServer, waitHealthy } from '../support/server.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'
import { skipCase } from '../support/skip.js'

const ROOT = join(MAIN_JS, '..', '..', '..')
const VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version
/** A graceful stop of an idle node takes well under a second; npm's own start builds first. */
const STOP_BOUND_MS = 30_000
const NPM_START_BOUND_MS = 120_000

/** --help and --version answer at once; a node that ignored them would serve until killed. */
const ANSWER_BOUND_MS = 20_000

test('--help lists every variable with the exit codes; --version the version', () => {
  const run = (arg: string) =>
    spawnSync(process.execPath, [MAIN_JS, arg], {
      encoding: 'utf8',
      timeout: ANSWER_BOUND_MS,
      killSignal: 'SIGKILL',
    })
  const help = run('--help')
  assert.is(help.status, 0, help.stderr)
  for (const variable of VARIABLES) assert.ok(help.stdout.includes(variable.name), variable.name)
  assert.match(help.stdout, /Exit codes/)
  const version = run('--version')
  assert.is(version.status, 0)
  assert.is(version.stdout.trim(), VERSION)
  const wrong = run('--no-such-flag')
  assert.is(wrong.status, 2)
  assert.match(wrong.stderr, /unknown arguments: --no-such-flag/)
})

/** PIDs of the processes below `pid` (through /proc's children lists), deepest last. */
function descendants(pid: number): number[] {
  const found: number[] = []
  const queue = [pid]
  while (queue.length > 0 && found.length < 100) {
    const parent = queue.shift() ?? 0
    let tasks: string[] = []
    try {
      tasks = readdirSync(`/proc/${parent}/task`)
    } catch {
      continue // It exited meanwhile.
    }
    for (const task of tasks) {
      let children = ''
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8')
      } catch {
        continue
      }
      for (const child of children.split(' ').filter(Boolean).map(Number)) {
        found.push(child)
        queue.push(child)
      }
    }
  }
  return found
}

/** Alive and not a zombie. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

/** Whether `pid` is node running the node's main.js (not the shell whose command names it). */
function isNodeMain(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return /(^|\/)node$/.test(argv[0] ?? '') && argv.some((arg) => arg.endsWith('runtime/main.js'))
  } catch {
    return false
  }
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`npm start stopped with ${signal} stops the node`, async () => {
    if (process.platform !== 'linux') {
      skipCase('finds the node among npm descendants through /proc (Linux)')
      return
    }
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-npm-'))
    const port = await freePort()
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env: { ...process.env, ...nodeEnv(`127.0.0.1:${port}`, dataDir) },
      stdio: 'ignore',
    })
    const npmPid = npm.pid ?? 0
    let nodePid = 0
    try {
      await pollUntil(() => {
        nodePid = descendants(npmPid).find(isNodeMain) ?? 0
        return nodePid !== 0
      }, NPM_START_BOUND_MS)
      assert.ok(nodePid !== 0, 'npm start did not start the node')
      await waitHealthy(`http://127.0.0.1:${port}`)
      process.kill(npmPid, signal)
      const stopped = await pollUntil(() => !isRunning(nodePid), STOP_BOUND_MS, 50)
      assert.ok(stopped, `the node (PID ${nodePid}) outlived npm`)
    } finally {
      for (const pid of [nodePid, npmPid]) if (pid !== 0 && isRunning(pid)) process.kill(pid, 9)
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
}

test('logs: ISO times, level names, the request line; credentials only on stderr', async () => {
  const server = await startServer({
    env: { SVC_ACCESS_KEY_ID: '', SVC_SECRET_ACCESS_KEY: '', SVC_LOG_LEVEL: 'info' },
  })
  try {
    const printed = /secret key: (\S+)/.exec(server.stderr())
    assert.ok(printed !== null, `no credentials on stderr: ${server.stderr()}`)
    const secret = printed[1] ?? ''
    assert.is(server.stderr().split(secret).length, 2, 'printed once')
    const answer = await fetch(`${server.url}/some-bucket`, {
      method: 'PUT',
      headers: { 'user-agent': 'operator-test/1.0' },
      body: 'x'.repeat(1000),
    })
    assert.is(answer.status, 403) // Unsigned: refused, and logged all the same.
    await answer.arrayBuffer()
    const line = await pollUntil(() => server.stdout().includes('operator-test/1.0'))
    assert.ok(line, server.stdout())
    const entries = server
      .stdout()
      .split('\n')
      .filter((text) => text.trim() !== '')
      .map((text) => JSON.parse(text) as Record<string, unknown>)
    for (const entry of entries) {
      assert.match(String(entry['time']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.ok(['info', 'warn', 'error'].includes(String(entry['level'])), String(entry['level']))
    }
    assert.not.ok(server.stdout().includes(secret), 'the secret in the log stream')
    const request = entries.find((entry) => entry['userAgent'] === 'operator-test/1.0') ?? {}
    assert.is(request['msg'], 's3 request')
    assert.is(request['client'], '127.0.0.1')
    assert.ok(Number(request['bytesIn']) >= 0, JSON.stringify(request))
    assert.ok(Number(request['bytesOut']) > 100, JSON.stringify(request))
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('a clean start and a 501 (a request not implemented) log no warning or error', async () => {
  // With a root password: a node without any user warns that its admin API is disabled.
  const env = { SVC_LOG_LEVEL: 'info', SVC_ROOT_PASSWORD: 'operator-test-root-password' }
  const server = await startServer({ env })
  try {
    assert.is((await signedRequest(server.url, { method: 'PUT', path: '/quiet' })).status, 200)
    const refused = await signedRequest(server.url, {
      method: 'GET',
      path: '/quiet',
      query: { website: '' },
    })
    assert.is(refused.status, 501)
    const logged = await pollUntil(() => server.stdout().includes('"status":501'))
    assert.ok(logged, server.stdout())
    const loud = server
      .stdout()
      .split('\n')
      .filter((text) => text.trim() !== '')
      .map((text) => JSON.parse(text) as Record<string, unknown>)
      .filter((entry) => entry['level'] === 'warn' || entry['level'] === 'error')
    assert.equal(loud, [], server.stdout())
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('buckets named metrics, health and api work for every S3 operation', async () => {
  const server = await startServer()
  const s3 = server.client()
  try {
    for (const bucket of ['metrics', 'health', 'api']) {
      await s3.send(new CreateBucketCommand({ Bucket: bucket }))
      // `api/stats` and `api/admin/...` are the node's own paths too.
      for (const key of ['stats', 'admin/users', 'x']) {
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${bucket}/${key}` }))
        const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
        assert.is(await got.Body?.transformToString(), `${bucket}/${key}`)
        const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
        assert.is(head.ContentLength, `${bucket}/${key}`.length)
        const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: key }))
        assert.is(await (await fetch(url)).text(), `${bucket}/${key}`)
      }
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }))
      assert.equal(
        listed.Contents?.map((object) => object.Key),
        ['admin/users', 'stats', 'x'],
      )
      const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, Delimiter: '/' }))
      assert.equal(
        v1.CommonPrefixes?.map((prefix) => prefix.Prefix),
        ['admin/'],
      )
      await s3.send(new HeadBucketCommand({ Bucket: bucket }))
      for (const key of ['stats', 'admin/users', 'x']) {
        await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))
      }
      await s3.send(new DeleteBucketCommand({ Bucket: bucket }))
    }
    // Unsigned, the node's own routes answer as before.
    assert.is(await (await fetch(`${server.url}/health`)).text(), 'ok')
    assert.match(await (await fetch(`${server.url}/metrics`)).text(), 'svc_actor_up')
    assert.match(await (await fetch(`${server.url}/api/stats`)).text(), 'buckets_count')
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

/** Every path under `dir` with its permission bits. */
function modes(dir: string): [string, number][] {
  const found: [string, number][] = [[dir, statSync(dir).mode & 0o777]]
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) found.push(...modes(path))
    else found.push([path, statSync(path).mode & 0o777])
  }
  return found
}

test('the data directory and its files are owner-only under umask 022', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'svc-modes-'))
  const dataDir = join(parent, 'data')
  const previous = process.umask(0o022)
  // Made by someone else's tools, open to all: the node closes it at start.
  mkdirSync(dataDir, { mode: 0o755 })
  let server: Awaited<ReturnType<typeof startServer>> | null = null
  try {
    server = await startServer({ dataDir })
    const s3 = server.client()
    await s3.send(new CreateBucketCommand({ Bucket: 'private' }))
    // Over 64 KiB: a blob file, not a value inside RocksDB.
    const body = Buffer.alloc(256 * 1024, 7)
    await s3.send(new PutObjectCommand({ Bucket: 'private', Key: 'big', Body: body }))
    s3.destroy()
    assert.is(await server.stop(), 0)
    const all = modes(dataDir)
    assert.ok(
      all.some(([path]) => path.includes('/blobs/') && statSync(path).isFile()),
      'a blob file',
    )
    assert.ok(
      all.some(([path]) => path.includes('/meta/')),
      'database files',
    )
    assert.is(all[0]?.[1], 0o700, 'the data directory')
    const open = all.filter(([, mode]) => (mode & 0o077) !== 0)
    assert.equal(open, [], 'readable by others')
  } finally {
    process.umask(previous)
    await server?.stop()
    rmSync(parent, { recursive: true, force: true })
  }
})

test.run()
