/** Goal: the multipart behaviours conformance suites and SDKs find, as Amazon S3 has them: GET/HEAD
 * `partNumber` past the object's parts answers 400; DeleteBucket of a bucket with only uploads in
 * progress succeeds and removes them. Method: a real server driven by @aws-sdk/client-s3. */
import { randomBytes } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3'
import type { StatsRecord } from '../../http/stats.js'
import { failure } from '../support/s3-failure.js'
import { startServer, type TestServer } from '../support/server.js'

const BUCKET = 'fidelity'

let server: TestServer
let s3: S3Client

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

async function create(key: string, bucket = BUCKET): Promise<string> {
  const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))
  return created.UploadId ?? ''
}

async function uploadPart(
  key: string,
  uploadId: string,
  body: Uint8Array | string,
  bucket = BUCKET,
): Promise<CompletedPart> {
  const at = { Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: 1 }
  const answer = await s3.send(new UploadPartCommand({ ...at, Body: body }))
  return { PartNumber: 1, ETag: answer.ETag ?? '' }
}

test('partNumber of an object not uploaded in parts: 1 is the object, 2 answers 400', async () => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'single', Body: 'single body' }))
  const whole = await s3.send(
    new GetObjectCommand({ Bucket: BUCKET, Key: 'single', PartNumber: 1 }),
  )
  assert.is(await whole.Body?.transformToString(), 'single body')
  const beyond = await failure(() =>
    s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'single', PartNumber: 2 })),
  )
  assert.equal(beyond, { name: 'InvalidPart', status: 400 })
  const head = await failure(() =>
    s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'single', PartNumber: 2 })),
  )
  assert.is(head.status, 400)
  const outside = await failure(() =>
    s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'single', PartNumber: 10_001 })),
  )
  assert.equal(outside, { name: 'InvalidArgument', status: 400 })
})

async function stats(): Promise<StatsRecord> {
  return (await (await fetch(`${server.url}/api/stats`)).json()) as StatsRecord
}

test('DeleteBucket with only uploads in progress deletes it and them', async () => {
  const before = await stats()
  const bucket = 'only-uploads'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  for (const key of ['a', 'b/c']) {
    await uploadPart(key, await create(key, bucket), randomBytes(100 * 1024), bucket)
  }
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }))
  const gone = await failure(() => s3.send(new HeadBucketCommand({ Bucket: bucket })))
  assert.is(gone.status, 404)
  const after = await stats()
  assert.is(after.storage_used_bytes, before.storage_used_bytes, 'the parts were freed')
  assert.is(after.dedup_unique_blobs, before.dedup_unique_blobs)
  // A bucket created again under the name has no uploads.
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))
  assert.is(listed.Uploads?.length ?? 0, 0)
  // An object still keeps a bucket from being deleted, uploads or not.
  await uploadPart('u', await create('u', bucket), 'part', bucket)
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'o', Body: 'object' }))
  const refused = await failure(() => s3.send(new DeleteBucketCommand({ Bucket: bucket })))
  assert.equal(refused, { name: 'BucketNotEmpty', status: 409 })
})

test.run()
