/** Goal: conditional writes work as Amazon S3's (2024): PutObject and CompleteMultipartUpload with
 * `If-None-Match: *` create only where the key has no current object, with `If-Match` write only
 * over that ETag (412 PreconditionFailed, 404 NoSuchKey for an absent key); two racing
 * `If-None-Match: *` writes of one key end one 200 and one 412, also when both bodies were on their
 * way before either finished. Method: a real server driven by @aws-sdk/client-s3, and raw signed
 * HTTP to hold two PUT bodies half-sent. */
import { randomBytes } from 'node:crypto'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListPartsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { failure } from '../support/s3-failure.js'
import { errorCode, halfSentRequest, type RawResponse } from '../support/signed-request.js'
import { sleep } from '../support/wait.js'
import { s3, server, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'conditional'

useS3Suite(BUCKET)

async function read(key: string, bucket = BUCKET): Promise<string> {
  const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  return (await answer.Body?.transformToString()) ?? ''
}

test('PutObject If-None-Match: * creates once, then answers 412 and keeps the object', async () => {
  const first = await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'once', Body: 'first', IfNoneMatch: '*' }),
  )
  assert.ok(first.ETag)
  const again = await failure(() =>
    s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'once', Body: 'second', IfNoneMatch: '*' }),
    ),
  )
  assert.equal(again, { name: 'PreconditionFailed', status: 412 })
  assert.is(await read('once'), 'first')
  // Any other If-None-Match value on a write is not something S3 implements.
  const other = await failure(() =>
    s3.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'once', Body: 'x', IfNoneMatch: first.ETag }),
    ),
  )
  assert.equal(other, { name: 'NotImplemented', status: 501 })
})

test('PutObject If-Match writes over that ETag only; 404 NoSuchKey without an object', async () => {
  const first = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'cas', Body: 'v1' }))
  const second = await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'cas', Body: 'v2', IfMatch: first.ETag }),
  )
  assert.is.not(second.ETag, first.ETag)
  const stale = await failure(() =>
    s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'cas', Body: 'v3', IfMatch: first.ETag })),
  )
  assert.equal(stale, { name: 'PreconditionFailed', status: 412 })
  assert.is(await read('cas'), 'v2')
  const absent = await failure(() =>
    s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'nothing', Body: 'v', IfMatch: '"abc"' })),
  )
  assert.equal(absent, { name: 'NoSuchKey', status: 404 })
  await failure(() => read('nothing'))
  assert.equal(await failure(() => read('nothing')), { name: 'NoSuchKey', status: 404 })
})

test('a delete marker is no current object: If-None-Match: * writes over it', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'conditional-versions' }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'conditional-versions',
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
  const at = { Bucket: 'conditional-versions', Key: 'k' }
  await s3.send(new PutObjectCommand({ ...at, Body: 'old' }))
  const taken = await failure(() =>
    s3.send(new PutObjectCommand({ ...at, Body: 'x', IfNoneMatch: '*' })),
  )
  assert.equal(taken, { name: 'PreconditionFailed', status: 412 })
  await s3.send(new DeleteObjectCommand(at))
  const matched = await failure(() =>
    s3.send(new PutObjectCommand({ ...at, Body: 'x', IfMatch: '*' })),
  )
  assert.equal(matched, { name: 'NoSuchKey', status: 404 })
  await s3.send(new PutObjectCommand({ ...at, Body: 'new', IfNoneMatch: '*' }))
  assert.is(await read('k', 'conditional-versions'), 'new')
})

test('two racing If-None-Match: * PUTs of one key: one 200, one 412', async () => {
  // Bodies over the inline bound travel on streams, so the store takes both requests in before
  // either body is whole: a check made before the body would let both through.
  for (let round = 0; round < 3; round++) {
    const key = `race-${round}`
    const bodies = [randomBytes(512 * 1024), randomBytes(512 * 1024)]
    const puts = await Promise.all(
      bodies.map((body) =>
        halfSentRequest(server.url, {
          method: 'PUT',
          path: `/${BUCKET}/${key}`,
          headers: { 'if-none-match': '*' },
          body,
        }),
      ),
    )
    // Both half bodies are on their way; the pause only makes the overlap likelier.
    await sleep(100)
    const answers = await Promise.all(puts.map((put) => put.finish()))
    const statuses = answers.map((answer) => answer.status).sort()
    assert.equal(statuses, [200, 412], `round ${round}`)
    const refused = answers.find((answer) => answer.status === 412) as RawResponse
    assert.is(errorCode(refused), 'PreconditionFailed')
    const winner = bodies[answers.findIndex((answer) => answer.status === 200)] as Buffer
    const stored = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
    const bytes = Buffer.from((await stored.Body?.transformToByteArray()) ?? [])
    assert.ok(bytes.equals(winner), 'the object is the body of the write that won')
  }
})

async function uploadOf(key: string, body: string): Promise<{ id: string; etag: string }> {
  const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }))
  const id = created.UploadId ?? ''
  const part = await s3.send(
    new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId: id, PartNumber: 1, Body: body }),
  )
  return { id, etag: part.ETag ?? '' }
}

function completeWith(key: string, upload: { id: string; etag: string }, extra: object = {}) {
  return s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: key,
      UploadId: upload.id,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: upload.etag }] },
      ...extra,
    }),
  )
}

test('CompleteMultipartUpload: If-None-Match: * and If-Match; a refused one stays', async () => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'mp', Body: 'plain' }))
  const upload = await uploadOf('mp', 'from parts')
  const refused = await failure(() => completeWith('mp', upload, { IfNoneMatch: '*' }))
  assert.equal(refused, { name: 'PreconditionFailed', status: 412 })
  assert.is(await read('mp'), 'plain')
  // Nothing was committed: the upload and its part are still there.
  const parts = await s3.send(
    new ListPartsCommand({ Bucket: BUCKET, Key: 'mp', UploadId: upload.id }),
  )
  assert.is(parts.Parts?.length, 1)
  const stale = await failure(() => completeWith('mp', upload, { IfMatch: '"0123456789abcdef"' }))
  assert.equal(stale, { name: 'PreconditionFailed', status: 412 })
  const current = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'mp' }))
  await current.Body?.transformToString()
  await completeWith('mp', upload, { IfMatch: current.ETag })
  assert.is(await read('mp'), 'from parts')

  const absent = await uploadOf('mp-absent', 'x')
  const noKey = await failure(() => completeWith('mp-absent', absent, { IfMatch: '"abc"' }))
  assert.equal(noKey, { name: 'NoSuchKey', status: 404 })
})

test('two racing completes with If-None-Match: * of one key: one 200, one 412', async () => {
  const uploads = [await uploadOf('mp-race', 'one'), await uploadOf('mp-race', 'two')]
  const outcomes = await Promise.all(
    uploads.map((upload) => failure(() => completeWith('mp-race', upload, { IfNoneMatch: '*' }))),
  )
  const names = outcomes.map((outcome) => outcome.name).sort()
  assert.equal(names, ['PreconditionFailed', 'no error'])
  const won = outcomes.findIndex((outcome) => outcome.name === 'no error')
  assert.is(await read('mp-race'), won === 0 ? 'one' : 'two')
})

test.run()
