/** Goal: the multipart behaviours conformance suites and SDKs find, as Amazon S3 has them: a
 * retried CompleteMultipartUpload answers the same ETag, location and version; a part uploaded
 * again while its first upload was in flight is the one that finished last, and a complete listing
 * that part number twice (both ETags, in upload order) completes with it; GET/HEAD `partNumber`
 * past the object's parts answers 400; DeleteBucket of a bucket with only uploads in progress
 * succeeds and removes them. Method: a real server driven by @aws-sdk/client-s3, raw signed HTTP
 * to hold a part's body half-sent. */
import { createHash, randomBytes } from 'node:crypto'
import * as assert from 'uvu/assert'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3'
import type { StatsRecord } from '../../http/stats.js'
import { failure } from '../support/s3-failure.js'
import { halfSentRequest } from '../support/signed-request.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'fidelity'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, ['a retried complete answers the same ETag'])

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

function complete(key: string, uploadId: string, parts: CompletedPart[], bucket = BUCKET) {
  return s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId: uploadId,
      MultipartUpload: { Parts: parts },
    }),
  )
}

async function read(key: string): Promise<Buffer> {
  const answer = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
  return Buffer.from((await answer.Body?.transformToByteArray()) ?? [])
}

function md5(bytes: Uint8Array): Buffer {
  return createHash('md5').update(bytes).digest()
}

test('a retried complete answers the same ETag, location and version id', async () => {
  const bucket = 'fidelity-versions'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: bucket,
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
  const uploadId = await create('retried', bucket)
  const parts = [await uploadPart('retried', uploadId, 'retried body', bucket)]
  const first = await complete('retried', uploadId, parts, bucket)
  assert.ok(first.VersionId)
  // The key is written again in between: the retry still answers what the complete did.
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'retried', Body: 'later' }))
  const again = await complete('retried', uploadId, parts, bucket)
  assert.equal(
    [again.ETag, again.Location, again.VersionId, again.Key, again.Bucket],
    [first.ETag, first.Location, first.VersionId, first.Key, first.Bucket],
  )
  // Not the same request: another key, or another list.
  const otherKey = await failure(() => complete('other', uploadId, parts, bucket))
  assert.equal(otherKey, { name: 'NoSuchUpload', status: 404 })
  const otherList = [{ PartNumber: 1, ETag: '"0123456789abcdef0123456789abcdef"' }]
  const otherParts = await failure(() => complete('retried', uploadId, otherList, bucket))
  assert.equal(otherParts, { name: 'NoSuchUpload', status: 404 })
})

test('a part sent again while its first upload is in flight: the last to end counts', async () => {
  // Part A starts first and finishes last; part B is uploaded whole in between (S3 conformance
  // suites' "resend first finishes last").
  const uploadId = await create('resent')
  const a = randomBytes(256 * 1024)
  const b = randomBytes(256 * 1024)
  const first = await halfSentRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/resent`,
    query: { partNumber: '1', uploadId },
    body: a,
  })
  const partB = await uploadPart('resent', uploadId, b)
  const answerA = await first.finish()
  assert.is(answerA.status, 200)
  const partA = { PartNumber: 1, ETag: answerA.headers.etag ?? '' }
  assert.is(partA.ETag, `"${md5(a).toString('hex')}"`)
  // B's ETag alone names a part that is no longer there.
  const stale = await failure(() => complete('resent', uploadId, [partB]))
  assert.equal(stale, { name: 'InvalidPart', status: 400 })
  // Both ETags, in the order the uploads were made: the part number's last entry counts.
  const done = await complete('resent', uploadId, [partB, partA])
  assert.is(done.ETag, `"${md5(md5(a)).toString('hex')}-1"`)
  assert.ok((await read('resent')).equals(a))
})

test('a complete lists a part number once more: the part counts once', async () => {
  const uploadId = await create('twice')
  const part = await uploadPart('twice', uploadId, 'only once')
  const done = await complete('twice', uploadId, [part, part])
  assert.is(done.ETag, `"${md5(md5(Buffer.from('only once'))).toString('hex')}-1"`)
  assert.is((await read('twice')).toString(), 'only once')
  // Descending numbers are still out of order.
  const order = await create('order')
  const at = { Bucket: BUCKET, Key: 'order', UploadId: order }
  const one = await s3.send(
    new UploadPartCommand({ ...at, PartNumber: 1, Body: randomBytes(5 << 20) }),
  )
  const two = await s3.send(new UploadPartCommand({ ...at, PartNumber: 2, Body: 'x' }))
  const reversed = [
    { PartNumber: 2, ETag: two.ETag ?? '' },
    { PartNumber: 1, ETag: one.ETag ?? '' },
  ]
  assert.equal(await failure(() => complete('order', order, reversed)), {
    name: 'InvalidPartOrder',
    status: 400,
  })
})

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
