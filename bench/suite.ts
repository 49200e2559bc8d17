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
import type { Target } from './targets.js'

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
  const results: TargetResults = { phases: new Map(), big: null, list: null }
  await flushDirtyPages(target.name)
  if (target.presign !== null) {
    await createBucket(target, BUCKET)
    await createBucket(target, LIST_BUCKET)
  }
  const warmUpOpsPerSecond = await warmUp(target)
  let written: string[] = [] // Keys the last PUT phase stored, for the GET phase after it.
  for (const kind of PHASE_KINDS) {
    if (kind.method === 'GET' && written.length === 0) {
      console.log(`  ${target.name} ${kind.label}: skipped, nothing was written to read back`)
      continue
    }
    const countMax = opsMax(kind, warmUpOpsPerSecond)
    const prefix = `${kind.objectBytes}-c${kind.concurrency}`
    const keys =
      kind.method === 'PUT' ? Array.from({ length: countMax }, (_, i) => `${prefix}-${i}`) : written
    const paths = await pathsFor(target, kind.method, keys)
    const large = kind.objectBytes === LARGE_BYTES
    if (kind.method === 'PUT' && large) await flushDirtyPages(target.name)
    const result = await runPhase({
      origin: target.origin,
      method: kind.method,
      paths,
      objectBytes: kind.objectBytes,
      concurrency: kind.concurrency,
      countMax,
      secondsMax: PHASE_SECONDS,
    })
    results.phases.set(kind.label, result)
    printPhase(target.name, kind.label, result)
    if (kind.method === 'PUT') written = result.succeeded.map((i) => `${prefix}-${i}`)
    // 4 GiB of 1 MiB objects would stay dirty in the page cache and slow what follows.
    if (kind.method === 'GET' && large) await remove(target, written)
  }
  results.big = await big(target)
  if (target.presign !== null) results.list = await list(target)
  return results
}

/** Deletes objects, untimed: deleted files' dirty pages are dropped rather than written back. */
async function remove(target: Target, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  const result = await runPhase({
    origin: target.origin,
    method: 'DELETE',
    paths: await pathsFor(target, 'DELETE', keys),
    objectBytes: 0,
    concurrency: CONCURRENCIES[0],
    countMax: keys.length,
    secondsMax: DELETE_SECONDS_MAX,
  })
  if (result.failed > 0 || result.ops < keys.length) {
    const why = result.firstError ?? 'out of time'
    console.log(`  ${target.name}: deleted ${result.ops} of ${keys.length} objects (${why})`)
  }
}

/** Returns the warm-up's PUTs per second, which sizes the 4 KiB phases. */
async function warmUp(target: Target): Promise<number> {
  const keys = Array.from({ length: WARMUP_OPS_MAX }, (_, i) => `warm-up-${i}`)
  const result = await runPhase({
    origin: target.origin,
    method: 'PUT',
    paths: await pathsFor(target, 'PUT', keys),
    objectBytes: SMALL_BYTES,
    concurrency: CONCURRENCIES[0],
    countMax: WARMUP_OPS_MAX,
    secondsMax: WARMUP_SECONDS,
  })
  printPhase(target.name, 'warm-up PUT 4 KiB (not reported)', result)
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

async function pathsFor(
  target: Target,
  method: string,
  keys: readonly string[],
): Promise<string[]> {
  const paths: string[] = []
  for (const key of keys) {
    const path = `/${BUCKET}/${key}`
    paths.push(target.presign === null ? path : await target.presign(method, path))
    // Presigning resolves in microtasks only: let timers and signals (SIGINT) in now and then.
    if (paths.length % 1000 === 0) await yieldToEventLoop()
  }
  return paths
}

async function createBucket(target: Target, bucket: string): Promise<void> {
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
  await remove(target, [key])
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
