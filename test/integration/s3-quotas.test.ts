/** Goal: a bucket's quota, set through the admin API, bounds its size and its object count for
 * every S3 write, counted across the cluster. `GET /api/admin/buckets/{name}/quota` answers the
 * bounds and the usage; a write that would go past a bound answers 403 QuotaExceeded with a message
 * that says which bound, and stores nothing; deleting objects or raising or removing the quota lets
 * writes through again; bad input is 400 InvalidData. Method: a real server (single node, 3-node
 * cluster or gateway: test/support/s3-suite.ts), the admin API over fetch and @aws-sdk/client-s3.
 * Usage is read at most a second old (http/s3/quota.ts), so each case waits for it (bounded)
 * before the write that must be refused. */
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { admin } from '../support/admin-client.js'
import { failure } from '../support/s3-failure.js'
import { adminToken, s3, server, test, useS3Suite } from '../support/s3-suite.js'
import { pollUntil } from '../support/wait.js'

useS3Suite(undefined, ['a size quota refuses the write'])

interface QuotaView {
  bucket: string
  max_size_bytes: number | null
  max_objects: number | null
  size_bytes: number
  objects: number
}

async function quota(bucket: string, token: string): Promise<QuotaView> {
  const answer = await admin(server, 'GET', `/buckets/${bucket}/quota`, token)
  assert.is(answer.status, 200, answer.text)
  return answer.json as QuotaView
}

async function setQuota(bucket: string, token: string, body: object): Promise<QuotaView> {
  const answer = await admin(server, 'PUT', `/buckets/${bucket}/quota`, token, body)
  assert.is(answer.status, 200, answer.text)
  return answer.json as QuotaView
}

function put(bucket: string, key: string, bytes: number) {
  return () => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x'.repeat(bytes) }))
}

/** Waits until a write is refused (the usage it is checked against is at most a second old). */
async function refusedSoon(write: () => Promise<unknown>): Promise<string> {
  let message = ''
  const refused = await pollUntil(
    async () => {
      const answer = await write().then(
        () => null,
        (error: Error & { name: string }) => error,
      )
      if (answer?.name !== 'QuotaExceeded') return false
      message = answer.message
      return true
    },
    10_000,
    200,
  )
  assert.ok(refused, 'the write was never refused')
  return message
}

test('a size quota refuses the write that would pass it, and nothing is stored', async () => {
  const token = await adminToken()
  await s3.send(new CreateBucketCommand({ Bucket: 'quota-size' }))
  const none = await quota('quota-size', token)
  assert.equal(none, {
    bucket: 'quota-size',
    max_size_bytes: null,
    max_objects: null,
    size_bytes: 0,
    objects: 0,
  })
  const set = await setQuota('quota-size', token, { max_size_bytes: 1000 })
  assert.is(set.max_size_bytes, 1000)
  assert.is(set.max_objects, null)
  await put('quota-size', 'first', 600)()
  const message = await refusedSoon(put('quota-size', 'second', 600))
  assert.match(message, 'may hold 1000 bytes')
  assert.is((await failure(put('quota-size', 'second', 600))).status, 403, 'QuotaExceeded is a 403')
  const after = await quota('quota-size', token)
  assert.is(after.objects, 1)
  assert.is(after.size_bytes, 600)
  // A write that fits still goes through.
  await put('quota-size', 'small', 300)()
  // Removing the quota lets anything through.
  assert.is((await admin(server, 'DELETE', '/buckets/quota-size/quota', token)).status, 204)
  await put('quota-size', 'second', 600)()
})

test('an object-count quota refuses new objects, multipart too, until one is deleted', async () => {
  const token = await adminToken()
  await s3.send(new CreateBucketCommand({ Bucket: 'quota-count' }))
  await setQuota('quota-count', token, { max_objects: 2 })
  await put('quota-count', 'a', 1)()
  await put('quota-count', 'b', 1)()
  const message = await refusedSoon(put('quota-count', 'c', 1))
  assert.match(message, 'may hold 2 objects')
  assert.equal(
    await failure(() =>
      s3.send(new CreateMultipartUploadCommand({ Bucket: 'quota-count', Key: 'big' })),
    ),
    { name: 'QuotaExceeded', status: 403 },
  )
  await s3.send(new DeleteObjectCommand({ Bucket: 'quota-count', Key: 'a' }))
  assert.ok(
    await pollUntil(() => put('quota-count', 'c', 1)().then(() => true), 10_000, 200),
    'a write after a delete was still refused',
  )
  assert.is((await quota('quota-count', token)).objects, 2)
})

test('quota input: bad bounds and unknown fields are 400, an unknown bucket 404', async () => {
  const token = await adminToken()
  await s3.send(new CreateBucketCommand({ Bucket: 'quota-input' }))
  for (const body of [{ max_size_bytes: -1 }, { max_objects: 1.5 }, { max_size: 10 }]) {
    const answer = await admin(server, 'PUT', '/buckets/quota-input/quota', token, body)
    assert.is(answer.status, 400, JSON.stringify(body))
    assert.is((answer.json as { code: string }).code, 'InvalidData')
  }
  const missing = await admin(server, 'PUT', '/buckets/no-such-one/quota', token, {
    max_objects: 1,
  })
  assert.is(missing.status, 404, missing.text)
  assert.is((await admin(server, 'GET', '/buckets/no-such-one/quota', token)).status, 404)
  assert.is((await admin(server, 'GET', '/buckets/quota-input/quota')).status, 401)
})

test.run()
