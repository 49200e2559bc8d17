/** @module The load generator of the timed phases: wrk 4.1 (Debian's package) driven by
 * bench/wrk-load.lua. The client shares the machine's cores with the server, so it should take
 * little of them: wrk, a C client, takes less per request than a Node one, and reports what it
 * took (its own utime + stime), which the progress lines show beside the server's. One wrk per
 * origin (a cluster's nodes take their own paths at once), `-t 2`, the phase's connections split
 * between the origins. The paths are ready-made (presigned) and handed over in a temp file. The
 * server's CPU is sampled from /proc right before the first wrk starts and right after the last
 * exits. Latency percentiles are wrk's (its histogram, which it corrects for coordinated omission).
 * A wrk that outlives its duration by WRK_EXIT_MARGIN_MS is killed; one that breaks throws: that
 * is the bench's failure, not the server's. */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { REQUEST_TIMEOUT_MS } from './config.js'
import { cpuBetween, sampleCpu, US_PER_TICK, type CpuUse } from './cpu.js'
import { collectClientGarbage } from './load.js'

export const WRK_BINARY = '/usr/bin/wrk'
/** Read at run time from the source tree: tsc -b compiles this module into dist/bench/ and
 * leaves the script where it is. */
export const WRK_SCRIPT = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'bench',
  'wrk-load.lua',
)
/** Two threads: one per core of the machine the figures are for. */
const WRK_THREADS = 2
/** wrk ends soon after its duration once it has read its paths; this is far beyond. */
const WRK_EXIT_MARGIN_MS = 30_000
/** wrk prints a few lines; more than this is kept from neither stream. */
const OUTPUT_CHARS_MAX = 64 * 1024
const RESULT_PREFIX = 'WRK-RESULT '

export interface WrkSpec {
  /** One wrk per origin, all at once; origins[i] sends paths[i]. */
  origins: readonly string[]
  paths: readonly (readonly string[])[]
  method: 'PUT' | 'GET'
  /** A PUT's body; a GET's expected answer. */
  objectBytes: number
  /** Connections in all, split between the origins. */
  concurrency: number
  /** Each path once (a thread stops when its own are answered), or in turn until the time is
   * up. */
  once: boolean
  seconds: number
  /** Each server node's processes now (all the target's nodes, whichever origins take the
   * load): sampled for CPU right before and after. */
  nodePids: () => number[][]
}

export interface LoadResult {
  /** 2xx answers (of the object's size, for a GET). */
  ops: number
  /** Answers of any status: the divisor of CPU per request. */
  answers: number
  /** Answers that did not count, and socket errors. */
  failed: number
  bytes: number
  seconds: number
  /** Over the slowest origin when there are several; NaN without answers. */
  p50Ms: number
  p99Ms: number
  firstError: string | null
  /** The server's. */
  cpu: CpuUse
  /** wrk's own CPU time, in microseconds: what the client took from the cores it shares. */
  clientCpuUs: number
  /** Per origin, the indexes of its paths known written, ascending: those a wrk thread without
   * failures had answered, but for as many as it has connections, which may be unanswered. */
  written: number[][]
}

interface ThreadReport {
  id: number
  sent: number
  answered: number
  failed: number
}

/** What wrk-load.lua's done() prints. */
interface WrkReport {
  requests: number
  durationUs: number
  status: number
  timeouts: number
  connectErrors: number
  readErrors: number
  writeErrors: number
  p50Us: number
  p99Us: number
  clientCpuTicks: number
  threads: ThreadReport[]
  firstError: string | null
}

/** wrk children still running, and temp dirs not yet removed: gone with us whatever the exit. */
const running = new Set<ChildProcess>()
const tempDirs = new Set<string>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

/** Null when wrk and its script are there; else why not. */
export function wrkMissing(): string | null {
  if (!existsSync(WRK_BINARY)) return `${WRK_BINARY} not found (bash .ci/bench-deps installs it)`
  if (!existsSync(WRK_SCRIPT)) return `${WRK_SCRIPT} not found`
  return null
}

