/** @module Everything measured on one target, in a fixed order: buckets, an unrecorded warm-up,
 * PUT then GET of 4 KiB and 1 MiB objects at each concurrency (each GET phase reads back what its
 * PUT phase wrote), the streamed large object, and the listing (not on nginx, which cannot list).
 * Large objects are deleted once read and dirty pages written back before each large write phase,
 * so that no phase pays for the one before. Each step prints a progress line as it ends. */
import assert from 'node:assert/strict'
import { request } from 'undici'
import { BIG_BYTES, BUCKET, CONCURRENCIES, LARGE_BYTES, LARGE_OPS_MAX } from './config.js'
import { LIST_KEYS, PHASE_SECONDS, SMALL_BYTES, SMALL_OPS_MAX } from './config.js'
import { DELETE_SECONDS_MAX, WARMUP_OPS_MAX, WARMUP_SECONDS } from './config.js'
import { LIST_FILL_SECONDS_MAX, SERVICE_LIST_FILL_SECONDS_MAX } from './config.js'
import { flushDirtyPages } from './disk.js'
import { runBig, type BigResult } from './big.js'
import { runList, type ListResult } from './list.js'
import { percentile, runPhase, type PhaseResult } from './load.js'
import { yieldToEventLoop } from './presign.js'
import type { Endpoint, Target } from './targets.js'

export const LIST_BUCKET = 'bench-list'

export interface TargetResults {
  phases: Map<string, PhaseResult>
  big: BigResult | null
  list: ListResult | null
}

export interface PhaseKind {
  label: string
  method: 'PUT' | 'GET'
  objectBytes: number
  concurrency: number
}

/** The load phases in the order they run and are reported. */
export const PHASE_KINDS: readonly PhaseKind[] = [SMALL_BYTES, LARGE_BYTES].flatMap((bytes) =>
  CONCURRENCIES.flatMap((concurrency) =>
    (['PUT', 'GET'] as const).map((method) => ({
      label: `${method} ${bytes === SMALL_BYTES ? '4 KiB' : '1 MiB'} c${concurrency}`,
      method,
      objectBytes: bytes,
      concurrency,
    })),
  ),
)

export async function runSuite(target: Target): Promise<TargetResults> {
  await flushDirtyPages(target.name)
  if (target.presign !== null) {
    await createBucket(target, BUCKET)
    await createBucket(target, LIST_BUCKET)
  }
  const warmUpOpsPerSecond = await warmUp(target.name, target.nodes)
  const { phases } = await runLoadPhases({
    name: target.name,
    nodes: target.nodes,
    keyPrefix: '',
    warmUpOpsPerSecond,
  })
  const results: TargetResults = { phases, big: null, list: null }
  results.big = await big(target)
  if (target.presign !== null) results.list = await list(target)
  return results
}

/** The load phases of PHASE_KINDS through some nodes of a target (one for a single server). */
export interface LoadRun {
  /** Starts each progress line. */
  name: string
  /** Request j of a phase goes to nodes[j % nodes.length]; key i is written and read back
   * through nodes[i % nodes.length] (a cluster node without replication keeps what it got). */
  nodes: readonly Endpoint[]
  /** Before each phase's key names, so that runs through other nodes write other keys. */
  keyPrefix: string
  warmUpOpsPerSecond: number
  /** Read right before and after each PUT phase: bytes the servers sent each other. */
  sentBytes?: () => Promise<number | null>
}

export interface LoadResults {
  phases: Map<string, PhaseResult>
  /** Per PUT phase with `sentBytes`: the bytes sent during it per PUT acknowledged, or null. */
  sentBytesPerPut: Map<string, number | null>
}

