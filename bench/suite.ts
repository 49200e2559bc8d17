/** @module Everything measured on one target, in a fixed order: buckets, an unrecorded warm-up,
 * then per size (4 KiB, 1 MiB) and concurrency (16, 64) a PUT phase of new keys and a GET phase
 * that reads back what it wrote, and at 16 connections a PUT phase that overwrites those keys;
 * then the streamed large object and the listing (not on nginx, which cannot list). The load
 * phases run on wrk (wrk.ts), each BENCH_RUNS times; deletes and the listing's fill use the undici
 * client (load.ts). Large objects are deleted once no later phase uses them, and dirty pages
 * written back before each large write phase, so that no phase pays for the one before. Each step
 * prints a progress line as it ends. */
import assert from 'node:assert/strict'
import { request } from 'undici'
import { BIG_BYTES, BUCKET, CONCURRENCIES, LARGE_BYTES, LARGE_OPS_MAX } from './config.js'
import { LIST_KEYS, PHASE_SECONDS, SMALL_BYTES, SMALL_OPS_MAX } from './config.js'
import { DELETE_SECONDS_MAX, WARMUP_OPS_MAX, WARMUP_SECONDS } from './config.js'
import { LIST_FILL_SECONDS_MAX, SERVICE_LIST_FILL_SECONDS_MAX } from './config.js'
import { ONLY_PHASES, PHASE_RUNS, SMALL_OPS_MARGIN } from './config.js'
import { flushDirtyPages } from './disk.js'
import { runBig, type BigResult } from './big.js'
import { runList, type ListResult } from './list.js'
import { percentile, runPhase, type PhaseResult } from './load.js'
import { yieldToEventLoop } from './presign.js'
import { isService, type Endpoint, type Target } from './targets.js'
import { runWrk, type LoadResult } from './wrk.js'

export const LIST_BUCKET = 'bench-list'
/** A thread name is shown in a progress line's split from this share of the CPU on. */
const SPLIT_SHARE_MIN = 0.02

export interface TargetResults {
  /** By phase label: one result per run. */
  phases: Map<string, LoadResult[]>
  big: BigResult | null
  list: ListResult | null
}

export interface PhaseKind {
  label: string
  method: 'PUT' | 'GET'
  objectBytes: number
  concurrency: number
  /** The label of the PUT phase whose keys this one reads or overwrites; null for new keys. */
  source: string | null
}

function kindsOf(objectBytes: number): PhaseKind[] {
  const size = objectBytes === SMALL_BYTES ? '4 KiB' : '1 MiB'
  return CONCURRENCIES.flatMap((concurrency) => {
    const common = { objectBytes, concurrency }
    const put = `PUT ${size} c${concurrency}`
    const kinds: PhaseKind[] = [
      { label: put, method: 'PUT', source: null, ...common },
      { label: `GET ${size} c${concurrency}`, method: 'GET', source: put, ...common },
    ]
    if (concurrency === CONCURRENCIES[0]) {
      kinds.push({ label: `${put} overwrite`, method: 'PUT', source: put, ...common })
    }
    return kinds
  })
}

/** The load phases in the order they run and are reported. */
export const PHASE_KINDS: readonly PhaseKind[] = [SMALL_BYTES, LARGE_BYTES].flatMap(kindsOf)

/** The labels BENCH_PHASES names the streamed object and the listing by. */
export const BIG_STEP = `streamed ${BIG_BYTES / 2 ** 20} MiB`
export const LIST_STEP = 'list'

/** Whether BENCH_PHASES names the step with this label (all are named when it is empty). */
export function phaseNamed(label: string): boolean {
  return ONLY_PHASES.length === 0 || ONLY_PHASES.some((part) => label.includes(part))
}

/** The phases BENCH_PHASES names, with the PUT phases whose keys they use, in PHASE_KINDS'
 * order. */
