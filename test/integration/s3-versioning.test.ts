/** Goal: bucket versioning behaves as Amazon S3's: configuration put and got (empty until set,
 * MalformedXML for bad bodies), version ids on every write, GET/HEAD/DELETE/copy by version id,
 * delete markers (404 with x-amz-delete-marker for the key, 405 by id, removing one undeletes),
 * ListObjectVersions page by page, Suspended writes replacing the `null` version, a versioned
 * bucket that cannot be deleted while versions remain, and stats that count current objects and
 * the bytes of every kept version. Method: a real server driven by @aws-sdk/client-s3, and raw
 * signed requests where the SDK hides headers of error answers. */
import * as assert from 'uvu/assert'
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { signedRequest } from '../support/signed-request.js'
import { failure } from '../support/s3-failure.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'
import type { StatsRecord } from '../../http/stats.js'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite(undefined, [
  'configuration: empty until set',
  'every write gets a version id',
  'ListObjectVersions: newest first',
])

async function stats(): Promise<StatsRecord> {
  return (await (await fetch(`${server.url}/api/stats`)).json()) as StatsRecord
}

async function versionedBucket(name: string): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: name }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: name,
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
}

async function put(bucket: string, key: string, body: string): Promise<string | undefined> {
  return (await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }))).VersionId
}

async function read(bucket: string, key: string, versionId?: string) {
  const answer = await s3.send(
    new GetObjectCommand({
      Bucket: bucket,
      Key: key,
      ...(versionId === undefined ? {} : { VersionId: versionId }),
    }),
  )
  return { text: await answer.Body!.transformToString(), versionId: answer.VersionId }
}

test('configuration: empty until set, Enabled and Suspended, bad bodies refused', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'config' }))
  const fresh = await s3.send(new GetBucketVersioningCommand({ Bucket: 'config' }))
  assert.is(fresh.Status, undefined)
  for (const status of ['Enabled', 'Suspended'] as const) {
    await s3.send(
      new PutBucketVersioningCommand({
        Bucket: 'config',
        VersioningConfiguration: { Status: status },
      }),
    )
    const got = await s3.send(new GetBucketVersioningCommand({ Bucket: 'config' }))
    assert.is(got.Status, status)
  }
  const body = '<VersioningConfiguration><Status>Sometimes</Status></VersioningConfiguration>'
  const bad = await signedRequest(server.url, {
    method: 'PUT',
    path: '/config',
    query: { versioning: '' },
    headers: { 'content-length': String(body.length) },
    body,
  })
  assert.is(bad.status, 400)
  assert.match(bad.body.toString(), /<Code>MalformedXML<\/Code>/)
  const missing = await failure(() =>
    s3.send(new GetBucketVersioningCommand({ Bucket: 'no-such-bucket' })),
  )
  assert.equal(missing, { name: 'NoSuchBucket', status: 404 })
})

test('every write gets a version id; GET, HEAD and copy by id reach each version', async () => {
  await versionedBucket('history')
  const ids = [await put('history', 'doc', 'one'), await put('history', 'doc', 'two')]
  ids.push(await put('history', 'doc', 'three'))
  assert.ok(
    ids.every((id) => id !== undefined && /^[0-9a-f]{24}$/.test(id)),
    String(ids),
  )
  assert.is(new Set(ids).size, 3)
  assert.equal(await read('history', 'doc'), { text: 'three', versionId: ids[2] })
  assert.equal(await read('history', 'doc', ids[0]), { text: 'one', versionId: ids[0] })
  const head = await s3.send(
    new HeadObjectCommand({ Bucket: 'history', Key: 'doc', VersionId: ids[1] }),
  )
  assert.is(head.ContentLength, 3)
  assert.is(head.VersionId, ids[1])
  const copied = await s3.send(
    new CopyObjectCommand({
      Bucket: 'history',
      Key: 'restored',
      CopySource: `history/doc?versionId=${ids[0]}`,
    }),
  )
  assert.is(copied.CopySourceVersionId, ids[0])
  assert.ok(copied.VersionId !== undefined)
  assert.is((await read('history', 'restored')).text, 'one')
  const unknown = await failure(() => read('history', 'doc', '0000000000000000deadbeef'))
  assert.equal(unknown, { name: 'NoSuchVersion', status: 404 })
  const malformed = await failure(() => read('history', 'doc', 'not-a-version'))
  assert.equal(malformed, { name: 'InvalidArgument', status: 400 })
})

