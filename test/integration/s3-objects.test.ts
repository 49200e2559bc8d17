/** Goal: the core S3 object API behaves as Amazon S3 for a real client. Method: start the real
 * server as a child process and drive it with @aws-sdk/client-s3 v3 (default checksum behaviour):
 * buckets, put/get/head/delete with metadata, ranges, conditions, copy, batch delete, odd keys. */
import * as assert from 'uvu/assert'
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketLocationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { createHash, randomBytes } from 'node:crypto'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(undefined, [
  'bucket lifecycle: create, list',
  'put and get round-trip bytes',
  'ranges: ',
  'conditional GET: ',
  'missing objects and buckets',
  'copy: COPY keeps metadata',
  'DeleteObjects removes many keys',
])

async function errorOf(
  promise: Promise<unknown>,
): Promise<{ name: string; status: number | undefined }> {
  try {
    await promise
  } catch (error) {
    const e = error as { name: string; $metadata?: { httpStatusCode?: number } }
    return { name: e.name, status: e.$metadata?.httpStatusCode }
  }
  throw new Error('expected the request to fail')
}

async function bytesOf(response: { Body?: unknown }): Promise<Buffer> {
  const body = response.Body as { transformToByteArray(): Promise<Uint8Array> }
  return Buffer.from(await body.transformToByteArray())
}

test('bucket lifecycle: create, list with creation date, head, location, delete', async () => {
  const before = Date.now() - 1000
  await s3.send(new CreateBucketCommand({ Bucket: 'alpha' }))
  const listed = await s3.send(new ListBucketsCommand({}))
  const alpha = listed.Buckets?.find((b) => b.Name === 'alpha')
  assert.ok(alpha)
  assert.ok((alpha.CreationDate?.getTime() ?? 0) >= before)
  await s3.send(new HeadBucketCommand({ Bucket: 'alpha' }))
  const location = await s3.send(new GetBucketLocationCommand({ Bucket: 'alpha' }))
  assert.ok(!location.LocationConstraint)
  // Its owner re-creating it in us-east-1 gets 200, as from Amazon S3 there (s3-buckets: 409
  // elsewhere, and for another owner).
  const again = await s3.send(new CreateBucketCommand({ Bucket: 'alpha' }))
  assert.is(again.$metadata.httpStatusCode, 200)
  await s3.send(new DeleteBucketCommand({ Bucket: 'alpha' }))
  const gone = await errorOf(s3.send(new HeadBucketCommand({ Bucket: 'alpha' })))
  assert.is(gone.status, 404)
})

test('invalid bucket names are refused with InvalidBucketName', async () => {
  for (const name of ['ab', 'Upper', '-start', 'end-', 'a..b', '192.168.1.1', 'a'.repeat(64)]) {
    const failure = await errorOf(s3.send(new CreateBucketCommand({ Bucket: name })))
    assert.is(failure.status, 400, name)
    assert.is(failure.name, 'InvalidBucketName', name)
  }
})

test('put and get round-trip bytes, metadata and content headers', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'objects' }))
  const body = randomBytes(300 * 1024)
  const put = await s3.send(
    new PutObjectCommand({
      Bucket: 'objects',
      Key: 'dir/file.bin',
      Body: body,
      ContentType: 'application/x-test',
      ContentDisposition: 'attachment; filename="f.bin"',
      CacheControl: 'max-age=60',
      ContentEncoding: 'identity',
      Metadata: { color: 'blue', 'two-words': 'a b' },
    }),
  )
  const md5 = createHash('md5').update(body).digest('hex')
  assert.is(put.ETag, `"${md5}"`)
  const got = await s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'dir/file.bin' }))
  assert.ok((await bytesOf(got)).equals(body))
  assert.is(got.ContentType, 'application/x-test')
  assert.is(got.ContentDisposition, 'attachment; filename="f.bin"')
  assert.is(got.CacheControl, 'max-age=60')
  assert.is(got.ContentLength, body.length)
  assert.equal(got.Metadata, { color: 'blue', 'two-words': 'a b' })
  const head = await s3.send(new HeadObjectCommand({ Bucket: 'objects', Key: 'dir/file.bin' }))
  assert.is(head.ETag, `"${md5}"`)
  assert.is(head.ContentLength, body.length)
  assert.ok(head.LastModified instanceof Date)
})

test('small and empty objects round-trip', async () => {
  for (const size of [0, 1, 4096, 64 * 1024, 64 * 1024 + 1]) {
    const body = randomBytes(size)
    await s3.send(new PutObjectCommand({ Bucket: 'objects', Key: `size-${size}`, Body: body }))
    const got = await s3.send(new GetObjectCommand({ Bucket: 'objects', Key: `size-${size}` }))
    assert.ok((await bytesOf(got)).equals(body), `size ${size}`)
  }
})

