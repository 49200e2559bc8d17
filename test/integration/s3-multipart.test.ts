/** Goal: multipart upload works as Amazon S3's does for real clients: create, upload (streamed,
 * checksummed by the SDK's defaults), copy parts, complete (order, ETags and the 5 MiB minimum
 * checked; the composite ETag), abort, list parts and uploads page by page, GET across parts and by
 * part number; the storage counters follow parts, completes and aborts exactly; incomplete uploads
 * expire. Method: a real server driven by @aws-sdk/client-s3; expected bytes, ETags and counters
 * are computed here from what was sent. */
import { createHash, randomBytes } from 'node:crypto'
import * as assert from 'uvu/assert'
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3'
import { failure } from '../support/s3-failure.js'
import { startServer } from '../support/server.js'
import { pollUntil } from '../support/wait.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'
import type { StatsRecord } from '../../http/stats.js'

const MiB = 1024 * 1024
const BUCKET = 'multi'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(BUCKET, [
  'three parts with a 1-byte last part',
  'UploadPartCopy: a whole object, and a range',
])

async function stats(): Promise<StatsRecord> {
  return (await (await fetch(`${server.url}/api/stats`)).json()) as StatsRecord
}

function md5(bytes: Uint8Array): Buffer {
  return createHash('md5').update(bytes).digest()
}

/** S3's ETag of a multipart object: the MD5 of the parts' MD5s, a dash, the part count. */
function multipartEtag(parts: readonly Uint8Array[]): string {
  const digest = createHash('md5')
    .update(Buffer.concat(parts.map(md5)))
    .digest('hex')
  return `"${digest}-${parts.length}"`
}

async function create(key: string, extra: object = {}): Promise<string> {
  const created = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key, ...extra }),
  )
  assert.ok(created.UploadId !== undefined && created.UploadId.length > 0)
  return created.UploadId
}

async function upload(
  key: string,
  uploadId: string,
  parts: readonly Uint8Array[],
): Promise<CompletedPart[]> {
  const done: CompletedPart[] = []
  for (const [index, body] of parts.entries()) {
    const PartNumber = index + 1
    const answer = await s3.send(
      new UploadPartCommand({
        Bucket: BUCKET,
        Key: key,
        UploadId: uploadId,
        PartNumber,
        Body: body,
      }),
    )
    assert.is(answer.ETag, `"${md5(body).toString('hex')}"`)
    done.push({ PartNumber, ETag: answer.ETag })
  }
  return done
}

async function complete(key: string, uploadId: string, parts: CompletedPart[]) {
  return s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: BUCKET,
      Key: key,
      UploadId: uploadId,
      MultipartUpload: { Parts: parts },
    }),
  )
}

async function readAll(key: string, extra: object = {}) {
  const answer = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...extra }))
  return { answer, bytes: Buffer.from(await answer.Body!.transformToByteArray()) }
}

test('three parts with a 1-byte last part: bytes, ETag, metadata, part GETs, ranges', async () => {
  const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(1)]
  const uploadId = await create('three', {
    ContentType: 'video/mp4',
    Metadata: { origin: 'camera' },
  })
  const done = await upload('three', uploadId, parts)
  const completed = await complete('three', uploadId, done)
  assert.is(completed.ETag, multipartEtag(parts))
  assert.is(completed.Key, 'three')
  const whole = Buffer.concat(parts)
  const { answer, bytes } = await readAll('three')
  assert.ok(bytes.equals(whole), 'the object is its parts, in order')
  assert.is(answer.ContentType, 'video/mp4')
  assert.equal(answer.Metadata, { origin: 'camera' })
  assert.is(answer.ETag, multipartEtag(parts))
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'three' }))
  assert.is(head.ContentLength, whole.length)

  // A range across the boundary of parts 1 and 2, and one ending in the 1-byte part.
  const across = await readAll('three', { Range: `bytes=${5 * MiB - 10}-${5 * MiB + 9}` })
  assert.ok(across.bytes.equals(whole.subarray(5 * MiB - 10, 5 * MiB + 10)))
  assert.is(across.answer.ContentRange, `bytes ${5 * MiB - 10}-${5 * MiB + 9}/${whole.length}`)
  const tail = await readAll('three', { Range: 'bytes=-3' })
  assert.ok(tail.bytes.equals(whole.subarray(whole.length - 3)))

  const second = await readAll('three', { PartNumber: 2 })
  assert.ok(second.bytes.equals(parts[1] as Buffer))
  assert.is(second.answer.PartsCount, 3)
  assert.is(second.answer.ContentRange, `bytes ${5 * MiB}-${10 * MiB - 1}/${whole.length}`)
  const third = await s3.send(
    new HeadObjectCommand({ Bucket: BUCKET, Key: 'three', PartNumber: 3 }),
  )
  assert.is(third.ContentLength, 1)
  assert.is(third.PartsCount, 3)
  const none = await failure(() => readAll('three', { PartNumber: 4 }))
  assert.equal(none, { name: 'InvalidPart', status: 400 })
  const noneHead = await failure(() =>
    s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'three', PartNumber: 4 })),
  )
  assert.is(noneHead.status, 400)
})

