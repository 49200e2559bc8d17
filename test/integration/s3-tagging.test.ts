/** Goal: object and bucket tagging behave as Amazon S3's: Put/Get/DeleteObjectTagging (by version
 * too: each version keeps its own tags), x-amz-tagging on PutObject, CopyObject (COPY and REPLACE
 * directives) and CreateMultipartUpload, x-amz-tagging-count on GET and HEAD,
 * Put/Get/DeleteBucketTagging with NoSuchTagSet, and S3's limits (InvalidTag, MalformedXML). A tag
 * change keeps the object's bytes and last-modified time. Method: a real server driven by
 * @aws-sdk/client-s3, and raw signed requests for a malformed body. */
import * as assert from 'uvu/assert'
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketTaggingCommand,
  DeleteObjectTaggingCommand,
  GetBucketTaggingCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutBucketTaggingCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  UploadPartCommand,
  type Tag,
} from '@aws-sdk/client-s3'
import { errorCode, signedRequest } from '../support/signed-request.js'
import { failure } from '../support/s3-failure.js'
import { s3, server, test, useS3Suite } from '../support/s3-suite.js'

/** The cases that also run through a gateway (test/support/s3-suite.ts). */
useS3Suite('tags', ['object tags: put, get, delete', 'x-amz-tagging on PutObject'])

async function tagsOf(key: string, versionId?: string): Promise<Record<string, string>> {
  const answer = await s3.send(
    new GetObjectTaggingCommand({
      Bucket: 'tags',
      Key: key,
      ...(versionId === undefined ? {} : { VersionId: versionId }),
    }),
  )
  return Object.fromEntries((answer.TagSet ?? []).map((tag) => [tag.Key, tag.Value]))
}

function tagSet(record: Record<string, string>): Tag[] {
  return Object.entries(record).map(([Key, Value]) => ({ Key, Value }))
}

test('object tags: put, get, delete; a change keeps the bytes and last-modified', async () => {
  await s3.send(new PutObjectCommand({ Bucket: 'tags', Key: 'a', Body: 'hello' }))
  assert.equal(await tagsOf('a'), {})
  const before = await s3.send(new HeadObjectCommand({ Bucket: 'tags', Key: 'a' }))
  assert.is(before.TagCount, undefined)
  const tags = { project: 'blue sky', 'team/owner': 'a+b=c&d', empty: '' }
  await s3.send(
    new PutObjectTaggingCommand({ Bucket: 'tags', Key: 'a', Tagging: { TagSet: tagSet(tags) } }),
  )
  assert.equal(await tagsOf('a'), tags)
  const got = await s3.send(new GetObjectCommand({ Bucket: 'tags', Key: 'a' }))
  assert.is(got.TagCount, 3)
  assert.is(await got.Body!.transformToString(), 'hello')
  assert.is(got.ETag, before.ETag)
  assert.is(got.LastModified?.getTime(), before.LastModified?.getTime())
  await s3.send(new DeleteObjectTaggingCommand({ Bucket: 'tags', Key: 'a' }))
  assert.equal(await tagsOf('a'), {})
  const after = await s3.send(new HeadObjectCommand({ Bucket: 'tags', Key: 'a' }))
  assert.is(after.TagCount, undefined)
  const missing = await failure(() => tagsOf('nope'))
  assert.equal(missing, { name: 'NoSuchKey', status: 404 })
})

test('x-amz-tagging on PutObject, CreateMultipartUpload and CopyObject', async () => {
  await s3.send(
    new PutObjectCommand({ Bucket: 'tags', Key: 'p', Body: 'x', Tagging: 'k1=v%201&k2=' }),
  )
  assert.equal(await tagsOf('p'), { k1: 'v 1', k2: '' })
  const head = await s3.send(new HeadObjectCommand({ Bucket: 'tags', Key: 'p' }))
  assert.is(head.TagCount, 2)

  const created = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: 'tags', Key: 'm', Tagging: 'multi=part' }),
  )
  const part = await s3.send(
    new UploadPartCommand({
      Bucket: 'tags',
      Key: 'm',
      UploadId: created.UploadId,
      PartNumber: 1,
      Body: 'only part',
    }),
  )
  await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: 'tags',
      Key: 'm',
      UploadId: created.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
    }),
  )
  assert.equal(await tagsOf('m'), { multi: 'part' })

  const source = { Bucket: 'tags', CopySource: 'tags/p' }
  await s3.send(new CopyObjectCommand({ ...source, Key: 'copied' }))
  assert.equal(await tagsOf('copied'), { k1: 'v 1', k2: '' }, 'COPY keeps the source tags')
  await s3.send(
    new CopyObjectCommand({
      ...source,
      Key: 'replaced',
      TaggingDirective: 'REPLACE',
      Tagging: 'new=one',
    }),
  )
  assert.equal(await tagsOf('replaced'), { new: 'one' })
  await s3.send(new CopyObjectCommand({ ...source, Key: 'cleared', TaggingDirective: 'REPLACE' }))
  assert.equal(await tagsOf('cleared'), {}, 'REPLACE without x-amz-tagging clears them')
})

