/** Goal: the additional checksums behave as Amazon S3's for a real client: CRC64NVME on single
 * PUTs (in a header and as an aws-chunked trailer), returned by GET and HEAD with
 * x-amz-checksum-mode: ENABLED together with x-amz-checksum-type; multipart uploads created with a
 * checksum algorithm and type (every pair S3 allows), their parts' checksums checked (a wrong one
 * is BadDigest, streamed or not) and listed, and the whole object's COMPOSITE (with its -N) or
 * FULL_OBJECT checksum and type from Complete, GET/HEAD and GetObjectAttributes, a part's own from
 * GET/HEAD with partNumber; a wrong whole checksum named at Complete is BadDigest.
 * GetObjectAttributes is also tested on its own (attributes, versions, errors). Method: the real
 * server as a child process, driven by @aws-sdk/client-s3 v3 with ChecksumAlgorithm set (the SDK
 * validates the checksums it gets back), expected values computed independently (node:crypto,
 * whole-body CRCs), and raw signed HTTP where the SDK cannot say it. */
import * as assert from 'uvu/assert'
import { Readable } from 'node:stream'
import { createHash, randomBytes } from 'node:crypto'
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectAttributesCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type ChecksumAlgorithm,
  type ChecksumType,
} from '@aws-sdk/client-s3'
import { checksumBase64 } from '../../protocol/checksums.js'
import { failure } from '../support/s3-failure.js'
import { errorCode, signedRequest } from '../support/signed-request.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

const BUCKET = 'sums'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, [
  'CRC64NVME: a PUT in a header and as a trailer',
  'multipart checksums: parts checked and listed',
])

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