test('delete markers: 404 for the key, 405 by id, and deleting the marker undeletes', async () => {
  await versionedBucket('markers')
  const first = await put('markers', 'k', 'kept')
  const deleted = await s3.send(new DeleteObjectCommand({ Bucket: 'markers', Key: 'k' }))
  assert.is(deleted.DeleteMarker, true)
  const markerId = deleted.VersionId ?? ''
  assert.match(markerId, /^[0-9a-f]{24}$/)
  const gone = await signedRequest(server.url, { method: 'GET', path: '/markers/k' })
  assert.is(gone.status, 404)
  assert.match(gone.body.toString(), /<Code>NoSuchKey<\/Code>/)
  assert.is(gone.headers['x-amz-delete-marker'], 'true')
  assert.is(gone.headers['x-amz-version-id'], markerId)
  const byId = await signedRequest(server.url, {
    method: 'GET',
    path: '/markers/k',
    query: { versionId: markerId },
  })
  assert.is(byId.status, 405)
  assert.is(byId.headers['x-amz-delete-marker'], 'true')
  // A marker has no tags: 405 by id, 404 as the current version.
  const tagsById = await failure(() =>
    s3.send(new GetObjectTaggingCommand({ Bucket: 'markers', Key: 'k', VersionId: markerId })),
  )
  assert.equal(tagsById, { name: 'MethodNotAllowed', status: 405 })
  const tags = await failure(() =>
    s3.send(new GetObjectTaggingCommand({ Bucket: 'markers', Key: 'k' })),
  )
  assert.equal(tags, { name: 'NoSuchKey', status: 404 })
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'markers' }))
  assert.is(listed.KeyCount, 0)
  assert.equal(await read('markers', 'k', first), { text: 'kept', versionId: first })
  const undelete = await s3.send(
    new DeleteObjectCommand({ Bucket: 'markers', Key: 'k', VersionId: markerId }),
  )
  assert.is(undelete.DeleteMarker, true)
  assert.is(undelete.VersionId, markerId)
  assert.equal(await read('markers', 'k'), { text: 'kept', versionId: first })
  const removed = await s3.send(
    new DeleteObjectCommand({ Bucket: 'markers', Key: 'k', VersionId: first }),
  )
  assert.is(removed.VersionId, first)
  assert.equal(await failure(() => read('markers', 'k')), { name: 'NoSuchKey', status: 404 })
  const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: 'markers' }))
  assert.is(versions.Versions, undefined)
  assert.is(versions.DeleteMarkers, undefined)
  await s3.send(new DeleteBucketCommand({ Bucket: 'markers' }))
})

test('ListObjectVersions: newest first per key, IsLatest, markers, three pages', async () => {
  await versionedBucket('listed')
  const a1 = await put('listed', 'a', 'a1')
  const a2 = await put('listed', 'a', 'a2')
  const marker = (await s3.send(new DeleteObjectCommand({ Bucket: 'listed', Key: 'a' }))).VersionId
  const b1 = await put('listed', 'b', 'b1')
  const c1 = await put('listed', 'c/d', 'c1')
  const expected = [
    ['a', marker, true, true],
    ['a', a2, false, false],
    ['a', a1, false, false],
    ['b', b1, true, false],
    ['c/d', c1, true, false],
  ]
  const seen: unknown[][] = []
  let keyMarker: string | undefined
  let versionIdMarker: string | undefined
  let pages = 0
  for (; pages < 10; pages++) {
    const page = await s3.send(
      new ListObjectVersionsCommand({
        Bucket: 'listed',
        MaxKeys: 2,
        ...(keyMarker === undefined ? {} : { KeyMarker: keyMarker }),
        ...(versionIdMarker === undefined ? {} : { VersionIdMarker: versionIdMarker }),
      }),
    )
    const entries = [
      ...(page.Versions ?? []).map((v) => [v.Key, v.VersionId, v.IsLatest, false]),
      ...(page.DeleteMarkers ?? []).map((m) => [m.Key, m.VersionId, m.IsLatest, true]),
    ]
    // The SDK splits versions and markers; put them back in S3's order (key, newest first).
    const order = expected.map((entry) => JSON.stringify(entry))
    entries.sort((x, y) => order.indexOf(JSON.stringify(x)) - order.indexOf(JSON.stringify(y)))
    seen.push(...entries)
    if (page.IsTruncated !== true) break
    keyMarker = page.NextKeyMarker
    versionIdMarker = page.NextVersionIdMarker
  }
  assert.is(pages, 2, 'five entries in pages of two')
  assert.equal(seen, expected)
  const folded = await s3.send(
    new ListObjectVersionsCommand({ Bucket: 'listed', Delimiter: '/', Prefix: '' }),
  )
  assert.equal(
    folded.CommonPrefixes?.map((prefix) => prefix.Prefix),
    ['c/'],
  )
})

