/** Goal: a 1 GiB object streams in and out with bounded server memory, and the bytes are exact.
 * Method: upload 1 GiB generated on the fly (never held whole by the test either) through a
 * presigned PUT, download it and hash both sides, while sampling the server's resident memory
 * (VmRSS of the server process, all its threads) every 50 ms; the peak must stay under 200 MB. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { Readable } from 'node:stream'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { startServer } from '../support/server.js'

const SIZE = Number(process.env['TEST_BIG_MB'] ?? 1024) * 1024 * 1024
const CHUNK = 1024 * 1024
const RSS_MB_MAX = 200

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  return kb / 1024
}

/** Deterministic pseudo-random bytes, one reused buffer rewritten per chunk. */
function* chunks(size: number): Generator<Buffer> {
  const buffer = Buffer.alloc(CHUNK)
  for (let offset = 0, n = 0; offset < size; offset += CHUNK, n++) {
    for (let i = 0; i < CHUNK; i += 4) buffer.writeUInt32LE((n * 2654435761 + i * 40503) >>> 0, i)
    yield Buffer.from(buffer.subarray(0, Math.min(CHUNK, size - offset)))
  }
}

function put(url: string, size: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: 'PUT',
        headers: { 'content-length': size },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    Readable.from(chunks(size)).pipe(req)
  })
}

test('1 GiB upload and download with the server under 200 MB resident', async () => {
  const server = await startServer()
  const s3 = server.client()
  const pid = server.child.pid!
  let peak = 0
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50)
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'big' }))
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'big', Key: 'huge' }), {
      expiresIn: 3600,
    })
    const expected = createHash('sha256')
    for (const chunk of chunks(SIZE)) expected.update(chunk)
    assert.is(await put(url, SIZE), 200)
    const got = await s3.send(new GetObjectCommand({ Bucket: 'big', Key: 'huge' }))
    assert.is(got.ContentLength, SIZE)
    const actual = createHash('sha256')
    let received = 0
    for await (const chunk of got.Body as AsyncIterable<Buffer>) {
      actual.update(chunk)
      received += chunk.length
    }
    assert.is(received, SIZE)
    assert.is(actual.digest('hex'), expected.digest('hex'))
    console.log(`server peak RSS ${peak.toFixed(1)} MB for ${SIZE / CHUNK} MiB`)
    assert.ok(peak < RSS_MB_MAX, `server peak RSS ${peak.toFixed(1)} MB`)
  } finally {
    clearInterval(sampler)
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

test.run()