export const SELECTED_KINDS: readonly PhaseKind[] = PHASE_KINDS.filter(
  (kind) =>
    phaseNamed(kind.label) ||
    PHASE_KINDS.some((user) => user.source === kind.label && phaseNamed(user.label)),
)

export async function runSuite(target: Target): Promise<TargetResults> {
  await flushDirtyPages(target.name)
  if (target.presign !== null) {
    await createBucket(target, BUCKET)
    await createBucket(target, LIST_BUCKET)
  }
  const warmUpOpsPerSecond = await warmUp(target)
  const { phases } = await runLoadPhases({
    name: target.name,
    nodes: target.nodes,
    nodePids: () => target.nodes.map((node) => node.pids()),
    keyPrefix: '',
    warmUpOpsPerSecond,
  })
  const results: TargetResults = { phases, big: null, list: null }
  // The second ingress thread matters to the load phases' ceiling; the streamed object and the
  // listing are measured once, on the service's first target.
  if (target.name === 'service-2w') return results
  if (phaseNamed(BIG_STEP)) results.big = await big(target)
  if (target.presign !== null && phaseNamed(LIST_STEP)) results.list = await list(target)
  return results
}

/** The load phases of PHASE_KINDS through some nodes of a target (one for a single server). */
export interface LoadRun {
  /** Starts each progress line. */
  name: string
  /** Each node takes keys of its own, written and read back through it (a cluster node without
   * replication keeps what it got), with one wrk per node at once. */
  nodes: readonly Endpoint[]
  /** The processes of each of the target's nodes, which load through some of them may keep
   * busy all the same (a cluster replicates): their CPU is the server's. */
  nodePids: () => number[][]
  /** Before each phase's key names, so that runs through other nodes write other keys. */
  keyPrefix: string
  warmUpOpsPerSecond: number
  /** Read right before and after each PUT phase: bytes the servers sent each other. */
  sentBytes?: () => Promise<number | null>
}

export interface LoadResults {
  /** By phase label: one result per run. */
  phases: Map<string, LoadResult[]>
  /** Per PUT phase with `sentBytes`, per run: the bytes sent during it per PUT acknowledged, or
   * null. */
  sentBytesPerPut: Map<string, (number | null)[]>
}

/** The keys a PUT phase of new keys is known to have written (its last run's), per node. */
interface Written {
  objectBytes: number
  keys: string[][]
  /** The same keys' signed PUT paths: an overwrite sends them again. */
  putPaths: string[][]
}

export async function runLoadPhases(run: LoadRun): Promise<LoadResults> {
  const results: LoadResults = { phases: new Map(), sentBytesPerPut: new Map() }
  const written = new Map<string, Written>()
  for (const [at, kind] of SELECTED_KINDS.entries()) {
    if (kind.source === null) {
      written.set(kind.label, await newKeys(run, kind, results))
    } else {
      await writtenKeys(run, kind, written.get(kind.source), results)
    }
    // Keys no later phase uses are let go; 4 GiB of 1 MiB objects would stay dirty in the page
    // cache and slow what follows, so those are deleted.
    for (const [label, keys] of written) {
      const later = SELECTED_KINDS.slice(at + 1)
      if (later.some((other) => other.source === label)) continue
      written.delete(label)
      if (keys.objectBytes === LARGE_BYTES) await removeWritten(run, keys)
    }
  }
  return results
}

/** The PUT phase `kind` of new keys, PHASE_RUNS times over fresh keys; returns the keys of the
 * last run known written. A 1 MiB run's objects are deleted before the next run. */
