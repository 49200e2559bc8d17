/** @module ListObjectsV2 over a large bucket: fill it with zero-byte objects by concurrent PUTs,
 * then page through it 1000 keys at a time with continuation tokens. Each page is signed just
 * before it is sent, since its token comes from the page before; signing is microseconds against
 * the milliseconds measured. Both steps are bounded in time: s3rver is slow at both. */
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import type { Pool } from 'undici'
import { LIST_FILL_CONCURRENCY, LIST_PAGE_KEYS } from './config.js'
import { LIST_SECONDS_MAX } from './config.js'
import { collectClientGarbage, newPool, runPhase, type PhaseResult } from './load.js'
import { yieldToEventLoop, type Presign } from './presign.js'

export interface ListResult {
  fill: PhaseResult
  pages: number
  keysListed: number
  seconds: number
  /** Per page, ascending. */
  latenciesMs: Float64Array
  /** True when the last page said the listing was complete. */
  complete: boolean
  error: string | null
}

export interface ListSpec {
  origin: string
  bucket: string
  keys: number
  presign: Presign
  fillSecondsMax: number
}

export async function runList(spec: ListSpec): Promise<ListResult> {
  assert(spec.keys > 0)
  const fill = await fillBucket(spec)
  const pool = newPool(spec.origin, 1)
  try {
    return { fill, ...(await pageThrough(pool, spec)) }
  } finally {
    await pool.close()
  }
}

/** PUTs the keys; their signed URLs (tens of MB) die when it returns, before the listing. */
async function fillBucket(spec: ListSpec): Promise<PhaseResult> {
  const paths: string[] = []
  for (let i = 0; i < spec.keys; i++) {
    paths.push(await spec.presign('PUT', `/${spec.bucket}/${keyName(i)}`))
    if (i % 1000 === 0) await yieldToEventLoop() // Let a SIGINT in while we sign.
  }
  return runPhase({
    origins: [spec.origin],
    method: 'PUT',
    paths,
    objectBytes: 0,
    concurrency: LIST_FILL_CONCURRENCY,
    countMax: spec.keys,
    secondsMax: spec.fillSecondsMax,
  })
}

/** Zero-padded so that the listing order is the insertion order. */
function keyName(index: number): string {
  return `key-${String(index).padStart(7, '0')}`
}

async function pageThrough(pool: Pool, spec: ListSpec): Promise<Omit<ListResult, 'fill'>> {
  const pagesMax = Math.ceil(spec.keys / LIST_PAGE_KEYS) + 2
  const latenciesMs = new Float64Array(pagesMax)
  collectClientGarbage()
  const startMs = performance.now()
  const deadlineMs = startMs + LIST_SECONDS_MAX * 1000
  let token: string | null = null
  let pages = 0
  let keysListed = 0
  let complete = false
  let error: string | null = null
  while (pages < pagesMax && performance.now() < deadlineMs) {
    const page = await fetchPage(pool, spec, token)
    if (typeof page === 'string') {
      error = `page ${pages + 1}: ${page}`
      break
    }
    latenciesMs[pages++] = page.ms
    keysListed += page.keys
    token = page.token
    if (token === null) {
      complete = true
      break
    }
  }
  const seconds = (performance.now() - startMs) / 1000
  const sorted = latenciesMs.subarray(0, pages).sort()
  return { pages, keysListed, seconds, latenciesMs: sorted, complete, error }
}

interface Page {
  ms: number
  keys: number
  /** The token of the next page; null on the last page. */
  token: string | null
}

/** One page, or what went wrong with it. */
async function fetchPage(pool: Pool, spec: ListSpec, token: string | null): Promise<Page | string> {
  const query: Record<string, string> = { 'list-type': '2', 'max-keys': String(LIST_PAGE_KEYS) }
  if (token !== null) query['continuation-token'] = token
  const path = await spec.presign('GET', `/${spec.bucket}`, query)
  const startMs = performance.now()
  try {
    const response = await pool.request({ method: 'GET', path })
    const xml = await response.body.text()
    const ms = performance.now() - startMs
    if (response.statusCode !== 200) return `${response.statusCode} ${xml.slice(0, 300)}`
    const keys = xml.match(/<Key>/g)?.length ?? 0
    if (!/<IsTruncated>true<\/IsTruncated>/.test(xml)) return { ms, keys, token: null }
    const match = /<NextContinuationToken>([^<]+)<\/NextContinuationToken>/.exec(xml)
    if (match?.[1] === undefined) return 'truncated page without NextContinuationToken'
    return { ms, keys, token: unescapeXml(match[1]) }
  } catch (error) {
    return String(error)
  }
}

function unescapeXml(text: string): string {
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => entities[name] ?? '')
}