test('ranges: first bytes, open-ended, suffix, across chunks, unsatisfiable', async () => {
  const body = randomBytes(700 * 1024)
  await s3.send(new PutObjectCommand({ Bucket: 'objects', Key: 'ranged', Body: body }))
  const cases: [string, number, number][] = [
    ['bytes=0-9', 0, 9],
    ['bytes=100-', 100, body.length - 1],
    ['bytes=-500', body.length - 500, body.length - 1],
    ['bytes=262000-524500', 262000, 524500],
  ]
  for (const [range, start, end] of cases) {
    const got = await s3.send(
      new GetObjectCommand({ Bucket: 'objects', Key: 'ranged', Range: range }),
    )
    assert.is(got.ContentRange, `bytes ${start}-${end}/${body.length}`, range)
    assert.ok((await bytesOf(got)).equals(body.subarray(start, end + 1)), range)
  }
  const failure = await errorOf(
    s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'ranged', Range: 'bytes=900000-' })),
  )
  assert.is(failure.status, 416)
  assert.is(failure.name, 'InvalidRange')
})

test('conditional GET: If-None-Match 304, If-Match 412, dates', async () => {
  const put = await s3.send(new PutObjectCommand({ Bucket: 'objects', Key: 'cond', Body: 'x' }))
  const notModified = await errorOf(
    s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'cond', IfNoneMatch: put.ETag })),
  )
  assert.is(notModified.status, 304)
  const failed = await errorOf(
    s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'cond', IfMatch: '"nope"' })),
  )
  assert.is(failed.status, 412)
  const future = new Date(Date.now() + 3600_000)
  const unmodified = await errorOf(
    s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'cond', IfModifiedSince: future })),
  )
  assert.is(unmodified.status, 304)
  const ok = await s3.send(
    new GetObjectCommand({ Bucket: 'objects', Key: 'cond', IfMatch: put.ETag }),
  )
  assert.is((await bytesOf(ok)).toString(), 'x')
})

test('response-* overrides change the GET headers', async () => {
  const got = await s3.send(
    new GetObjectCommand({
      Bucket: 'objects',
      Key: 'cond',
      ResponseContentType: 'text/x-override',
      ResponseContentDisposition: 'inline',
    }),
  )
  assert.is(got.ContentType, 'text/x-override')
  assert.is(got.ContentDisposition, 'inline')
})

test('missing objects and buckets answer NoSuchKey and NoSuchBucket', async () => {
  const key = await errorOf(s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'absent' })))
  assert.is(key.name, 'NoSuchKey')
  assert.is(key.status, 404)
  const bucket = await errorOf(s3.send(new GetObjectCommand({ Bucket: 'nobucket', Key: 'k' })))
  assert.is(bucket.name, 'NoSuchBucket')
})

test('delete is idempotent and a non-empty bucket cannot be deleted', async () => {
  await s3.send(new DeleteObjectCommand({ Bucket: 'objects', Key: 'never-existed' }))
  await s3.send(new PutObjectCommand({ Bucket: 'objects', Key: 'doomed', Body: 'x' }))
  await s3.send(new DeleteObjectCommand({ Bucket: 'objects', Key: 'doomed' }))
  await s3.send(new DeleteObjectCommand({ Bucket: 'objects', Key: 'doomed' }))
  const failure = await errorOf(s3.send(new DeleteBucketCommand({ Bucket: 'objects' })))
  assert.is(failure.status, 409)
  assert.is(failure.name, 'BucketNotEmpty')
})

test('copy: COPY keeps metadata, REPLACE replaces it, copy-source-if-match counts', async () => {
  const put = await s3.send(
    new PutObjectCommand({
      Bucket: 'objects',
      Key: 'original',
      Body: 'copy me',
      ContentType: 'text/plain',
      Metadata: { origin: 'yes' },
    }),
  )
  await s3.send(
    new CopyObjectCommand({ Bucket: 'objects', Key: 'copy 1', CopySource: 'objects/original' }),
  )
  const copied = await s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'copy 1' }))
  assert.is((await bytesOf(copied)).toString(), 'copy me')
  assert.is(copied.ContentType, 'text/plain')
  assert.equal(copied.Metadata, { origin: 'yes' })
  assert.is(copied.ETag, put.ETag)
  await s3.send(
    new CopyObjectCommand({
      Bucket: 'objects',
      Key: 'copy 2',
      CopySource: 'objects/original',
      MetadataDirective: 'REPLACE',
      ContentType: 'text/x-new',
      Metadata: { fresh: '1' },
    }),
  )
  const replaced = await s3.send(new HeadObjectCommand({ Bucket: 'objects', Key: 'copy 2' }))
  assert.is(replaced.ContentType, 'text/x-new')
  assert.equal(replaced.Metadata, { fresh: '1' })
  const failed = await errorOf(
    s3.send(
      new CopyObjectCommand({
        Bucket: 'objects',
        Key: 'copy 3',
        CopySource: 'objects/original',
        CopySourceIfMatch: '"0000"',
      }),
    ),
  )
  assert.is(failed.status, 412)
  const self = await errorOf(
    s3.send(
      new CopyObjectCommand({ Bucket: 'objects', Key: 'original', CopySource: 'objects/original' }),
    ),
  )
  assert.is(self.status, 400)
})