test('CRC64NVME: a header value that does not match is BadDigest, nothing stored', async () => {
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

const MiB = 1024 * 1024
const ALL_ATTRIBUTES = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const

/** The SDK's output member of an algorithm: ChecksumCRC32, ChecksumCRC64NVME, ChecksumSHA256... */
function member(algorithm: ChecksumAlgorithm): `Checksum${ChecksumAlgorithm}` {
  return `Checksum${algorithm}`
}

type Sums = Partial<Record<`Checksum${ChecksumAlgorithm}`, string>>

/** What S3 documents: COMPOSITE is the algorithm over the raw part checksums, then -N. */
async function expectedWhole(
  algorithm: ChecksumAlgorithm,
  type: ChecksumType,
  parts: Buffer[],
): Promise<string> {
  const lower = algorithm.toLowerCase() as 'crc32' | 'crc32c' | 'crc64nvme' | 'sha1' | 'sha256'
  if (type === 'FULL_OBJECT') return checksumBase64(lower, Buffer.concat(parts))
  const raw = []
  for (const part of parts) raw.push(Buffer.from(await checksumBase64(lower, part), 'base64'))
  if (lower === 'sha1' || lower === 'sha256') {
    return `${createHash(lower).update(Buffer.concat(raw)).digest('base64')}-${parts.length}`
  }
  return `${await checksumBase64(lower, Buffer.concat(raw))}-${parts.length}`
}

const MULTIPART_CASES: Array<[ChecksumAlgorithm, ChecksumType]> = [
  ['CRC32', 'COMPOSITE'],
  ['CRC32C', 'FULL_OBJECT'],
  ['CRC64NVME', 'FULL_OBJECT'],
  ['SHA256', 'COMPOSITE'],
]

test('multipart checksums: parts checked and listed, the whole returned everywhere', async () => {
  const parts = [randomBytes(5 * MiB), randomBytes(300_000)]
  for (const [algorithm, type] of MULTIPART_CASES) {
    const label = `${algorithm} ${type}`
    const Key = `mp-${algorithm}-${type}`
    const created = await s3.send(
      new CreateMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        ChecksumAlgorithm: algorithm,
        ChecksumType: type,
      }),
    )
    assert.is(created.ChecksumAlgorithm, algorithm, label)
    assert.is(created.ChecksumType, type, label)
    const UploadId = created.UploadId
    const completed = []
    for (const [index, Body] of parts.entries()) {
      const PartNumber = index + 1
      const uploaded = await s3.send(
        new UploadPartCommand({
          Bucket: BUCKET,
          Key,
          UploadId,
          PartNumber,
          Body,
          ChecksumAlgorithm: algorithm,
        }),
      )
      const lower = algorithm.toLowerCase() as 'crc32'
      const sum = await checksumBase64(lower, Body)
      assert.is((uploaded as Sums)[member(algorithm)], sum, label)
      completed.push({ PartNumber, ETag: uploaded.ETag, [member(algorithm)]: sum })
    }
    const listed = await s3.send(new ListPartsCommand({ Bucket: BUCKET, Key, UploadId }))
    assert.is(listed.ChecksumAlgorithm, algorithm, label)
    assert.is(listed.ChecksumType, type, label)
    for (const [index, part] of (listed.Parts ?? []).entries()) {
      const sum = completed[index]?.[member(algorithm)]
      assert.is((part as Sums)[member(algorithm)], sum, label)
    }
    const whole = await expectedWhole(algorithm, type, parts)
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        UploadId,
        MultipartUpload: { Parts: completed },
      }),
    )
    assert.is((done as Sums)[member(algorithm)], whole, label)
    assert.is(done.ChecksumType, type, label)
    // A retried complete (its answer lost) answers the same, checksum included.
    const retried = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        UploadId,
        MultipartUpload: { Parts: completed },
      }),
    )
    assert.is((retried as Sums)[member(algorithm)], whole, `${label} retried`)
    assert.is(retried.ChecksumType, type, `${label} retried`)
    assert.is(retried.ETag, done.ETag, `${label} retried`)
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key, ChecksumMode: 'ENABLED' }),
    )
    assert.is((head as Sums)[member(algorithm)], whole, label)
    assert.is(head.ChecksumType, type, label)
    // The SDK checks a FULL_OBJECT checksum against the body it reads.
    const got = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key, ChecksumMode: 'ENABLED' }),
    )
    assert.ok((await bytesOf(got)).equals(Buffer.concat(parts)), label)
    const attributes = await s3.send(
      new GetObjectAttributesCommand({
        Bucket: BUCKET,
        Key,
        ObjectAttributes: [...ALL_ATTRIBUTES],
      }),
    )
    assert.is((attributes.Checksum as Sums)[member(algorithm)], whole, label)
    assert.is(attributes.Checksum?.ChecksumType, type, label)
    assert.is(attributes.ObjectParts?.TotalPartsCount, 2, label)
    assert.is(attributes.ObjectParts?.IsTruncated, false, label)
    const listedParts = attributes.ObjectParts?.Parts ?? []
    assert.equal(
      listedParts.map((part) => [part.PartNumber, part.Size, (part as Sums)[member(algorithm)]]),
      completed.map((part, index) => [
        part.PartNumber,
        parts[index]?.length,
        part[member(algorithm)],
      ]),
      label,
    )
  }
})

