/** Goal: conditional writes work as Amazon S3's (2024), with RFC 7232's conditions in full as
 * MinIO and Ceph take them: PutObject, CopyObject and CompleteMultipartUpload with
 * `If-None-Match: *` create only where the key has no current object, with `If-Match` write only
 * over one of the listed ETags (412 PreconditionFailed, 404 NoSuchKey for an absent key),
 * If-None-Match with ETags refuses a write over any of them (weakly compared), If-Unmodified-Since
 * refuses one over an object changed since, If-Modified-Since is ignored; two racing
 * `If-None-Match: *` writes of one key end one 200 and one 412, also when both bodies were on their
 * way before either finished. Method: a real server driven by @aws-sdk/client-s3, and raw signed
 * HTTP for the headers the SDK does not send and to hold two PUT bodies half-sent. */
import { randomBytes } from 'node:crypto'
import * as assert from 'uvu/assert'
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { failure } from '../support/s3-failure.js'
import {
  errorCode,
  halfSentRequest,
  signedRequest,
  type RawResponse,
} from '../support/signed-request.js'
import { sleep } from '../support/wait.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'conditional'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, [
  'PutObject If-None-Match: * creates once',
  'CompleteMultipartUpload: If-None-Match: * and If-Match',
])

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
})

/** A raw signed PUT of `body` to `key` with `headers`: its status and error code. */
async function rawPut(key: string, body: string, headers: Record<string, string>) {
  const answer = await signedRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/${key}`,
    headers,
    body,
  })
  return { status: answer.status, code: errorCode(answer) ?? null }
}

test('PutObject: a failed condition is 412 before anything about its body', async () => {
  // One order on a node and in a cluster: the condition is checked before the body is read.
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'first-check', Body: 'kept' }))
  const wrongMd5 = Buffer.from('0123456789abcdef').toString('base64')
  const refused = await rawPut('first-check', 'other', {
    'if-none-match': '*',
    'content-md5': wrongMd5,
  })
  assert.equal(refused, { status: 412, code: 'PreconditionFailed' })
  const digest = await rawPut('first-check', 'other', { 'content-md5': wrongMd5 })
  assert.equal(digest, { status: 400, code: 'BadDigest' })
  assert.is(await read('first-check'), 'kept')
})

test('PutObject If-None-Match with ETags: 412 over any of them, weak or not', async () => {
  const first = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'inm', Body: 'v1' }))
  const etag = first.ETag ?? ''
  const bare = etag.replace(/"/g, '')
  const refused = { status: 412, code: 'PreconditionFailed' }
  for (const header of [etag, `"other", ${etag}`, `W/${etag}`, bare]) {
    assert.equal(await rawPut('inm', 'x', { 'if-none-match': header }), refused, header)
  }
  assert.is(await read('inm'), 'v1')
  const written = await s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: 'inm',
      Body: 'v2',
      IfNoneMatch: '"other", "more"',
    }),
  )
  assert.is.not(written.ETag, etag)
  assert.is(await read('inm'), 'v2')
  // A key without an object matches no ETag: the write goes through.
  assert.equal(await rawPut('inm-absent', 'new', { 'if-none-match': etag }), {
    status: 200,
    code: null,
  })
  assert.is(await read('inm-absent'), 'new')
})

test('PutObject If-Match, a list or *, compared strongly: a weak ETag fails', async () => {
  const first = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'im', Body: 'v1' }))
  const etag = first.ETag ?? ''
  assert.equal(await rawPut('im', 'x', { 'if-match': `W/${etag}` }), {
    status: 412,
    code: 'PreconditionFailed',
  })
  const listed = await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: 'im', Body: 'v2', IfMatch: `"other", ${etag}` }),
  )
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'im', Body: 'v3', IfMatch: '*' }))
  assert.is(await read('im'), 'v3')
  const stale = await failure(() =>
    s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'im', Body: 'v4', IfMatch: listed.ETag })),
  )
  assert.equal(stale, { name: 'PreconditionFailed', status: 412 })
  assert.equal(await rawPut('im-absent', 'x', { 'if-match': '*' }), {
    status: 404,
    code: 'NoSuchKey',
  })
})

test('PutObject If-Unmodified-Since applies unless If-Match; If-Modified-Since not', async () => {
  const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'ius', Body: 'v1' }))
  const head = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'ius' }))
  await head.Body?.transformToString()
  const modifiedMs = head.LastModified?.getTime() ?? 0
  const before = new Date(modifiedMs - 60_000).toUTCString()
  const after = new Date(modifiedMs + 60_000).toUTCString()
  assert.equal(await rawPut('ius', 'x', { 'if-unmodified-since': before }), {
    status: 412,
    code: 'PreconditionFailed',
  })
  assert.is(await read('ius'), 'v1')
  // If-Match decides alone when present (RFC 7232 section 6).
  const matched = await rawPut('ius', 'v2', {
    'if-unmodified-since': before,
    'if-match': put.ETag ?? '',
  })
  assert.equal(matched, { status: 200, code: null })
  assert.equal(await rawPut('ius', 'v3', { 'if-unmodified-since': after }), {
    status: 200,
    code: null,
  })
  // A GET would answer 304 to this date; a write is not held by it.
  assert.equal(await rawPut('ius', 'v4', { 'if-modified-since': after }), {
    status: 200,
    code: null,
  })
  assert.is(await read('ius'), 'v4')
  // A key without an object has no date to compare: the condition does not apply.
  assert.equal(await rawPut('ius-absent', 'new', { 'if-unmodified-since': before }), {
    status: 200,
    code: null,
  })
})

test('CopyObject: If-None-Match, If-Match and If-Unmodified-Since on the target', async () => {
  const source = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'src', Body: 'copied' }))
  const target = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'dst', Body: 'kept' }))
  const copy = (extra: object, Key = 'dst') =>
    s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key, CopySource: `${BUCKET}/src`, ...extra }))
  const taken = await failure(() => copy({ IfNoneMatch: '*' }))
  assert.equal(taken, { name: 'PreconditionFailed', status: 412 })
  const listed = await failure(() => copy({ IfNoneMatch: `"x", ${target.ETag}` }))
  assert.equal(listed, { name: 'PreconditionFailed', status: 412 })
  const stale = await failure(() => copy({ IfMatch: source.ETag }))
  assert.equal(stale, { name: 'PreconditionFailed', status: 412 })
  const absent = await failure(() => copy({ IfMatch: '*' }, 'dst-absent'))
  assert.equal(absent, { name: 'NoSuchKey', status: 404 })
  assert.is(await read('dst'), 'kept')
  // The source's conditions are the x-amz-copy-source-if-* headers: both sets are checked.
  await copy({ IfMatch: target.ETag, CopySourceIfMatch: source.ETag })
  assert.is(await read('dst'), 'copied')
  await copy({ IfNoneMatch: '*' }, 'dst-new')
  assert.is(await read('dst-new'), 'copied')
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

test('CompleteMultipartUpload: If-None-Match with ETags, If-Match with a list', async () => {
  const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'mp-list', Body: 'plain' }))
  const upload = await uploadOf('mp-list', 'from parts')
  const refused = await failure(() =>
    completeWith('mp-list', upload, { IfNoneMatch: `"x", W/${put.ETag}` }),
  )
  assert.equal(refused, { name: 'PreconditionFailed', status: 412 })
  assert.is(await read('mp-list'), 'plain')
  await completeWith('mp-list', upload, { IfMatch: `"x", ${put.ETag}` })
  assert.is(await read('mp-list'), 'from parts')
})

test('CompleteMultipartUpload: parts checked first; sent again, the same answer', async () => {
  // One order on a node and in a cluster: a wrong part list is InvalidPart before any condition.
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'mp-again', Body: 'plain' }))
  const upload = await uploadOf('mp-again', 'from parts')
  const wrong = { ...upload, etag: '"0123456789abcdef0123456789abcdef"' }
  const listed = await failure(() => completeWith('mp-again', wrong, { IfNoneMatch: '*' }))
  assert.equal(listed, { name: 'InvalidPart', status: 400 })
  const current = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'mp-again' }))
  const first = await completeWith('mp-again', upload, { IfMatch: current.ETag })
  // A client whose answer was lost sends the complete again: its own write is no refusal.
  const again = await completeWith('mp-again', upload, { IfMatch: current.ETag })
  assert.is(again.ETag, first.ETag)
  assert.is(await read('mp-again'), 'from parts')
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