async function newKeys(run: LoadRun, kind: PhaseKind, results: LoadResults): Promise<Written> {
  const perNode = Math.ceil(opsMax(kind, run.warmUpOpsPerSecond) / run.nodes.length)
  let last: Written | null = null
  for (let round = 0; round < PHASE_RUNS; round++) {
    if (last !== null && kind.objectBytes === LARGE_BYTES) await removeWritten(run, last)
    const prefix = `${run.keyPrefix}${kind.objectBytes}-c${kind.concurrency}-r${round}`
    const keys = run.nodes.map((_, at) =>
      Array.from({ length: perNode }, (_, i) => `${prefix}-n${at}-${i}`),
    )
    const paths: string[][] = []
    for (const [at, node] of run.nodes.entries()) {
      paths.push(await pathsFor('PUT', keys[at] ?? [], node))
    }
    const result = await measured(run, kind, paths, round, results)
    const pick = <T>(all: readonly T[][]) =>
      result.written.map((indexes, at) => indexes.map((i) => all[at]?.[i] as T))
    last = { objectBytes: kind.objectBytes, keys: pick(keys), putPaths: pick(paths) }
  }
  assert(last !== null, 'PHASE_RUNS is at least 1')
  return last
}

/** A GET or overwrite phase over the keys its PUT phase wrote, PHASE_RUNS times. */
async function writtenKeys(
  run: LoadRun,
  kind: PhaseKind,
  source: Written | undefined,
  results: LoadResults,
): Promise<void> {
  const short = source?.keys.findIndex((keys) => keys.length === 0) ?? 0
  if (source === undefined || short !== -1) {
    const through = run.nodes.length === 1 ? '' : ` through n${short + 1}`
    console.log(`  ${run.name} ${kind.label}: skipped, nothing known written${through}`)
    return
  }
  const paths: string[][] = []
  for (const [at, node] of run.nodes.entries()) {
    const keys = source.keys[at] ?? []
    paths.push(
      kind.method === 'GET' ? await pathsFor('GET', keys, node) : (source.putPaths[at] ?? []),
    )
  }
  for (let round = 0; round < PHASE_RUNS; round++) {
    await measured(run, kind, paths, round, results)
  }
}

/** One run of a phase: flushed first if it writes large objects, recorded, printed. */
async function measured(
  run: LoadRun,
  kind: PhaseKind,
  paths: readonly string[][],
  round: number,
  results: LoadResults,
): Promise<LoadResult> {
  const writes = kind.method === 'PUT'
  if (writes && kind.objectBytes === LARGE_BYTES) await flushDirtyPages(run.name)
  const before = writes ? await run.sentBytes?.() : undefined
  const result = await runWrk({
    origins: run.nodes.map((node) => node.origin),
    paths,
    method: kind.method,
    objectBytes: kind.objectBytes,
    concurrency: kind.concurrency,
    once: kind.source === null,
    seconds: PHASE_SECONDS,
    nodePids: run.nodePids,
  })
  append(results.phases, kind.label, result)
  const label = PHASE_RUNS === 1 ? kind.label : `${kind.label} (run ${round + 1}/${PHASE_RUNS})`
  printLoad(run.name, label, result)
  if (writes && run.sentBytes !== undefined) {
    const after = await run.sentBytes()
    const perPut = perPutOf(before ?? null, after, result.ops)
    append(results.sentBytesPerPut, kind.label, perPut)
    const text = perPut === null ? 'not measured' : `${perPut.toFixed(0)} bytes`
    console.log(`  ${run.name} ${label}: node-to-node ${text} per PUT`)
  }
  return result
}

function append<T>(map: Map<string, T[]>, label: string, value: T): void {
  const values = map.get(label) ?? []
  values.push(value)
  map.set(label, values)
}

function perPutOf(before: number | null, after: number | null, puts: number): number | null {
  if (before === null || after === null || puts === 0) return null
  return (after - before) / puts
}

/** Deletes a phase's objects through the nodes that wrote them, untimed: deleted files' dirty
 * pages are dropped rather than written back. */
async function removeWritten(run: LoadRun, written: Written): Promise<void> {
  for (const [at, node] of run.nodes.entries()) await remove(run.name, node, written.keys[at] ?? [])
}