test('three 1 MiB parts: EntityTooSmall at complete, and the parts stay listed', async () => {
  const parts = [randomBytes(MiB), randomBytes(MiB), randomBytes(MiB)]
  const uploadId = await create('small-parts')
  const done = await upload('small-parts', uploadId, parts)
  const refused = await failure(() => complete('small-parts', uploadId, done))
  assert.equal(refused, { name: 'EntityTooSmall', status: 400 })
  const listed = await s3.send(
    new ListPartsCommand({ Bucket: BUCKET, Key: 'small-parts', UploadId: uploadId }),
  )
  assert.equal(
    listed.Parts?.map((part) => [part.PartNumber, part.Size, part.ETag]),
    done.map((part) => [part.PartNumber, MiB, part.ETag]),
  )
  // One part alone may be small: the last part has no minimum.
  const single = await complete('small-parts', uploadId, [done[0] as CompletedPart])
  assert.is(single.ETag, multipartEtag([parts[0] as Buffer]))
  assert.ok((await readAll('small-parts')).bytes.equals(parts[0] as Buffer))
})

test('complete checks order and ETags; a finished upload answers only its retry', async () => {
  const parts = [randomBytes(5 * MiB), randomBytes(100)]
  const uploadId = await create('checked')
  const done = await upload('checked', uploadId, parts)
  const reversed = await failure(() => complete('checked', uploadId, [...done].reverse()))
  assert.equal(reversed, { name: 'InvalidPartOrder', status: 400 })
  const wrongTag = [done[0] as CompletedPart, { PartNumber: 2, ETag: '"0123456789abcdef"' }]
  assert.equal(await failure(() => complete('checked', uploadId, wrongTag)), {
    name: 'InvalidPart',
    status: 400,
  })
  const missing = [...done, { PartNumber: 3, ETag: done[0]?.ETag ?? '' }]
  assert.equal(await failure(() => complete('checked', uploadId, missing)), {
    name: 'InvalidPart',
    status: 400,
  })
  const completed = await complete('checked', uploadId, done)
  // A retry (its response was lost) answers the same; another parts list finds no upload.
  const retried = await complete('checked', uploadId, done)
  assert.is(retried.ETag, completed.ETag)
  assert.equal(await failure(() => complete('checked', uploadId, done.slice(0, 1))), {
    name: 'NoSuchUpload',
    status: 404,
  })
  const aborted = await failure(() =>
    s3.send(
      new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'checked', UploadId: uploadId }),
    ),
  )
  assert.equal(aborted, { name: 'NoSuchUpload', status: 404 })
  const unknown = await failure(() =>
    s3.send(
      new UploadPartCommand({
        Bucket: BUCKET,
        Key: 'checked',
        UploadId: 'not-an-upload',
        PartNumber: 1,
        Body: 'x',
      }),
    ),
  )
  assert.equal(unknown, { name: 'NoSuchUpload', status: 404 })
})