test('multipart checksums: the refusals S3 answers', async () => {
  const bad = await failure(() =>
    s3.send(
      new CreateMultipartUploadCommand({
        Bucket: BUCKET,
        Key: 'refused',
        ChecksumAlgorithm: 'SHA1',
        ChecksumType: 'FULL_OBJECT',
      }),
    ),
  )
  assert.is(bad.name, 'InvalidRequest')
  const Key = 'mp-refusals'
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: BUCKET, Key, ChecksumAlgorithm: 'SHA256' }),
  )
  const Body = Buffer.from('one small part')
  const upload = (sum: { ChecksumAlgorithm: ChecksumAlgorithm } | { ChecksumSHA256: string }) =>
    s3.send(new UploadPartCommand({ Bucket: BUCKET, Key, UploadId, PartNumber: 1, Body, ...sum }))
  const other = await failure(() => upload({ ChecksumAlgorithm: 'CRC32' }))
  assert.is(other.name, 'InvalidRequest')
  assert.is(other.status, 400)
  const otherBytes = await checksumBase64('sha256', Buffer.from('other bytes'))
  const wrong = await failure(() => upload({ ChecksumSHA256: otherBytes }))
  assert.is(wrong.name, 'BadDigest')
  const part = await upload({ ChecksumAlgorithm: 'SHA256' })
  const complete = (Parts: object[]) =>
    s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        UploadId,
        MultipartUpload: { Parts },
      }),
    )
  const missing = await failure(() => complete([{ PartNumber: 1, ETag: part.ETag }]))
  assert.is(missing.name, 'InvalidRequest')
  const otherSum = await checksumBase64('sha256', Buffer.from('x'))
  const mismatch = await failure(() =>
    complete([{ PartNumber: 1, ETag: part.ETag, ChecksumSHA256: otherSum }]),
  )
  assert.is(mismatch.name, 'InvalidPart')
  const done = await complete([
    { PartNumber: 1, ETag: part.ETag, ChecksumSHA256: part.ChecksumSHA256 },
  ])
  assert.is(done.ChecksumSHA256, await expectedWhole('SHA256', 'COMPOSITE', [Body]))
})

/** Every algorithm and type S3 allows for a multipart upload (CRC64NVME is FULL_OBJECT only, SHA-1
 * and SHA-256 COMPOSITE only). */
const EVERY_UPLOAD_CHECKSUM: Array<[ChecksumAlgorithm, ChecksumType]> = [
  ['CRC32', 'COMPOSITE'],
  ['CRC32', 'FULL_OBJECT'],
  ['CRC32C', 'COMPOSITE'],
  ['CRC32C', 'FULL_OBJECT'],
  ['CRC64NVME', 'FULL_OBJECT'],
  ['SHA1', 'COMPOSITE'],
  ['SHA256', 'COMPOSITE'],
]

test('multipart checksums: every algorithm answers its type, a composite its -N', async () => {
  const parts = [randomBytes(5 * MiB), randomBytes(1000)]
  const last = parts.length
  for (const [algorithm, type] of EVERY_UPLOAD_CHECKSUM) {
    const label = `${algorithm} ${type}`
    const Key = `every-${algorithm}-${type}`
    // The type is left to its default where S3 has one (COMPOSITE, FULL_OBJECT for CRC64NVME).
    const named = type === 'COMPOSITE' || algorithm === 'CRC64NVME' ? {} : { ChecksumType: type }
    const { UploadId } = await s3.send(
      new CreateMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        ChecksumAlgorithm: algorithm,
        ...named,
      }),
    )
    const completed = []
    for (const [index, Body] of parts.entries()) {
      const PartNumber = index + 1
      const uploaded = await s3.send(
        new UploadPartCommand({
          Bucket: BUCKET,
          Key,
          UploadId,
          PartNumber,
          Body,
          ChecksumAlgorithm: algorithm,
        }),
      )
      completed.push({
        PartNumber,
        ETag: uploaded.ETag,
        [member(algorithm)]: (uploaded as Sums)[member(algorithm)],
      })
    }
    const whole = await expectedWhole(algorithm, type, parts)
    if (type === 'COMPOSITE') assert.ok(whole.endsWith(`-${last}`), label)
    // The whole object's checksum, named in Complete's header, is checked and then answered.
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        UploadId,
        MultipartUpload: { Parts: completed },
        [member(algorithm)]: whole,
      }),
    )
    assert.is((done as Sums)[member(algorithm)], whole, label)
    assert.is(done.ChecksumType, type, label)
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key, ChecksumMode: 'ENABLED' }),
    )
    assert.is((head as Sums)[member(algorithm)], whole, label)
    assert.is(head.ChecksumType, type, label)
    const attributes = await s3.send(
      new GetObjectAttributesCommand({ Bucket: BUCKET, Key, ObjectAttributes: ['Checksum'] }),
    )
    assert.is((attributes.Checksum as Sums | undefined)?.[member(algorithm)], whole, label)
    assert.is(attributes.Checksum?.ChecksumType, type, label)
    // One part, by number: that part's own checksum, of the object's type.
    for (const { PartNumber, ...sum } of completed) {
      const one = `${label} part ${PartNumber}`
      const got = await s3.send(
        new GetObjectCommand({ Bucket: BUCKET, Key, PartNumber, ChecksumMode: 'ENABLED' }),
      )
      await bytesOf(got)
      assert.is((got as Sums)[member(algorithm)], (sum as Sums)[member(algorithm)], one)
      assert.is(got.ChecksumType, type, one)
      const headed = await s3.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key, PartNumber, ChecksumMode: 'ENABLED' }),
      )
      assert.is((headed as Sums)[member(algorithm)], (sum as Sums)[member(algorithm)], one)
      assert.is(headed.ChecksumType, type, one)
    }
  }
})