test('Suspended: writes replace the null version; older versions stay reachable', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'paused' }))
  await put('paused', 'k', 'before versioning')
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'paused',
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
  const enabled = await put('paused', 'k', 'enabled')
  assert.equal(await read('paused', 'k', 'null'), { text: 'before versioning', versionId: 'null' })
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'paused',
      VersioningConfiguration: { Status: 'Suspended' },
    }),
  )
  assert.is(await put('paused', 'k', 'suspended one'), 'null')
  assert.is(await put('paused', 'k', 'suspended two'), 'null')
  const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: 'paused' }))
  assert.equal(
    versions.Versions?.map((version) => [version.VersionId, version.IsLatest]),
    [
      ['null', true],
      [enabled, false],
    ],
  )
  assert.equal(await read('paused', 'k'), { text: 'suspended two', versionId: 'null' })
  assert.equal(await read('paused', 'k', enabled), { text: 'enabled', versionId: enabled })
})

test('a versioned bucket is not empty while versions or markers remain; stats count', async () => {
  const before = await stats()
  await versionedBucket('kept')
  const one = await put('kept', 'k', '12345')
  const two = await put('kept', 'k', '1234567890')
  const during = await stats()
  assert.is(during.objects_count - before.objects_count, 1, 'one current object')
  assert.is(during.storage_used_bytes - before.storage_used_bytes, 15, 'both versions kept')
  const marker = (await s3.send(new DeleteObjectCommand({ Bucket: 'kept', Key: 'k' }))).VersionId
  assert.is((await stats()).objects_count, before.objects_count)
  const refused = await failure(() => s3.send(new DeleteBucketCommand({ Bucket: 'kept' })))
  assert.equal(refused, { name: 'BucketNotEmpty', status: 409 })
  const cleared = await s3.send(
    new DeleteObjectsCommand({
      Bucket: 'kept',
      Delete: {
        Objects: [one, two, marker].map((VersionId) => ({ Key: 'k', VersionId })),
      },
    }),
  )
  assert.equal(
    cleared.Deleted?.map((entry) => [entry.VersionId, entry.DeleteMarker ?? false]),
    [
      [one, false],
      [two, false],
      [marker, true],
    ],
  )
  await s3.send(new DeleteBucketCommand({ Bucket: 'kept' }))
  const after = await stats()
  assert.equal(
    [after.objects_count, after.storage_used_bytes],
    [before.objects_count, before.storage_used_bytes],
  )
})

test('CompleteMultipartUpload in a versioned bucket answers the version id', async () => {
  await versionedBucket('multi-versions')
  const created = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: 'multi-versions', Key: 'm' }),
  )
  const part = await s3.send(
    new UploadPartCommand({
      Bucket: 'multi-versions',
      Key: 'm',
      UploadId: created.UploadId,
      PartNumber: 1,
      Body: 'only part',
    }),
  )
  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: 'multi-versions',
      Key: 'm',
      UploadId: created.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
    }),
  )
  assert.match(done.VersionId ?? '', /^[0-9a-f]{24}$/)
  assert.equal(await read('multi-versions', 'm'), { text: 'only part', versionId: done.VersionId })
})

test.run()