test('parts count in storage until completed or aborted; abort frees every part', async () => {
  const before = await stats()
  const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB)]
  const uploadId = await create('counted')
  await upload('counted', uploadId, parts)
  const during = await stats()
  assert.is(during.storage_used_bytes - before.storage_used_bytes, 10 * MiB)
  assert.is(during.objects_count, before.objects_count)
  assert.is(during.dedup_unique_blobs - before.dedup_unique_blobs, 2)
  await s3.send(
    new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'counted', UploadId: uploadId }),
  )
  const after = await stats()
  assert.equal(
    [after.storage_used_bytes, after.objects_count, after.dedup_unique_blobs],
    [before.storage_used_bytes, before.objects_count, before.dedup_unique_blobs],
  )
  const again = await create('counted')
  const done = await upload('counted', again, parts)
  await complete('counted', again, done)
  const completed = await stats()
  assert.is(completed.objects_count - before.objects_count, 1)
  assert.is(completed.storage_used_bytes - before.storage_used_bytes, 10 * MiB)
  assert.is(completed.dedup_total_references - before.dedup_total_references, 2)
})

test('a part uploaded again replaces the earlier one; parts list page by page', async () => {
  const uploadId = await create('paged')
  const bodies = Array.from({ length: 5 }, (_, index) => Buffer.alloc(10, index + 1))
  await upload('paged', uploadId, bodies)
  const replaced = await s3.send(
    new UploadPartCommand({
      Bucket: BUCKET,
      Key: 'paged',
      UploadId: uploadId,
      PartNumber: 3,
      Body: Buffer.alloc(20, 9),
    }),
  )
  const seen: [number, number][] = []
  let marker: string | undefined
  for (let page = 0; page < 10; page++) {
    const listed = await s3.send(
      new ListPartsCommand({
        Bucket: BUCKET,
        Key: 'paged',
        UploadId: uploadId,
        MaxParts: 2,
        ...(marker === undefined ? {} : { PartNumberMarker: marker }),
      }),
    )
    for (const part of listed.Parts ?? []) seen.push([part.PartNumber ?? 0, part.Size ?? 0])
    if (listed.IsTruncated !== true) break
    marker = listed.NextPartNumberMarker
  }
  assert.equal(seen, [
    [1, 10],
    [2, 10],
    [3, 20],
    [4, 10],
    [5, 10],
  ])
  assert.is(replaced.ETag, `"${md5(Buffer.alloc(20, 9)).toString('hex')}"`)
  await s3.send(
    new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'paged', UploadId: uploadId }),
  )
})

test('ListMultipartUploads: prefix, delimiter, pages by key and upload id markers', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'uploads' }))
  const started: [string, string][] = []
  for (const key of ['a/1', 'a/2', 'b', 'b', 'c/d/e']) {
    const created = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'uploads', Key: key }))
    started.push([key, created.UploadId ?? ''])
  }
  const expected = [...started].sort((left, right) =>
    left[0] === right[0] ? (left[1] < right[1] ? -1 : 1) : left[0] < right[0] ? -1 : 1,
  )
  const seen: [string, string][] = []
  let keyMarker: string | undefined
  let uploadIdMarker: string | undefined
  for (let page = 0; page < 10; page++) {
    const listed = await s3.send(
      new ListMultipartUploadsCommand({
        Bucket: 'uploads',
        MaxUploads: 2,
        ...(keyMarker === undefined ? {} : { KeyMarker: keyMarker }),
        ...(uploadIdMarker === undefined ? {} : { UploadIdMarker: uploadIdMarker }),
      }),
    )
    for (const entry of listed.Uploads ?? []) seen.push([entry.Key ?? '', entry.UploadId ?? ''])
    if (listed.IsTruncated !== true) break
    keyMarker = listed.NextKeyMarker
    uploadIdMarker = listed.NextUploadIdMarker
  }
  assert.equal(seen, expected)
  const folded = await s3.send(
    new ListMultipartUploadsCommand({ Bucket: 'uploads', Delimiter: '/' }),
  )
  assert.equal(
    folded.CommonPrefixes?.map((prefix) => prefix.Prefix),
    ['a/', 'c/'],
  )
  assert.equal(
    folded.Uploads?.map((entry) => entry.Key),
    ['b', 'b'],
  )
  const under = await s3.send(new ListMultipartUploadsCommand({ Bucket: 'uploads', Prefix: 'a/' }))
  assert.equal(
    under.Uploads?.map((entry) => entry.Key),
    ['a/1', 'a/2'],
  )
  for (const [key, uploadId] of started) {
    await s3.send(
      new AbortMultipartUploadCommand({ Bucket: 'uploads', Key: key, UploadId: uploadId }),
    )
  }
  await s3.send(new DeleteBucketCommand({ Bucket: 'uploads' }))
})