test('copy of a multipart object: one new object, its ETag the MD5 of its bytes', async () => {
  // Amazon S3: an object made by a copy has the MD5 of its data as ETag; on a node and in a
  // cluster alike, whatever a copy moves underneath.
  const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1000)]
  const at = { Bucket: 'objects', Key: 'multipart source' }
  const created = await s3.send(new CreateMultipartUploadCommand(at))
  const done = []
  for (const [index, Body] of parts.entries()) {
    const PartNumber = index + 1
    const part = await s3.send(
      new UploadPartCommand({ ...at, UploadId: created.UploadId, PartNumber, Body }),
    )
    done.push({ PartNumber, ETag: part.ETag ?? '' })
  }
  const completed = await s3.send(
    new CompleteMultipartUploadCommand({
      ...at,
      UploadId: created.UploadId,
      MultipartUpload: { Parts: done },
    }),
  )
  assert.ok(completed.ETag?.endsWith('-2"'))
  const copied = await s3.send(
    new CopyObjectCommand({
      Bucket: 'objects',
      Key: 'multipart copy',
      CopySource: 'objects/multipart source',
    }),
  )
  const whole = Buffer.concat(parts)
  const etag = `"${createHash('md5').update(whole).digest('hex')}"`
  assert.is(copied.CopyObjectResult?.ETag, etag)
  const read = await s3.send(new GetObjectCommand({ Bucket: 'objects', Key: 'multipart copy' }))
  assert.is(read.ETag, etag)
  assert.ok((await bytesOf(read)).equals(whole))
})

test('odd keys are stored, listed and fetched exactly as given', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'oddkeys' }))
  const keys = [
    '../../etc/passwd',
    'a//b',
    '%2e%2e/x',
    'with space',
    'plus+sign',
    'ünïcødé/日本語',
    'tab\there',
    'ctrl\u0001char',
    '~tilde*star(paren)',
    '007',
  ]
  for (const key of keys) {
    await s3.send(new PutObjectCommand({ Bucket: 'oddkeys', Key: key, Body: `body of ${key}` }))
  }
  for (const key of keys) {
    const got = await s3.send(new GetObjectCommand({ Bucket: 'oddkeys', Key: key }))
    assert.is((await bytesOf(got)).toString(), `body of ${key}`, key)
  }
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'oddkeys' }))
  const names = (listed.Contents ?? []).map((c) => c.Key)
  assert.equal(
    names,
    [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
  )
})

test('DeleteObjects removes many keys and reports each, Quiet reports none', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'batch' }))
  for (let i = 0; i < 10; i++) {
    await s3.send(new PutObjectCommand({ Bucket: 'batch', Key: `k${i}`, Body: 'x' }))
  }
  const loud = await s3.send(
    new DeleteObjectsCommand({
      Bucket: 'batch',
      Delete: { Objects: [{ Key: 'k0' }, { Key: 'k1' }, { Key: 'missing' }] },
    }),
  )
  assert.equal((loud.Deleted ?? []).map((d) => d.Key).sort(), ['k0', 'k1', 'missing'])
  const quiet = await s3.send(
    new DeleteObjectsCommand({
      Bucket: 'batch',
      Delete: { Quiet: true, Objects: Array.from({ length: 8 }, (_, i) => ({ Key: `k${i + 2}` })) },
    }),
  )
  assert.is(quiet.Deleted, undefined)
  const left = await s3.send(new ListObjectsV2Command({ Bucket: 'batch' }))
  assert.is(left.KeyCount, 0)
})

test('keys over 1024 bytes and metadata over 2 KiB are refused', async () => {
  const long = await errorOf(
    s3.send(new PutObjectCommand({ Bucket: 'objects', Key: 'k'.repeat(1025), Body: 'x' })),
  )
  assert.is(long.name, 'KeyTooLongError')
  const meta = await errorOf(
    s3.send(
      new PutObjectCommand({
        Bucket: 'objects',
        Key: 'm',
        Body: 'x',
        Metadata: { big: 'v'.repeat(2100) },
      }),
    ),
  )
  assert.is(meta.name, 'MetadataTooLarge')
})

test('wrong secret and unknown access key are refused', async () => {
  const wrong = server.client({ secretAccessKey: 'not-the-secret-not-the-secret-not-the-sec' })
  const mismatch = await errorOf(wrong.send(new ListBucketsCommand({})))
  assert.is(mismatch.name, 'SignatureDoesNotMatch')
  wrong.destroy()
  const unknown = server.client({ accessKeyId: 'SVCAKUNKNOWN00000000000' })
  const failure = await errorOf(unknown.send(new ListBucketsCommand({})))
  assert.is(failure.name, 'InvalidAccessKeyId')
  unknown.destroy()
})

test.run()