test('multipart checksums: a wrong SHA-256 of a part or of the whole is BadDigest', async () => {
  const Key = 'sha256-wrong'
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: BUCKET, Key, ChecksumAlgorithm: 'SHA256' }),
  )
  // A part streamed (larger than a body kept inline) and a small one, each with a wrong sum.
  for (const size of [6 * MiB, 1000]) {
    const body = randomBytes(size)
    const wrong = await checksumBase64('sha256', randomBytes(16))
    const refused = await signedRequest(server.url, {
      method: 'PUT',
      path: `/${BUCKET}/${Key}`,
      query: { partNumber: '1', uploadId: UploadId ?? '' },
      headers: { 'x-amz-checksum-sha256': wrong, 'x-amz-sdk-checksum-algorithm': 'SHA256' },
      body,
    })
    assert.is(refused.status, 400, `${size}`)
    assert.is(errorCode(refused), 'BadDigest', `${size}`)
  }
  const listed = await s3.send(new ListPartsCommand({ Bucket: BUCKET, Key, UploadId }))
  assert.is(listed.Parts?.length ?? 0, 0)
  const Body = randomBytes(100)
  const part = await s3.send(
    new UploadPartCommand({
      Bucket: BUCKET,
      Key,
      UploadId,
      PartNumber: 1,
      Body,
      ChecksumAlgorithm: 'SHA256',
    }),
  )
  // A wrong whole-object checksum is BadDigest first, also where the list lacks part checksums.
  const unlisted = await failure(() =>
    s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key,
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
        ChecksumSHA256: 'bad',
      }),
    ),
  )
  assert.is(unlisted.name, 'BadDigest')
  const Parts = [{ PartNumber: 1, ETag: part.ETag, ChecksumSHA256: part.ChecksumSHA256 }]
  for (const ChecksumSHA256 of ['bad', await checksumBase64('sha256', Body)]) {
    const mismatch = await failure(() =>
      s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key,
          UploadId,
          MultipartUpload: { Parts },
          ChecksumSHA256,
        }),
      ),
    )
    assert.is(mismatch.name, 'BadDigest', ChecksumSHA256)
  }
})

test('multipart checksums: copied parts get the checksum, whole or ranged', async () => {
  const big = randomBytes(6 * MiB)
  const small = Buffer.from('a small source object, put without a checksum')
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'copy-big', Body: big }))
  // Without any checksum (the SDK would add a CRC32): the copy must compute the part's CRC32C.
  const put = await signedRequest(server.url, {
    method: 'PUT',
    path: `/${BUCKET}/copy-small`,
    body: small,
  })
  assert.is(put.status, 200)
  const Key = 'mp-copied'
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({
      Bucket: BUCKET,
      Key,
      ChecksumAlgorithm: 'CRC32C',
      ChecksumType: 'FULL_OBJECT',
    }),
  )
  const ranged = await s3.send(
    new UploadPartCopyCommand({
      Bucket: BUCKET,
      Key,
      UploadId,
      PartNumber: 1,
      CopySource: `${BUCKET}/copy-big`,
      CopySourceRange: `bytes=0-${5 * MiB - 1}`,
    }),
  )
  const first = big.subarray(0, 5 * MiB)
  assert.is(ranged.CopyPartResult?.ChecksumCRC32C, await checksumBase64('crc32c', first))
  const whole = await s3.send(
    new UploadPartCopyCommand({
      Bucket: BUCKET,
      Key,
      UploadId,
      PartNumber: 2,
      CopySource: `${BUCKET}/copy-small`,
    }),
  )
  assert.is(whole.CopyPartResult?.ChecksumCRC32C, await checksumBase64('crc32c', small))
  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key,
      UploadId,
      MultipartUpload: {
        Parts: [
          { PartNumber: 1, ETag: ranged.CopyPartResult?.ETag },
          { PartNumber: 2, ETag: whole.CopyPartResult?.ETag },
        ],
      },
    }),
  )
  assert.is(done.ChecksumCRC32C, await checksumBase64('crc32c', Buffer.concat([first, small])))
})