test('limits: 10 tags, keys of 128 and values of 256 characters, unique, no aws:', async () => {
  await s3.send(new PutObjectCommand({ Bucket: 'tags', Key: 'limits', Body: 'x' }))
  const put = (TagSet: Tag[]) =>
    failure(() =>
      s3.send(new PutObjectTaggingCommand({ Bucket: 'tags', Key: 'limits', Tagging: { TagSet } })),
    )
  const many = Array.from({ length: 11 }, (_, i) => ({ Key: `k${i}`, Value: 'v' }))
  assert.equal(await put(many), { name: 'InvalidTag', status: 400 })
  assert.equal(await put(many.slice(0, 10)), { name: 'no error' })
  // Characters, not bytes: 128 three-byte characters are a valid key.
  assert.equal(await put([{ Key: '€'.repeat(128), Value: '€'.repeat(256) }]), { name: 'no error' })
  assert.equal(await put([{ Key: 'k'.repeat(129), Value: 'v' }]), {
    name: 'InvalidTag',
    status: 400,
  })
  assert.equal(await put([{ Key: 'k', Value: 'v'.repeat(257) }]), {
    name: 'InvalidTag',
    status: 400,
  })
  const twice = [
    { Key: 'same', Value: '1' },
    { Key: 'same', Value: '2' },
  ]
  assert.equal(await put(twice), { name: 'InvalidTag', status: 400 })
  assert.equal(await put([{ Key: 'aws:system', Value: 'v' }]), { name: 'InvalidTag', status: 400 })
  const header = await failure(() =>
    s3.send(new PutObjectCommand({ Bucket: 'tags', Key: 'h', Body: 'x', Tagging: 'a=1&a=2' })),
  )
  assert.equal(header, { name: 'InvalidTag', status: 400 })
  const malformed = await signedRequest(server.url, {
    method: 'PUT',
    path: '/tags/limits',
    query: { tagging: '' },
    body: '<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>',
  })
  assert.is(malformed.status, 400)
  assert.is(errorCode(malformed), 'MalformedXML')
})

test('each version keeps its own tags', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'vtags' }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'vtags',
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
  const first = await s3.send(
    new PutObjectCommand({ Bucket: 'vtags', Key: 'k', Body: '1', Tagging: 'gen=1' }),
  )
  const second = await s3.send(
    new PutObjectCommand({ Bucket: 'vtags', Key: 'k', Body: '2', Tagging: 'gen=2' }),
  )
  const get = async (VersionId?: string) => {
    const answer = await s3.send(
      new GetObjectTaggingCommand({ Bucket: 'vtags', Key: 'k', VersionId }),
    )
    return { versionId: answer.VersionId, tags: answer.TagSet?.map((tag) => tag.Value) }
  }
  assert.equal(await get(), { versionId: second.VersionId, tags: ['2'] })
  assert.equal(await get(first.VersionId), { versionId: first.VersionId, tags: ['1'] })
  const changed = await s3.send(
    new PutObjectTaggingCommand({
      Bucket: 'vtags',
      Key: 'k',
      VersionId: first.VersionId,
      Tagging: { TagSet: [{ Key: 'gen', Value: 'old' }] },
    }),
  )
  assert.is(changed.VersionId, first.VersionId)
  assert.equal(await get(first.VersionId), { versionId: first.VersionId, tags: ['old'] })
  assert.equal(await get(), { versionId: second.VersionId, tags: ['2'] })
  const old = await s3.send(
    new GetObjectCommand({ Bucket: 'vtags', Key: 'k', VersionId: first.VersionId }),
  )
  assert.is(await old.Body!.transformToString(), '1')
  assert.is(old.TagCount, 1)
})

test('bucket tags: put, get, delete, NoSuchTagSet, 50 at most', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'btags' }))
  const get = () => s3.send(new GetBucketTaggingCommand({ Bucket: 'btags' }))
  assert.equal(await failure(get), { name: 'NoSuchTagSet', status: 404 })
  const tags = [
    { Key: 'cost-center', Value: '42' },
    { Key: 'env', Value: 'test' },
  ]
  await s3.send(new PutBucketTaggingCommand({ Bucket: 'btags', Tagging: { TagSet: tags } }))
  assert.equal((await get()).TagSet, tags)
  const many = Array.from({ length: 51 }, (_, i) => ({ Key: `k${i}`, Value: 'v' }))
  const tooMany = await failure(() =>
    s3.send(new PutBucketTaggingCommand({ Bucket: 'btags', Tagging: { TagSet: many } })),
  )
  assert.equal(tooMany, { name: 'InvalidTag', status: 400 })
  await s3.send(
    new PutBucketTaggingCommand({ Bucket: 'btags', Tagging: { TagSet: many.slice(0, 50) } }),
  )
  assert.is((await get()).TagSet?.length, 50)
  await s3.send(new DeleteBucketTaggingCommand({ Bucket: 'btags' }))
  assert.equal(await failure(get), { name: 'NoSuchTagSet', status: 404 })
  const noBucket = await failure(() =>
    s3.send(new GetBucketTaggingCommand({ Bucket: 'no-such-bucket' })),
  )
  assert.equal(noBucket, { name: 'NoSuchBucket', status: 404 })
})

test.run()