/** Deletes objects through one node with the undici client, which reaches every key whatever
 * the time it takes (within DELETE_SECONDS_MAX). */
async function remove(name: string, node: Endpoint, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  const result = await runPhase({
    origins: [node.origin],
    method: 'DELETE',
    paths: await pathsFor('DELETE', keys, node),
    objectBytes: 0,
    concurrency: CONCURRENCIES[0],
    countMax: keys.length,
    secondsMax: DELETE_SECONDS_MAX,
  })
  if (result.failed > 0 || result.ops < keys.length) {
    const why = result.firstError ?? 'out of time'
    console.log(`  ${name}: deleted ${result.ops} of ${keys.length} objects (${why})`)
  }
}

/** Unrecorded PUTs of new 4 KiB keys through every node; returns their rate, which sizes the
 * 4 KiB phases. */
export async function warmUp(target: Target): Promise<number> {
  const nodes = target.nodes
  const perNode = Math.ceil(WARMUP_OPS_MAX / nodes.length)
  const paths: string[][] = []
  for (const [at, node] of nodes.entries()) {
    const keys = Array.from({ length: perNode }, (_, i) => `warm-up-n${at}-${i}`)
    paths.push(await pathsFor('PUT', keys, node))
  }
  const result = await runWrk({
    origins: nodes.map((node) => node.origin),
    paths,
    method: 'PUT',
    objectBytes: SMALL_BYTES,
    concurrency: CONCURRENCIES[0],
    once: true,
    seconds: WARMUP_SECONDS,
    nodePids: () => nodes.map((node) => node.pids()),
  })
  printLoad(target.name, 'warm-up PUT 4 KiB (not reported)', result)
  return result.ops / result.seconds
}

/** Presigning costs an HMAC chain a URL, so a 4 KiB PUT phase gets SMALL_OPS_MARGIN times what the
 * warm-up rate would need in the phase's time: s3rver's phases then need thousands of URLs rather
 * than SMALL_OPS_MAX. */
function opsMax(kind: PhaseKind, warmUpOpsPerSecond: number): number {
  if (kind.objectBytes !== SMALL_BYTES) return LARGE_OPS_MAX
  const enough = Math.ceil(warmUpOpsPerSecond * PHASE_SECONDS * SMALL_OPS_MARGIN) + 1000
  return Math.min(SMALL_OPS_MAX, enough)
}

/** The paths of `keys`, signed for `node` when the target signs. */
async function pathsFor(
  method: string,
  keys: readonly string[],
  node: Endpoint,
): Promise<string[]> {
  const paths: string[] = []
  for (const key of keys) {
    const path = `/${BUCKET}/${key}`
    paths.push(node.presign === null ? path : await node.presign(method, path))
    // Presigning resolves in microtasks only: let timers and signals (SIGINT) in now and then.
    if (paths.length % 1000 === 0) await yieldToEventLoop()
  }
  return paths
}

export async function createBucket(target: Target, bucket: string): Promise<void> {
  assert(target.presign !== null)
  const path = await target.presign('PUT', `/${bucket}`)
  const response = await request(target.origin + path, { method: 'PUT' })
  const text = await response.body.text()
  if (response.statusCode !== 200) {
    console.log(`  ${target.name}: PUT /${bucket} answered ${response.statusCode} ${text}`)
  }
}

async function big(target: Target): Promise<BigResult> {
  const key = 'big-object'
  const path = `/${BUCKET}/${key}`
  const signed = async (method: string): Promise<string> =>
    target.presign === null ? path : await target.presign(method, path)
  await flushDirtyPages(target.name)
  const result = await runBig({
    origin: target.origin,
    putPath: await signed('PUT'),
    getPath: await signed('GET'),
    bytes: BIG_BYTES,
    pids: () => target.pids(),
  })
  await remove(target.name, target, [key])
  const transfers = [
    ['upload', result.upload],
    ['download', result.download],
  ] as const
  for (const [label, transfer] of transfers) {
    const rate = transfer.bytes / 1e6 / Math.max(transfer.seconds, 1e-9)
    const rss = transfer.rssPeakBytes / 1e6
    const outcome = transfer.error === null ? '' : `, ${transfer.error}`
    console.log(
      `  ${target.name} ${label} ${BIG_BYTES / 2 ** 20} MiB: ${rate.toFixed(0)} MB/s, ` +
        `peak RSS ${rss.toFixed(0)} MB${outcome}`,
    )
  }
  return result
}