test('UploadPartCopy: a whole object, and a range of a multipart object', async () => {
  const source = randomBytes(6 * MiB)
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'copy-source', Body: source }))
  const before = await stats()
  const uploadId = await create('copied')
  const whole = await s3.send(
    new UploadPartCopyCommand({
      Bucket: BUCKET,
      Key: 'copied',
      UploadId: uploadId,
      PartNumber: 1,
      CopySource: `${BUCKET}/copy-source`,
    }),
  )
  assert.is(whole.CopyPartResult?.ETag, `"${md5(source).toString('hex')}"`)
  // The whole-object copy adds a reference, not a blob.
  assert.is((await stats()).dedup_unique_blobs, before.dedup_unique_blobs)
  const ranged = await s3.send(
    new UploadPartCopyCommand({
      Bucket: BUCKET,
      Key: 'copied',
      UploadId: uploadId,
      PartNumber: 2,
      CopySource: `${BUCKET}/three`,
      CopySourceRange: `bytes=${5 * MiB - 100}-${5 * MiB + 99}`,
    }),
  )
  const three = (await readAll('three')).bytes
  const slice = three.subarray(5 * MiB - 100, 5 * MiB + 100)
  assert.is(ranged.CopyPartResult?.ETag, `"${md5(slice).toString('hex')}"`)
  const done = [
    { PartNumber: 1, ETag: whole.CopyPartResult?.ETag ?? '' },
    { PartNumber: 2, ETag: ranged.CopyPartResult?.ETag ?? '' },
  ]
  const outside = await failure(() =>
    s3.send(
      new UploadPartCopyCommand({
        Bucket: BUCKET,
        Key: 'copied',
        UploadId: uploadId,
        PartNumber: 1,
        CopySource: `${BUCKET}/copy-source`,
        CopySourceRange: `bytes=0-${source.length}`,
      }),
    ),
  )
  assert.equal(outside, { name: 'InvalidRange', status: 416 })
  await complete('copied', uploadId, done)
  assert.ok((await readAll('copied')).bytes.equals(Buffer.concat([source, slice])))
})

test('UploadPartCopy of a whole one-part multipart object: the ETag of its bytes', async () => {
  // A part's ETag is the MD5 of its bytes, whichever object they come from.
  const bytes = randomBytes(1000)
  const sourceId = await create('one-part')
  await complete('one-part', sourceId, await upload('one-part', sourceId, [bytes]))
  const uploadId = await create('from-one-part')
  const copied = await s3.send(
    new UploadPartCopyCommand({
      Bucket: BUCKET,
      Key: 'from-one-part',
      UploadId: uploadId,
      PartNumber: 1,
      CopySource: `${BUCKET}/one-part`,
    }),
  )
  assert.is(copied.CopyPartResult?.ETag, `"${md5(bytes).toString('hex')}"`)
  await s3.send(
    new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'from-one-part', UploadId: uploadId }),
  )
})

test('UploadPartCopy: the upload is looked for before the source', async () => {
  // One rule on a node and in a cluster: NoSuchUpload comes before any answer about the source.
  const uploadId = await create('ended')
  await s3.send(
    new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'ended', UploadId: uploadId }),
  )
  const missing = await failure(() =>
    s3.send(
      new UploadPartCopyCommand({
        Bucket: BUCKET,
        Key: 'ended',
        UploadId: uploadId,
        PartNumber: 1,
        CopySource: `${BUCKET}/no-such-source`,
      }),
    ),
  )
  assert.equal(missing, { name: 'NoSuchUpload', status: 404 })
})