export async function runWrk(spec: WrkSpec): Promise<LoadResult> {
  assert(spec.origins.length > 0 && spec.origins.length === spec.paths.length)
  assert(spec.paths.every((paths) => paths.length > 0))
  const connections = split(spec.concurrency, spec.origins.length)
  assert(
    connections.every((count) => count > 0),
    'at least one connection per origin',
  )
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'))
  tempDirs.add(dir)
  try {
    const files = spec.paths.map((paths, at) => {
      const file = join(dir, `paths-${at}.txt`)
      writeFileSync(file, paths.join('\n') + '\n')
      return file
    })
    collectClientGarbage() // Our heap stays idle while wrk runs.
    const nodes = spec.nodePids()
    const before = sampleCpu(nodes)
    const reports = await Promise.all(
      spec.origins.map((origin, at) =>
        runOne(origin, files[at] ?? '', spec.paths[at]?.length ?? 0, connections[at] ?? 1, spec),
      ),
    )
    const cpu = cpuBetween(before, sampleCpu(spec.nodePids()), nodes.length)
    return merge(spec, reports, connections, cpu)
  } finally {
    rmSync(dir, { recursive: true, force: true })
    tempDirs.delete(dir)
  }
}

/** `total` connections as evenly as they go to `parts` wrks, in whole units of WRK_THREADS where
 * they can be: wrk gives each thread connections / threads and drops the remainder. */
function split(total: number, parts: number): number[] {
  const unit = total % WRK_THREADS === 0 && total >= WRK_THREADS * parts ? WRK_THREADS : 1
  const units = total / unit
  return Array.from(
    { length: parts },
    (_, at) => (Math.floor(units / parts) + (at < units % parts ? 1 : 0)) * unit,
  )
}

/** wrk needs a connection per thread, and each thread needs a path of its own. */
function threadsFor(connections: number, pathCount: number): number {
  return Math.max(1, Math.min(WRK_THREADS, connections, pathCount))
}

async function runOne(
  origin: string,
  pathsFile: string,
  pathCount: number,
  connections: number,
  spec: WrkSpec,
): Promise<WrkReport> {
  const threads = threadsFor(connections, pathCount)
  // wrk takes whole seconds.
  const seconds = Math.max(1, Math.ceil(spec.seconds))
  const args = [
    ...['-t', String(threads), '-c', String(connections), '-d', `${seconds}s`],
    ...['--timeout', `${REQUEST_TIMEOUT_MS / 1000}s`, '-s', WRK_SCRIPT, origin],
  ]
  const env = {
    ...process.env,
    WRK_PATHS: pathsFile,
    WRK_METHOD: spec.method,
    WRK_BODY_BYTES: String(spec.method === 'PUT' ? spec.objectBytes : 0),
    WRK_GET_BYTES: spec.method === 'GET' ? String(spec.objectBytes) : '',
    WRK_ONCE: spec.once ? '1' : '0',
    WRK_THREADS: String(threads),
  }
  const child = spawn(WRK_BINARY, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    if (stdout.length < OUTPUT_CHARS_MAX) stdout += text
  })
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    if (stderr.length < OUTPUT_CHARS_MAX) stderr += text
  })
  let killed = false
  const timer = setTimeout(
    () => {
      killed = true
      child.kill('SIGKILL')
    },
    seconds * 1000 + WRK_EXIT_MARGIN_MS,
  )
  const exit = await new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(`did not start: ${error.message}`))
    child.once('close', (code, signal) => resolve(code === 0 ? '' : `exited (${code ?? signal})`))
  })
  clearTimeout(timer)
  running.delete(child)
  const line = stdout.split('\n').find((text) => text.startsWith(RESULT_PREFIX))
  const why = killed ? `killed ${WRK_EXIT_MARGIN_MS} ms past its ${seconds} s` : exit
  if (why !== '' || line === undefined) {
    const said = (stderr.trim() || stdout.trim()).slice(-500)
    throw new Error(`wrk against ${origin} ${why || 'printed no result'}: ${said}`)
  }
  return parseReport(line.slice(RESULT_PREFIX.length))
}