async function list(target: Target): Promise<ListResult> {
  assert(target.presign !== null)
  const result = await runList({
    origin: target.origin,
    bucket: LIST_BUCKET,
    keys: LIST_KEYS,
    presign: target.presign,
    fillSecondsMax: isService(target.name) ? SERVICE_LIST_FILL_SECONDS_MAX : LIST_FILL_SECONDS_MAX,
  })
  printPhase(target.name, `fill ${LIST_KEYS} keys c64`, result.fill)
  const p50 = percentile(result.latenciesMs, 0.5)
  const p99 = percentile(result.latenciesMs, 0.99)
  console.log(
    `  ${target.name} list: ${result.pages} pages, ${result.keysListed} keys in ` +
      `${result.seconds.toFixed(1)} s${result.complete ? '' : ' (incomplete)'}, ` +
      `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms` +
      (result.error === null ? '' : `, ${result.error}`),
  )
  return result
}

/** The progress line of a load phase: rates, latency, and the server's CPU per request with its
 * split by thread name (and by node, for several). */
export function printLoad(name: string, label: string, result: LoadResult): void {
  const ops = result.ops / result.seconds
  const rate = result.bytes / 1e6 / result.seconds
  const failed = result.failed === 0 ? '' : `, ${result.failed} failed (${result.firstError})`
  const perRequest = (us: number): string =>
    result.answers === 0 ? '-' : (us / result.answers).toFixed(0)
  const threads = [...result.cpu.byThread]
    .filter(([, us]) => us >= result.cpu.us * SPLIT_SHARE_MIN)
    .sort((a, b) => b[1] - a[1])
    .map(([thread, us]) => `${thread} ${perRequest(us)}`)
  const nodes =
    result.cpu.byNode.length === 1
      ? []
      : [result.cpu.byNode.map((us, at) => `n${at + 1} ${perRequest(us)}`).join(', ')]
  const split = [...nodes, ...threads].join(', ')
  console.log(
    `  ${name} ${label}: ${result.ops} ops in ${result.seconds.toFixed(1)} s, ` +
      `${ops.toFixed(0)} ops/s, ${rate.toFixed(1)} MB/s, p50 ${result.p50Ms.toFixed(2)} ms, ` +
      `p99 ${result.p99Ms.toFixed(2)} ms, server CPU ${perRequest(result.cpu.us)} us/req` +
      (split === '' ? '' : ` (${split})`) +
      `, wrk ${perRequest(result.clientCpuUs)} us/req` +
      failed,
  )
}

/** The progress line of an undici phase (the listing's fill). */
function printPhase(name: string, label: string, result: PhaseResult): void {
  const ops = result.ops / result.seconds
  const rate = result.bytes / 1e6 / result.seconds
  const p50 = percentile(result.latenciesMs, 0.5)
  const p99 = percentile(result.latenciesMs, 0.99)
  const failed = result.failed === 0 ? '' : `, ${result.failed} failed (${result.firstError})`
  console.log(
    `  ${name} ${label}: ${result.ops} ops in ${result.seconds.toFixed(1)} s, ` +
      `${ops.toFixed(0)} ops/s, ${rate.toFixed(1)} MB/s, p50 ${p50.toFixed(2)} ms, ` +
      `p99 ${p99.toFixed(2)} ms${failed}`,
  )
}