export async function runLoadPhases(run: LoadRun): Promise<LoadResults> {
  const results: LoadResults = { phases: new Map(), sentBytesPerPut: new Map() }
  const turn = run.nodes.length
  let written: number[] = [] // Indexes of the keys the last PUT phase stored, ascending.
  for (const kind of PHASE_KINDS) {
    const countMax = roundUp(opsMax(kind, run.warmUpOpsPerSecond), turn)
    const prefix = `${run.keyPrefix}${kind.objectBytes}-c${kind.concurrency}`
    const indexes =
      kind.method === 'PUT' ? Array.from({ length: countMax }, (_, i) => i) : inTurn(written, turn)
    if (indexes.length === 0) {
      console.log(`  ${run.name} ${kind.label}: skipped, nothing was written to read back`)
      continue
    }
    const keys = indexes.map((i) => `${prefix}-${i}`)
    // Key indexes[j] is congruent to j modulo the nodes: request j goes to its key's node.
    const paths = await pathsFor(kind.method, keys, (j) => run.nodes[j % turn])
    const large = kind.objectBytes === LARGE_BYTES
    if (kind.method === 'PUT' && large) await flushDirtyPages(run.name)
    const before = kind.method === 'PUT' ? await run.sentBytes?.() : undefined
    const result = await runPhase({
      origins: run.nodes.map((node) => node.origin),
      method: kind.method,
      paths,
      objectBytes: kind.objectBytes,
      concurrency: kind.concurrency,
      countMax,
      secondsMax: PHASE_SECONDS,
    })
    results.phases.set(kind.label, result)
    printPhase(run.name, kind.label, result)
    if (kind.method === 'PUT' && run.sentBytes !== undefined) {
      const after = await run.sentBytes()
      const perPut = perPutOf(before ?? null, after, result.ops)
      results.sentBytesPerPut.set(kind.label, perPut)
      const text = perPut === null ? 'not measured' : `${perPut.toFixed(0)} bytes`
      console.log(`  ${run.name} ${kind.label}: node-to-node ${text} per PUT`)
    }
    if (kind.method === 'PUT') written = result.succeeded
    // 4 GiB of 1 MiB objects would stay dirty in the page cache and slow what follows.
    if (kind.method === 'GET' && large) {
      for (const [at, node] of run.nodes.entries()) {
        const own = written.filter((i) => i % turn === at).map((i) => `${prefix}-${i}`)
        await remove(run.name, node, own)
      }
    }
  }
  return results
}

function perPutOf(before: number | null, after: number | null, puts: number): number | null {
  if (before === null || after === null || puts === 0) return null
  return (after - before) / puts
}

/** The indexes that `turn` nodes can serve in turn: those of each node (index modulo `turn`),
 * interleaved, as many of each as the node with fewest has. Ascending indexes stay so. */
function inTurn(indexes: readonly number[], turn: number): number[] {
  if (turn === 1) return [...indexes]
  const byNode = Array.from({ length: turn }, (_, at) => indexes.filter((i) => i % turn === at))
  const rounds = Math.min(...byNode.map((own) => own.length))
  const interleaved: number[] = []
  for (let round = 0; round < rounds; round++) {
    for (const own of byNode) interleaved.push(own[round] ?? 0)
  }
  return interleaved
}

function roundUp(count: number, multiple: number): number {
  return Math.ceil(count / multiple) * multiple
}

/** Deletes objects through one node, untimed: deleted files' dirty pages are dropped rather than
 * written back. */
async function remove(name: string, node: Endpoint, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  const result = await runPhase({
    origins: [node.origin],
    method: 'DELETE',
    paths: await pathsFor('DELETE', keys, () => node),
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

/** Unrecorded PUTs through every node in turn; returns their rate, which sizes the 4 KiB
 * phases. */
export async function warmUp(name: string, nodes: readonly Endpoint[]): Promise<number> {
  const countMax = roundUp(WARMUP_OPS_MAX, nodes.length)
  const keys = Array.from({ length: countMax }, (_, i) => `warm-up-${i}`)
  const result = await runPhase({
    origins: nodes.map((node) => node.origin),
    method: 'PUT',
    paths: await pathsFor('PUT', keys, (j) => nodes[j % nodes.length]),
    objectBytes: SMALL_BYTES,
    concurrency: CONCURRENCIES[0],
    countMax,
    secondsMax: WARMUP_SECONDS,
  })
  printPhase(name, 'warm-up PUT 4 KiB (not reported)', result)
  return result.ops / result.seconds
}

/** Presigning costs about 65 us a URL, so a 4 KiB PUT phase gets ten times what the warm-up rate
 * would need in the phase's time (a phase that outruns that ends early by count, which leaves its
 * rates right): s3rver's phases then need thousands of URLs rather than SMALL_OPS_MAX. A GET
 * phase cycles over the keys written, so its bound costs nothing to prepare. */
function opsMax(kind: PhaseKind, warmUpOpsPerSecond: number): number {
  if (kind.objectBytes !== SMALL_BYTES) return LARGE_OPS_MAX
  if (kind.method === 'GET') return SMALL_OPS_MAX
  const enough = Math.ceil(warmUpOpsPerSecond * PHASE_SECONDS * 10) + 1000
  return Math.min(SMALL_OPS_MAX, enough)
}

/** Path j of `keys`, signed for its node (`nodeOf(j)`) when the target signs. */
async function pathsFor(
  method: string,
  keys: readonly string[],
  nodeOf: (j: number) => Endpoint | undefined,
): Promise<string[]> {
  const paths: string[] = []
  for (const [j, key] of keys.entries()) {
    const node = nodeOf(j)
    assert(node !== undefined)
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
    fillSecondsMax:
      target.name === 'service' ? SERVICE_LIST_FILL_SECONDS_MAX : LIST_FILL_SECONDS_MAX,
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

export function printPhase(name: string, label: string, result: PhaseResult): void {
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
