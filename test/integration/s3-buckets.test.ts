/** Goal: listings and buckets answer as Amazon S3 does: `encoding-type=url` encodes keys, prefixes,
 * delimiters and markers with S3's set (a space is %20), without it a prefix comes back as sent
 * (control characters too); an empty continuation token is none, yet echoed;
 * ListBuckets pages by max-buckets and continuation tokens and filters by prefix and region;
 * buckets belong to the user who created them (BucketAlreadyExists against another's; against
 * one's own 200 in us-east-1 and BucketAlreadyOwnedByYou elsewhere, as S3 answers; ListBuckets
 * shows one's own, a SuperUser's all);
 * names follow S3's rules in full and a foreign LocationConstraint is refused. Method: the real
 * server as a child process, driven by @aws-sdk/client-s3 with each user's keys, and by raw signed
 * HTTP where the SDK would not send the request. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectVersionsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type BucketLocationConstraint,
  type S3Client,
} from '@aws-sdk/client-s3'
import { admin, createUser, issueKeys, login } from '../support/admin-client.js'
import { startServer, type TestServer } from '../support/server.js'
import { errorCode, signedRequest } from '../support/signed-request.js'

const ROOT_PASSWORD = 'root-password-for-tests'

let server: TestServer
let s3: S3Client

test.before(async () => {
  server = await startServer({ env: { SVC_ROOT_PASSWORD: ROOT_PASSWORD } })
  s3 = server.client()
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

const ENCODED_BUCKET = 'encoded'
/** s3-tests' keys for its encoding cases, and one with the characters S3 treats specially. */
const ENCODED_KEYS = ['foo+1/bar', 'foo/bar/xyzzy', 'quux ab/thud', 'asdf+b', 'a~b*(1) é.txt']

async function putEncodedKeys(): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: ENCODED_BUCKET }))
  for (const key of ENCODED_KEYS) {
    await s3.send(new PutObjectCommand({ Bucket: ENCODED_BUCKET, Key: key, Body: 'x' }))
  }
}

test('encoding-type=url in ListObjectsV2: %20 for a space, S3 set for the rest', async () => {
  await putEncodedKeys()
  const listed = await s3.send(
    new ListObjectsV2Command({
      Bucket: ENCODED_BUCKET,
      Delimiter: '/',
      EncodingType: 'url',
      StartAfter: 'a b',
    }),
  )
  assert.is(listed.EncodingType, 'url')
  assert.is(listed.StartAfter, 'a%20b')
  assert.is(listed.Delimiter, '/')
  assert.equal(
    (listed.Contents ?? []).map((entry) => entry.Key),
    ['asdf%2Bb', 'a%7Eb*%281%29%20%C3%A9.txt'],
  )
  assert.equal(
    (listed.CommonPrefixes ?? []).map((entry) => entry.Prefix),
    ['foo%2B1/', 'foo/', 'quux%20ab/'],
  )
  const prefixed = await s3.send(
    new ListObjectsV2Command({ Bucket: ENCODED_BUCKET, Prefix: 'quux ab/', EncodingType: 'url' }),
  )
  assert.is(prefixed.Prefix, 'quux%20ab/')
  assert.equal(
    (prefixed.Contents ?? []).map((entry) => entry.Key),
    ['quux%20ab/thud'],
  )
})

test('encoding-type=url in ListObjects (v1): Marker, NextMarker, Delimiter encoded', async () => {
  const list = (marker: string, maxKeys: number) =>
    s3.send(
      new ListObjectsCommand({
        Bucket: ENCODED_BUCKET,
        Delimiter: ' ',
        EncodingType: 'url',
        Marker: marker,
        MaxKeys: maxKeys,
      }),
    )
  const first = await list('a b', 2)
  assert.is(first.Marker, 'a%20b')
  assert.is(first.Delimiter, '%20')
  assert.equal(
    (first.Contents ?? []).map((entry) => entry.Key),
    ['asdf%2Bb'],
  )
  assert.equal(
    (first.CommonPrefixes ?? []).map((entry) => entry.Prefix),
    ['a%7Eb*%281%29%20'],
  )
  assert.is(first.IsTruncated, true)
  assert.is(first.NextMarker, 'a%7Eb*%281%29%20')
  const second = await list('foo+1/bar', 1)
  assert.is(second.Marker, 'foo%2B1/bar')
  assert.equal(
    (second.Contents ?? []).map((entry) => entry.Key),
    ['foo/bar/xyzzy'],
  )
  assert.is(second.NextMarker, 'foo/bar/xyzzy')
})

