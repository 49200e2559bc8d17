/** Goal: a 1 GiB object streams in and out with bounded server memory, and the bytes are exact;
 * a 10,000-part multipart upload (the most S3 allows) completes, answers ranges across its parts
 * and stays within the same memory. Method: upload 1 GiB generated on the fly (never held whole by
 * the test either) through a presigned PUT, download it and hash both sides, while sampling the
 * server's resident memory (VmRSS of the server process, all its threads) every 50 ms; the peak
 * may exceed the server's resident memory before the transfer by at most TRANSFER_GROWTH_MB_MAX.
 * A growth bound rather than an absolute one: the runtime's own footprint (megabytes per thread)
 * is not what this test is about; `npm run bench` reports the absolute
 * peak against its goal. The 10,000 parts are UploadPartCopy of one 5 MiB object (each part a
 * reference, so 50 GB of parts cost no disk), completed with the SDK's own 10,000-part body; the
 * server's memory may grow by at most PARTS_GROWTH_MB_MAX meanwhile. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { Readable } from 'node:stream'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { startServer } from '../support/server.js'

const SIZE = Number(process.env['TEST_BIG_MB'] ?? 1024) * 1024 * 1024
const CHUNK = 1024 * 1024
/** What a transfer may add: per stream a window of 512 KiB, per thread a free list of 8 MiB of
 * chunks and a young generation of 16 MiB, and glibc's arenas until a trim (a transfer adds well
 * under this). One GiB held anywhere would be ten times this. */
const TRANSFER_GROWTH_MB_MAX = 96
/** 10,000 requests through four actor threads grow their V8 heaps by tens of MB, and the
 * 10,000-entry record is under 1 MB: growth beyond this would mean parts held in
 * memory (their bytes are 50 GB). */
const PARTS_GROWTH_MB_MAX = 150

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

test('1 GiB upload and download in bounded server memory', async () => {
  const server = await startServer()
  const s3 = server.client()
  const pid = server.child.pid!
  let peak = 0
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50)
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'big' }))
    const startMb = rssMb(pid)
    peak = startMb // What starting took (argon2's pool threads, say) is not the transfer's.
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
    const summary = `server RSS ${startMb.toFixed(1)} MB, peak ${peak.toFixed(1)} MB`
    console.log(`${summary} for ${SIZE / CHUNK} MiB`)
    assert.ok(peak - startMb < TRANSFER_GROWTH_MB_MAX, summary)
  } finally {
    clearInterval(sampler)
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

test('10,000 parts: complete, HEAD, ranges across parts, in bounded memory', async () => {
  const server = await startServer()
  const s3 = server.client()
  const pid = server.child.pid!
  let peak = 0
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50)
  const PARTS = 10_000
  const PART = 5 * 1024 * 1024
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'parts' }))
    const startMb = rssMb(pid)
    const source = Buffer.concat([...chunks(PART)])
    await s3.send(new PutObjectCommand({ Bucket: 'parts', Key: 'source', Body: source }))
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'parts', Key: 'm' }))
    const etags: string[] = []
    let next = 0
    const copyParts = async (): Promise<void> => {
      for (let n = ++next; n <= PARTS; n = ++next) {
        const copied = await s3.send(
          new UploadPartCopyCommand({
            Bucket: 'parts',
            Key: 'm',
            UploadId: created.UploadId,
            PartNumber: n,
            CopySource: 'parts/source',
          }),
        )
        etags[n - 1] = copied.CopyPartResult?.ETag ?? ''
      }
    }
    await Promise.all(Array.from({ length: 16 }, copyParts))
    const parts = etags.map((ETag, index) => ({ PartNumber: index + 1, ETag }))
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'parts',
        Key: 'm',
        UploadId: created.UploadId,
        MultipartUpload: { Parts: parts },
      }),
    )
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'parts', Key: 'm', PartNumber: 1 }))
    assert.is(head.PartsCount, PARTS)
    const whole = await s3.send(new HeadObjectCommand({ Bucket: 'parts', Key: 'm' }))
    assert.is(whole.ContentLength, PARTS * PART)
    // The last 10 bytes of part 9,999 and the first 10 of part 10,000.
    const boundary = (PARTS - 1) * PART
    const range = await s3.send(
      new GetObjectCommand({
        Bucket: 'parts',
        Key: 'm',
        Range: `bytes=${boundary - 10}-${boundary + 9}`,
      }),
    )
    const bytes = Buffer.from(await range.Body!.transformToByteArray())
    assert.ok(bytes.equals(Buffer.concat([source.subarray(PART - 10), source.subarray(0, 10)])))
    const grownMb = peak - startMb
    console.log(`server RSS ${startMb.toFixed(1)} MB, peak ${peak.toFixed(1)} MB: 10,000 parts`)
    assert.ok(grownMb < PARTS_GROWTH_MB_MAX, `server RSS grew ${grownMb.toFixed(1)} MB`)
  } finally {
    clearInterval(sampler)
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

test.run()
