/** Goal: a node that cannot run in its environment says why in one line and stops, instead of
 * restarting an actor in a loop: a port in use (one ingress thread, and several on SO_REUSEPORT),
 * an address that does not resolve or is not this machine's, TLS files missing, unreadable, not
 * PEM or not a pair, a data directory missing, not a directory, unwritable or on a read-only file
 * system, a master key that does not open the stored secrets, an unknown SVC_LOG_LEVEL. Each must
 * exit with code 2 and exactly one line on stderr that names the variable, with no stack trace and
 * no restart. Method: spawn the real node per case and wait for it to exit on its own. The node
 * promises an exit within 5 s of the failure; the test's bound is wider (a busy machine starts
 * threads slowly) and the promise is checked structurally: no actor was restarted, and the line
 * comes from the fatal path (exit 2), not from the crash-loop limit (exit 1 after 5 restarts).
 * Unwritable directories need a user other than root: as root, the node runs as `nobody`, which
 * must be able to reach the node's binary and this build; from a clone other users cannot enter (a
 * home directory of mode 0700, a `mktemp -d` folder) those cases say why they cannot run there. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { generateKeyPairSync } from 'node:crypto'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync, spawnSync } from 'node:child_process'
import { freePort, MAIN_JS, nodeEnv, runUntilExit, startServer } from '../support/server.js'
import { selfSignedCertificate } from '../support/tls-cert.js'
import { skipCase } from '../support/skip.js'

/** Wider than the node's 5 s promise; a run past it is killed and fails the case. */
const EXIT_BOUND_MS = 20_000
const NOBODY = 65534

const scratch = mkdtempSync(join(tmpdir(), 'svc-startup-'))
const tls = selfSignedCertificate(scratch)

interface Case {
  env?: Record<string, string>
  address?: string
  dataDir?: string
  uid?: number
}

async function expectFatal(variable: string, run: Case, cause: RegExp): Promise<void> {
  const dataDir = run.dataDir ?? mkdtempSync(join(scratch, 'data-'))
  const address = run.address ?? `127.0.0.1:${await freePort()}`
  const finished = await runUntilExit({
    env: nodeEnv(address, dataDir, run.env),
    timeoutMs: EXIT_BOUND_MS,
    ...(run.uid !== undefined && { uid: run.uid }),
  })
  const what = `${variable}: code ${finished.code}\n${finished.stderr}\n${finished.stdout}`
  assert.is(finished.code, 2, what)
  const lines = finished.stderr.split('\n').filter((line) => line.trim() !== '')
  assert.is(lines.length, 1, what)
  const line = lines[0] ?? ''
  assert.ok(line.includes(variable), what)
  assert.match(line, cause, what)
  const everything = finished.stderr + finished.stdout
  assert.not.match(everything, /\n\s+at .+:\d+:\d+/, `a stack trace: ${what}`)
  assert.not.match(everything, /restarting|actor crashed/, `a restart: ${what}`)
}

/** Why `nobody` cannot start the node from here, or null when it can: it must execute the node
 * binary, read this build, and enter the scratch directory. */
function whyNobodyCannotRun(): string | null {
  chmodSync(scratch, 0o755)
  const check = [
    `const fs = process.getBuiltinModule('node:fs')`,
    `fs.accessSync(${JSON.stringify(MAIN_JS)}, fs.constants.R_OK)`,
    `fs.accessSync(${JSON.stringify(scratch)}, fs.constants.X_OK)`,
  ].join('; ')
  const probe = spawnSync(process.execPath, ['-e', check], {
    uid: NOBODY,
    gid: NOBODY,
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: EXIT_BOUND_MS,
  })
  if (probe.error !== undefined) {
    return `nobody cannot execute ${process.execPath}: ${probe.error.message}`
  }
  if (probe.status === 0) return null
  const cause = /EACCES[^\n]*/.exec(probe.stderr.toString())?.[0] ?? `exit ${probe.status}`
  return `nobody cannot reach this build or ${scratch}: ${cause}`
}

/** As root, whether the cases run as `nobody` can run here; if not, says why they are skipped. */
function nobodyCanRun(what: string): boolean {
  const reason = whyNobodyCannotRun()
  if (reason === null) return true
  skipCase(
    `${what} runs the node as nobody, and ${reason} (a directory on the way is closed to ` +
      'other users: run from a clone they can enter)',
  )
  return false
}

function holdPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      resolve({ server, port: typeof address === 'object' && address !== null ? address.port : 0 })
    })
  })
}

test('the HTTP port in use, with one ingress thread and with two', async () => {
  const held = await holdPort()
  try {
    for (const workers of ['1', '2']) {
      await expectFatal(
        'SVC_NODE_HTTP_ADDR',
        { address: `127.0.0.1:${held.port}`, env: { SVC_HTTP_WORKERS: workers } },
        /already in use/,
      )
    }
  } finally {
    held.server.close()
  }
})