test('ListObjectVersions and ListMultipartUploads encode with encoding-type=url too', async () => {
  const versions = await s3.send(
    new ListObjectVersionsCommand({
      Bucket: ENCODED_BUCKET,
      Delimiter: '/',
      EncodingType: 'url',
      KeyMarker: 'a b',
    }),
  )
  assert.is(versions.KeyMarker, 'a%20b')
  assert.equal(
    (versions.Versions ?? []).map((entry) => entry.Key),
    ['asdf%2Bb', 'a%7Eb*%281%29%20%C3%A9.txt'],
  )
  assert.equal(
    (versions.CommonPrefixes ?? []).map((entry) => entry.Prefix),
    ['foo%2B1/', 'foo/', 'quux%20ab/'],
  )
  const key = 'up load+1'
  const upload = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: ENCODED_BUCKET, Key: key }),
  )
  try {
    const uploads = await s3.send(
      new ListMultipartUploadsCommand({
        Bucket: ENCODED_BUCKET,
        EncodingType: 'url',
        Prefix: 'up ',
      }),
    )
    assert.is(uploads.Prefix, 'up%20')
    assert.equal(
      (uploads.Uploads ?? []).map((entry) => entry.Key),
      ['up%20load%2B1'],
    )
  } finally {
    const abort = { Bucket: ENCODED_BUCKET, Key: key, UploadId: upload.UploadId }
    await s3.send(new AbortMultipartUploadCommand(abort))
  }
})

test('a prefix with control characters comes back as sent without encoding-type', async () => {
  for (const prefix of [
    'line\nbreak',
    'tab\there',
    'cr\rlf\n',
    '\x01start',
    'end\x1f',
    ' spaced ',
  ]) {
    const listed = await s3.send(
      new ListObjectsV2Command({ Bucket: ENCODED_BUCKET, Prefix: prefix }),
    )
    assert.is(listed.Prefix, prefix, JSON.stringify(prefix))
  }
})

test('an empty continuation-token is treated as absent, and echoed', async () => {
  const listed = await signedRequest(server.url, {
    method: 'GET',
    path: `/${ENCODED_BUCKET}`,
    query: { 'list-type': '2', 'continuation-token': '' },
  })
  const xml = listed.body.toString()
  assert.is(listed.status, 200, xml)
  assert.is([...xml.matchAll(/<Key>/g)].length, ENCODED_KEYS.length, xml)
  // S3 answers ContinuationToken whenever the request carried one, even empty.
  assert.match(xml, '<ContinuationToken></ContinuationToken>')
})

/** The S3 error code of a failed call, or 'ok'. */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
    return 'ok'
  } catch (error) {
    return (error as { name?: string }).name ?? String(error)
  }
}

test('reserved bucket-name prefixes, suffixes and IP forms are InvalidBucketName', async () => {
  const refused = ['xn--bucket', 'sthree-bucket', 'amzn-s3-demo-bucket', 'bucket-s3alias']
  refused.push('bucket--ol-s3', 'bucket.mrap', 'bucket--x-s3', 'bucket--table-s3', '192.168.5.4')
  for (const name of refused) {
    const created = await signedRequest(server.url, { method: 'PUT', path: `/${name}` })
    assert.is(created.status, 400, name)
    assert.is(errorCode(created), 'InvalidBucketName', name)
  }
  // Near misses are names like any other.
  for (const name of ['bucket-xn--a', 'sthree', 'bucket-s3alias-1', 'ol-s3-bucket', '192.168.5']) {
    assert.is(await outcome(() => s3.send(new CreateBucketCommand({ Bucket: name }))), 'ok', name)
  }
})

test('a LocationConstraint other than the node region is InvalidLocationConstraint', async () => {
  const create = (bucket: string, region: string) =>
    outcome(() =>
      s3.send(
        new CreateBucketCommand({
          Bucket: bucket,
          CreateBucketConfiguration: {
            LocationConstraint: region as BucketLocationConstraint,
          },
        }),
      ),
    )
  assert.is(await create('located-far', 'eu-west-1'), 'InvalidLocationConstraint')
  assert.is(await create('located-here', 'us-east-1'), 'ok')
  const empty = '<CreateBucketConfiguration><LocationConstraint/></CreateBucketConfiguration>'
  const created = await signedRequest(server.url, {
    method: 'PUT',
    path: '/located-nowhere',
    headers: { 'content-length': String(empty.length) },
    body: empty,
  })
  assert.is(created.status, 200, created.body.toString())
})

async function bucketNames(client: S3Client): Promise<string[]> {
  const listed = await client.send(new ListBucketsCommand({}))
  return (listed.Buckets ?? []).map((bucket) => bucket.Name ?? '')
}