function parseReport(text: string): WrkReport {
  const value = JSON.parse(text) as Record<string, unknown>
  const count = (name: string): number => {
    const field = value[name]
    assert(typeof field === 'number' && Number.isFinite(field), `wrk result without ${name}`)
    return field
  }
  const threads = value['threads']
  assert(Array.isArray(threads), 'wrk result without threads')
  const firstError = value['firstError']
  return {
    requests: count('requests'),
    durationUs: count('durationUs'),
    status: count('status'),
    timeouts: count('timeouts'),
    connectErrors: count('connectErrors'),
    readErrors: count('readErrors'),
    writeErrors: count('writeErrors'),
    p50Us: count('p50Us'),
    p99Us: count('p99Us'),
    clientCpuTicks: count('clientCpuTicks'),
    threads: threads as ThreadReport[],
    firstError: typeof firstError === 'string' ? firstError : null,
  }
}

function merge(
  spec: WrkSpec,
  reports: readonly WrkReport[],
  connections: readonly number[],
  cpu: CpuUse,
): LoadResult {
  let ops = 0
  let answers = 0
  let failed = 0
  let seconds = 0
  let p50Us = 0
  let p99Us = 0
  let clientTicks = 0
  let firstError: string | null = null
  const written: number[][] = []
  for (const [at, report] of reports.entries()) {
    const socketErrors = report.connectErrors + report.readErrors + report.writeErrors
    const threadFailures = report.threads.reduce((sum, thread) => sum + thread.failed, 0)
    ops += report.threads.reduce((sum, thread) => sum + thread.answered, 0)
    answers += report.requests
    failed += threadFailures + socketErrors
    seconds = Math.max(seconds, report.durationUs / 1e6)
    clientTicks += report.clientCpuTicks
    if (report.requests > 0) {
      p50Us = Math.max(p50Us, report.p50Us)
      p99Us = Math.max(p99Us, report.p99Us)
    }
    firstError ??= report.firstError ?? socketError(report) ?? timeouts(report)
    const clean = spec.once && socketErrors === 0
    const pathCount = spec.paths[at]?.length ?? 0
    written.push(knownWritten(report.threads, pathCount, connections[at] ?? 0, clean))
  }
  const none = answers === 0
  return {
    ops,
    answers,
    failed,
    bytes: ops * spec.objectBytes,
    seconds: Math.max(seconds, 1e-6),
    p50Ms: none ? Number.NaN : p50Us / 1000,
    p99Ms: none ? Number.NaN : p99Us / 1000,
    firstError,
    cpu,
    clientCpuUs: clientTicks * US_PER_TICK,
    written,
  }
}

function socketError(report: WrkReport): string | null {
  const { connectErrors, readErrors, writeErrors } = report
  if (connectErrors + readErrors + writeErrors === 0) return null
  return `socket errors: connect ${connectErrors}, read ${readErrors}, write ${writeErrors}`
}

function timeouts(report: WrkReport): string | null {
  if (report.timeouts === 0) return null
  return `${report.timeouts} answers took over ${REQUEST_TIMEOUT_MS / 1000} s`
}

/** Of a phase that sends each path once, thread `id` of a wrk sends the paths k with
 * k % threads == id, in order. Its answered count says how many it got back, not which: of a
 * thread that got every answer, all it sent are written; else each of its connections (wrk gives
 * a thread connections / threads) may hold one unanswered, so that many of the paths it sent may
 * be the ones missing, and only its first `answered - connections` are known. A thread with a
 * failure, or a wrk with a socket error (whose thread we cannot tell), gives none; so does a phase
 * that cycles its paths. */
function knownWritten(
  threads: readonly ThreadReport[],
  pathCount: number,
  connections: number,
  clean: boolean,
): number[] {
  if (!clean) return []
  const written: number[] = []
  const perThread = Math.floor(connections / threads.length)
  for (const thread of threads) {
    if (thread.failed > 0) continue
    const all = thread.answered === thread.sent
    const known = all ? thread.answered : Math.max(0, thread.answered - perThread)
    for (let j = 0, index = thread.id; j < known && index < pathCount; j++) {
      written.push(index)
      index += threads.length
    }
  }
  return written.sort((a, b) => a - b)
}