test('GetObjectAttributes: the attributes asked for, of a version, and its errors', async () => {
  const bucket = 'attributes'
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  const Key = 'versioned'
  const first = Buffer.from('first version')
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: first }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: bucket,
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
  const second = Buffer.from('second version, with a checksum')
  const put = await s3.send(
    new PutObjectCommand({ Bucket: bucket, Key, Body: second, ChecksumAlgorithm: 'SHA256' }),
  )
  const current = await s3.send(
    new GetObjectAttributesCommand({ Bucket: bucket, Key, ObjectAttributes: [...ALL_ATTRIBUTES] }),
  )
  assert.is(current.ETag, createHash('md5').update(second).digest('hex'))
  assert.is(current.ObjectSize, second.length)
  assert.is(current.StorageClass, 'STANDARD')
  assert.is(current.Checksum?.ChecksumSHA256, await checksumBase64('sha256', second))
  assert.is(current.Checksum?.ChecksumType, 'FULL_OBJECT')
  assert.is(current.ObjectParts, undefined)
  assert.is(current.VersionId, put.VersionId)
  assert.ok(current.LastModified instanceof Date)
  const old = await s3.send(
    new GetObjectAttributesCommand({
      Bucket: bucket,
      Key,
      VersionId: 'null',
      ObjectAttributes: ['ObjectSize', 'Checksum'],
    }),
  )
  assert.is(old.ObjectSize, first.length)
  assert.is(old.VersionId, 'null')
  assert.is(old.ETag, undefined)
  // The SDK sends a CRC32 of small bodies by default: the null version has that one.
  assert.is(old.Checksum?.ChecksumCRC32, await checksumBase64('crc32', first))
  const marker = await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key }))
  const deleted = await failure(() =>
    s3.send(new GetObjectAttributesCommand({ Bucket: bucket, Key, ObjectAttributes: ['ETag'] })),
  )
  assert.is(deleted.status, 404)
  const byId = await signedRequest(server.url, {
    method: 'GET',
    path: `/${bucket}/${Key}`,
    query: { attributes: '', versionId: marker.VersionId ?? '' },
    headers: { 'x-amz-object-attributes': 'ETag' },
  })
  assert.is(byId.status, 405)
  assert.is(byId.headers['x-amz-delete-marker'], 'true')
  const path = `/${BUCKET}/crc64-buffer`
  for (const [header, code] of [
    [undefined, 'InvalidArgument'],
    ['', 'InvalidArgument'],
    ['ETag,Colour', 'InvalidArgument'],
  ] as const) {
    const headers: Record<string, string> =
      header === undefined ? {} : { 'x-amz-object-attributes': header }
    const refused = await signedRequest(server.url, {
      method: 'GET',
      path,
      query: { attributes: '' },
      headers,
    })
    assert.is(refused.status, 400, String(header))
    assert.is(errorCode(refused), code, String(header))
  }
  const absent = await failure(() =>
    s3.send(
      new GetObjectAttributesCommand({ Bucket: BUCKET, Key: 'absent', ObjectAttributes: ['ETag'] }),
    ),
  )
  assert.is(absent.name, 'NoSuchKey')
})

test.run()