test('buckets belong to their creator: conflicts say whose, ListBuckets shows own', async () => {
  const token = await login(server, 'root', ROOT_PASSWORD)
  const alice = server.client(await keysOf(token, 'alice'))
  const bob = server.client(await keysOf(token, 'bob'))
  try {
    const create = (client: S3Client, bucket: string) =>
      outcome(() => client.send(new CreateBucketCommand({ Bucket: bucket })))
    assert.is(await create(alice, 'alice-bucket'), 'ok')
    // us-east-1, the node's region here: S3 answers 200 to re-creating one's own bucket.
    assert.is(await create(alice, 'alice-bucket'), 'ok')
    assert.is(await create(bob, 'alice-bucket'), 'BucketAlreadyExists')
    assert.is(await create(s3, 'alice-bucket'), 'BucketAlreadyExists')
    assert.is(await create(bob, 'bob-bucket'), 'ok')
    // The admin API creates as the signed-in SuperUser: another user's name is taken.
    const taken = await admin(server, 'PUT', '/buckets/alice-bucket', token)
    assert.is(taken.status, 409, taken.text)
    assert.is((await admin(server, 'PUT', '/buckets/root-bucket', token)).status, 201)
    assert.equal(await bucketNames(alice), ['alice-bucket'])
    assert.equal(await bucketNames(bob), ['bob-bucket'])
    const all = await bucketNames(s3)
    for (const name of ['alice-bucket', 'bob-bucket', 'root-bucket', ENCODED_BUCKET]) {
      assert.ok(all.includes(name), name)
    }
    // Roles, not owners, decide what a user may do: a Writer writes in another's bucket.
    const put = new PutObjectCommand({ Bucket: 'alice-bucket', Key: 'from-bob', Body: 'b' })
    assert.is(await outcome(() => bob.send(put)), 'ok')
  } finally {
    alice.destroy()
    bob.destroy()
  }
})

test("outside us-east-1, re-creating one's own bucket is 409 BucketAlreadyOwnedByYou", async () => {
  const region = 'eu-central-1'
  const regional = await startServer({ env: { SVC_REGION: region } })
  const client = regional.client()
  try {
    const create = () =>
      outcome(() =>
        client.send(
          new CreateBucketCommand({
            Bucket: 'regional-bucket',
            CreateBucketConfiguration: { LocationConstraint: region },
          }),
        ),
      )
    assert.is(await create(), 'ok')
    assert.is(await create(), 'BucketAlreadyOwnedByYou')
  } finally {
    client.destroy()
    await regional.stop()
    regional.cleanup()
  }
})

async function keysOf(token: string, username: string) {
  const keys = await issueKeys(server, token, await createUser(server, token, username, 'Writer'))
  return { accessKeyId: keys.access_key, secretAccessKey: keys.secret_key }
}

test('ListBuckets pages by max-buckets and token, filters by prefix and region', async () => {
  for (let index = 1; index <= 5; index++) {
    await s3.send(new CreateBucketCommand({ Bucket: `page-${index}` }))
  }
  const pages: string[][] = []
  let token: string | undefined
  for (let page = 0; page < 5; page++) {
    const listed = await s3.send(
      new ListBucketsCommand({ MaxBuckets: 2, Prefix: 'page-', ContinuationToken: token }),
    )
    assert.is(listed.Prefix, 'page-')
    assert.ok((listed.Buckets ?? []).every((bucket) => bucket.BucketRegion === 'us-east-1'))
    pages.push((listed.Buckets ?? []).map((bucket) => bucket.Name ?? ''))
    token = listed.ContinuationToken
    if (token === undefined) break
  }
  assert.equal(pages, [['page-1', 'page-2'], ['page-3', 'page-4'], ['page-5']])
  const here = await s3.send(new ListBucketsCommand({ Prefix: 'page-', BucketRegion: 'us-east-1' }))
  assert.is(here.Buckets?.length, 5)
  assert.is(here.ContinuationToken, undefined)
  const far = await s3.send(new ListBucketsCommand({ Prefix: 'page-', BucketRegion: 'eu-west-1' }))
  assert.is(far.Buckets?.length ?? 0, 0)
  for (const maxBuckets of ['0', '10001', 'x']) {
    const refused = await signedRequest(server.url, {
      method: 'GET',
      path: '/',
      query: { 'max-buckets': maxBuckets },
    })
    assert.is(refused.status, 400, maxBuckets)
    assert.is(errorCode(refused), 'InvalidArgument', maxBuckets)
  }
})

test.run()