test('an address that does not resolve, and one that is not this machine', async () => {
  await expectFatal('SVC_NODE_HTTP_ADDR', { address: 'no-such-host.invalid:0' }, /resolve/)
  // TEST-NET-1 (RFC 5737): never assigned to a machine.
  await expectFatal('SVC_NODE_HTTP_ADDR', { address: '192.0.2.1:0' }, /not an address/)
})

test('TLS files missing, not PEM, or not a pair', async () => {
  const missing = join(scratch, 'missing.pem')
  await expectFatal(
    'SVC_TLS_CERT',
    { env: { SVC_TLS_CERT: missing, SVC_TLS_KEY: tls.key } },
    /exist/,
  )
  await expectFatal(
    'SVC_TLS_KEY',
    { env: { SVC_TLS_CERT: tls.cert, SVC_TLS_KEY: missing } },
    /exist/,
  )
  const text = join(scratch, 'not-pem.txt')
  writeFileSync(text, 'not a certificate\n')
  await expectFatal('SVC_TLS_CERT', { env: { SVC_TLS_CERT: text, SVC_TLS_KEY: tls.key } }, /PEM/)
  await expectFatal('SVC_TLS_KEY', { env: { SVC_TLS_CERT: tls.cert, SVC_TLS_KEY: text } }, /PEM/)
  const other = join(scratch, 'other-key.pem')
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(other, privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const env = { SVC_TLS_CERT: tls.cert, SVC_TLS_KEY: other }
  await expectFatal('SVC_TLS_KEY', { env }, /not the private key of the certificate/)
})

test('a TLS key this user cannot read', async () => {
  const unreadable = join(scratch, 'unreadable-key.pem')
  writeFileSync(unreadable, 'secret\n', { mode: 0o600 })
  const env = { SVC_TLS_CERT: tls.cert, SVC_TLS_KEY: unreadable }
  if (process.getuid?.() === 0) {
    if (!nobodyCanRun('an unreadable TLS key')) return
    // Root reads anything: the node runs as nobody, with a data directory nobody owns.
    const dataDir = mkdtempSync(join(scratch, 'nobody-'))
    chownSync(dataDir, NOBODY, NOBODY)
    chmodSync(scratch, 0o755)
    await expectFatal('SVC_TLS_KEY', { env, dataDir, uid: NOBODY }, /not readable/)
  } else {
    chmodSync(unreadable, 0o000)
    await expectFatal('SVC_TLS_KEY', { env }, /not readable/)
  }
})

test('a data directory missing (with its parent), or not a directory', async () => {
  const missing = join(scratch, 'no-parent', 'data')
  await expectFatal('SVC_DATA_DIR', { dataDir: missing }, /does not exist/)
  const file = join(scratch, 'a-file')
  writeFileSync(file, '')
  await expectFatal('SVC_DATA_DIR', { dataDir: file }, /not a directory/)
})

test('a data directory this user cannot write', async () => {
  if (process.getuid?.() === 0 && !nobodyCanRun('an unwritable data directory')) return
  const parent = mkdtempSync(join(scratch, 'locked-'))
  chmodSync(scratch, 0o755)
  chmodSync(parent, 0o555)
  if (process.getuid?.() === 0) {
    // Root writes anywhere: the node runs as nobody, in a directory root owns (0755).
    const owned = join(parent, 'owned-by-root')
    mkdirSync(owned, { mode: 0o755 })
    await expectFatal('SVC_DATA_DIR', { dataDir: owned, uid: NOBODY }, /permission denied/)
  }
  await expectFatal(
    'SVC_DATA_DIR',
    { dataDir: join(parent, 'data'), ...(process.getuid?.() === 0 && { uid: NOBODY }) },
    /cannot be created: permission denied/,
  )
})

test('a data directory on a read-only file system', async () => {
  const mountPoint = mkdtempSync(join(scratch, 'ro-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', mountPoint], {
      stdio: 'ignore',
    })
  } catch {
    skipCase('cannot mount a read-only tmpfs here (needs root with CAP_SYS_ADMIN)')
    return
  }
  try {
    await expectFatal('SVC_DATA_DIR', { dataDir: mountPoint }, /read-only file system/)
    await expectFatal('SVC_DATA_DIR', { dataDir: join(mountPoint, 'data') }, /read-only/)
  } finally {
    execFileSync('umount', [mountPoint], { stdio: 'ignore' })
  }
})

test('a master key that does not open the stored secrets', async () => {
  const generated = { SVC_ACCESS_KEY_ID: '', SVC_SECRET_ACCESS_KEY: '' }
  const first = await startServer({ env: { ...generated, SVC_MASTER_KEY: 'a'.repeat(64) } })
  assert.is(await first.stop(), 0)
  await expectFatal(
    'SVC_MASTER_KEY',
    { dataDir: first.dataDir, env: { ...generated, SVC_MASTER_KEY: 'b'.repeat(64) } },
    /does not open the stored secrets/,
  )
  first.cleanup()
})

test('an unknown SVC_LOG_LEVEL', async () => {
  await expectFatal('SVC_LOG_LEVEL', { env: { SVC_LOG_LEVEL: 'loud' } }, /must be one of/)
})

test.after(() => {
  rmSync(scratch, { recursive: true, force: true })
})

test.run()