test('racing complete and abort of one upload: exactly one outcome, nothing leaked', async () => {
  const before = await stats()
  const parts = [randomBytes(5 * MiB), randomBytes(10)]
  const uploadId = await create('raced')
  const done = await upload('raced', uploadId, parts)
  const outcomes = await Promise.allSettled([
    complete('raced', uploadId, done),
    s3.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'raced', UploadId: uploadId })),
    complete('raced', uploadId, done),
  ])
  // Either the abort won and both completes fail, or a complete won, the abort fails, and the
  // other complete, a retry then, answers the same.
  const [first, abort, second] = outcomes.map((outcome) => outcome.status === 'fulfilled')
  const statuses = JSON.stringify(outcomes.map((outcome) => outcome.status))
  assert.ok(abort === true ? !first && !second : first && second, statuses)
  const after = await stats()
  const exists = await failure(() =>
    s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'raced' })),
  )
  const size = parts[0]!.length + parts[1]!.length
  if (exists.name === 'no error') {
    assert.is(after.storage_used_bytes - before.storage_used_bytes, size)
    assert.is(after.dedup_unique_blobs - before.dedup_unique_blobs, 2)
  } else {
    assert.is(after.storage_used_bytes, before.storage_used_bytes)
    assert.is(after.dedup_unique_blobs, before.dedup_unique_blobs)
  }
})

test('uploads expire after SVC_MULTIPART_EXPIRY_HOURS: parts go, completions too', async () => {
  // 0.0005 h = 1.8 s; sweeps run every second.
  const quick = await startServer({ env: { SVC_MULTIPART_EXPIRY_HOURS: '0.0005' } })
  const client = quick.client()
  try {
    await client.send(new CreateBucketCommand({ Bucket: 'expiring' }))
    // A completed upload: its retry answers the same until the sweep forgets it.
    const finished = await client.send(
      new CreateMultipartUploadCommand({ Bucket: 'expiring', Key: 'done' }),
    )
    const only = { Bucket: 'expiring', Key: 'done', UploadId: finished.UploadId }
    const part = await client.send(new UploadPartCommand({ ...only, PartNumber: 1, Body: 'x' }))
    const completion = {
      ...only,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
    }
    await client.send(new CompleteMultipartUploadCommand(completion))
    const created = await client.send(
      new CreateMultipartUploadCommand({ Bucket: 'expiring', Key: 'left' }),
    )
    await client.send(
      new UploadPartCommand({
        Bucket: 'expiring',
        Key: 'left',
        UploadId: created.UploadId,
        PartNumber: 1,
        Body: randomBytes(200 * 1024),
      }),
    )
    const read = async (): Promise<StatsRecord> =>
      (await (await fetch(`${quick.url}/api/stats`)).json()) as StatsRecord
    // The completed object's one byte stays.
    assert.is((await read()).storage_used_bytes, 200 * 1024 + 1)
    let current = await read()
    const reclaimed = async (): Promise<boolean> => {
      current = await read()
      return current.storage_used_bytes === 1
    }
    await pollUntil(reclaimed, 15_000, 200)
    assert.is(current.storage_used_bytes, 1)
    assert.is(current.dedup_unique_blobs, 1)
    const listed = await client.send(new ListMultipartUploadsCommand({ Bucket: 'expiring' }))
    assert.is(listed.Uploads?.length ?? 0, 0)
    let retried = { name: 'no error' }
    const forgotten = async (): Promise<boolean> => {
      retried = await failure(() => client.send(new CompleteMultipartUploadCommand(completion)))
      return retried.name === 'NoSuchUpload'
    }
    await pollUntil(forgotten, 15_000, 200)
    assert.is(retried.name, 'NoSuchUpload')
    const kept = await client.send(new GetObjectCommand({ Bucket: 'expiring', Key: 'done' }))
    assert.is(await kept.Body?.transformToString(), 'x', 'the object itself stays')
  } finally {
    client.destroy()
    await quick.stop()
    quick.cleanup()
  }
})

test.run()
