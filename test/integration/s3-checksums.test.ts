/** Goal: the additional checksums behave as Amazon S3's for a real client: CRC64NVME on single
 * PUTs (in a header and as an aws-chunked trailer), returned by GET and HEAD with
 * x-amz-checksum-mode: ENABLED together with x-amz-checksum-type. Method: the real server as a child
 * process, driven by @aws-sdk/client-s3 v3 with ChecksumAlgorithm set (the SDK validates the
 * checksums it gets back), and raw signed HTTP for a wrong value. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Readable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { checksumBase64 } from '../../protocol/checksums.js'
import { errorCode, signedRequest } from '../support/signed-request.js'
import { startServer, type TestServer } from '../support/server.js'

let server: TestServer
let s3: S3Client
const BUCKET = 'sums'

test.before(async () => {
  server = await startServer()
  s3 = server.client()
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

async function bytesOf(response: { Body?: unknown }): Promise<Buffer> {
  const body = response.Body as { transformToByteArray(): Promise<Uint8Array> }
  return Buffer.from(await body.transformToByteArray())
}

test('CRC64NVME: a PUT in a header and as a trailer, returned by GET and HEAD', async () => {
  const body = randomBytes(200_000)
  const expected = await checksumBase64('crc64nvme', body)
  // A buffer is sent with the checksum in a trailer; a stream of known length likewise, in chunks.
  const bodies = {
    buffer: body,
    stream: Readable.from([body.subarray(0, 70_000), body.subarray(70_000)]),
  }
  for (const [name, Body] of Object.entries(bodies)) {
    const key = `crc64-${name}`
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: key,
        Body,
        ContentLength: body.length,
        ChecksumAlgorithm: 'CRC64NVME',
      }),
    )
    assert.is(put.ChecksumCRC64NVME, expected, name)
    assert.is(put.ChecksumType, 'FULL_OBJECT', name)
    const got = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: 'ENABLED' }),
    )
    assert.is(got.ChecksumCRC64NVME, expected, name)
    assert.is(got.ChecksumType, 'FULL_OBJECT', name)
    assert.ok((await bytesOf(got)).equals(body), name)
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: 'ENABLED' }),
    )
    assert.is(head.ChecksumCRC64NVME, expected, name)
    // Without the mode, no checksum is returned.
    const plain = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))
    assert.is(plain.ChecksumCRC64NVME, undefined, name)
  }
})

test('CRC64NVME: a value in the header that does not match is BadDigest, nothing stored', async () => {
  const body = Buffer.from('checked against crc64nvme')
  const right = await checksumBase64('crc64nvme', body)
  const wrong = await checksumBase64('crc64nvme', Buffer.from('something else'))
  const path = `/${BUCKET}/crc64-wrong`
  const refused = await signedRequest(server.url, {
    method: 'PUT',
    path,
    headers: { 'x-amz-checksum-crc64nvme': wrong },
    body,
  })
  assert.is(refused.status, 400)
  assert.is(errorCode(refused), 'BadDigest')
  const absent = await signedRequest(server.url, { method: 'HEAD', path })
  assert.is(absent.status, 404)
  const stored = await signedRequest(server.url, {
    method: 'PUT',
    path,
    headers: { 'x-amz-checksum-crc64nvme': right },
    body,
  })
  assert.is(stored.status, 200)
  assert.is(stored.headers['x-amz-checksum-crc64nvme'], right)
  assert.is(stored.headers['x-amz-checksum-type'], 'FULL_OBJECT')
})

test.run()
