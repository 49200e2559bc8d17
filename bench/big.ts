/** @module One large object streamed up and then down over a single connection. The upload is
 * generated on the fly from one reused 1 MiB buffer and the download is counted and dropped, so
 * the client holds a few MiB whatever the size; the server's peak RSS is sampled meanwhile. */
import assert from 'node:assert/strict'
import { randomFillSync } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Readable } from 'node:stream'
import { BIG_CHUNK_BYTES, BIG_TIMEOUT_MS, RSS_POLL_MS } from './config.js'
import { collectClientGarbage, newPool } from './load.js'
import { sampleRss } from './rss.js'

export interface Transfer {
  bytes: number
  seconds: number
  rssPeakBytes: number
  error: string | null
}

export interface BigResult {
  upload: Transfer
  download: Transfer
}

export interface BigSpec {
  origin: string
  putPath: string
  getPath: string
  bytes: number
  pids: () => number[]
}

export async function runBig(spec: BigSpec): Promise<BigResult> {
  assert(spec.bytes > 0)
  const upload = await transfer(spec, 'PUT')
  // Reading back an object that was not stored whole would measure an error page.
  const download: Transfer =
    upload.error === null
      ? await transfer(spec, 'GET')
      : { bytes: 0, seconds: 0, rssPeakBytes: 0, error: 'skipped: the upload failed' }
  return { upload, download }
}

/** The same buffer again and again: its content never changes, so reuse is safe while the socket
 * still holds an earlier write of it. */
async function* generate(total: number): AsyncGenerator<Buffer> {
  const chunk = randomFillSync(Buffer.alloc(BIG_CHUNK_BYTES))
  for (let sent = 0; sent < total;) {
    const size = Math.min(chunk.length, total - sent)
    yield size === chunk.length ? chunk : chunk.subarray(0, size)
    sent += size
  }
}

async function transfer(spec: BigSpec, method: 'PUT' | 'GET'): Promise<Transfer> {
  const pool = newPool(spec.origin, 1)
  collectClientGarbage()
  const sampler = sampleRss(spec.pids(), RSS_POLL_MS)
  const startMs = performance.now()
  let bytes = 0
  let error: string | null = null
  try {
    const response = await pool.request({
      method,
      path: method === 'PUT' ? spec.putPath : spec.getPath,
      headers: method === 'PUT' ? { 'content-length': String(spec.bytes) } : {},
      body: method === 'PUT' ? Readable.from(generate(spec.bytes), { objectMode: false }) : null,
      signal: AbortSignal.timeout(BIG_TIMEOUT_MS),
    })
    for await (const chunk of response.body) {
      if (method === 'GET') bytes += (chunk as Buffer).length
    }
    if (response.statusCode < 200 || response.statusCode > 299) {
      error = `${method} answered ${response.statusCode}`
    } else if (method === 'PUT') {
      bytes = spec.bytes
    } else if (bytes !== spec.bytes) {
      error = `GET returned ${bytes} bytes of ${spec.bytes}`
    }
  } catch (caught) {
    error = `${method}: ${String(caught)}`
  } finally {
    // Nothing is pending once the body is read; after an abort, close could wait on a dead socket.
    await pool.destroy()
  }
  const seconds = (performance.now() - startMs) / 1000
  return { bytes, seconds, rssPeakBytes: sampler.stop(), error }
}
