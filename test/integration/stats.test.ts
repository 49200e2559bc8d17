/** Goal: /api/stats is the exact record of SPEC.md section 2, kept as counters that follow puts,
 * overwrites, copies and deletes exactly, and that survive a clean restart and a SIGKILL. Method:
 * a real server; the same bytes under two keys must count one unique blob and two references. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { startServer, type TestServer } from '../support/server.js'
import type { StatsRecord as Stats } from '../../http/stats.js'

async function stats(server: TestServer): Promise<Stats> {
  const response = await fetch(`${server.url}/api/stats`)
  assert.is(response.status, 200)
  return (await response.json()) as Stats
}

function counters(record: Stats): Omit<Stats, 'uptime_seconds'> {
  const { uptime_seconds: _uptime, ...rest } = record
  return rest
}

test('stats follow puts, dedup, overwrites, copies, deletes, restarts and a crash', async () => {
  let server = await startServer()
  let s3: S3Client = server.client()
  try {
    const empty = await stats(server)
    assert.equal(Object.keys(empty).sort(), [
      'buckets_count',
      'dedup_ratio',
      'dedup_total_references',
      'dedup_unique_blobs',
      'objects_count',
      'storage_used_bytes',
      'uptime_seconds',
    ])
    assert.ok(Number.isInteger(empty.uptime_seconds) && empty.uptime_seconds >= 0)
    assert.equal(counters(empty), {
      buckets_count: 0,
      objects_count: 0,
      storage_used_bytes: 0,
      dedup_unique_blobs: 0,
      dedup_total_references: 0,
      dedup_ratio: 0,
    })
    await s3.send(new CreateBucketCommand({ Bucket: 'counted' }))
    const same = Buffer.alloc(100 * 1024, 7) // Over the inline limit: a blob file.
    await s3.send(new PutObjectCommand({ Bucket: 'counted', Key: 'a', Body: same }))
    await s3.send(new PutObjectCommand({ Bucket: 'counted', Key: 'b', Body: same }))
    assert.equal(counters(await stats(server)), {
      buckets_count: 1,
      objects_count: 2,
      storage_used_bytes: 2 * same.length,
      dedup_unique_blobs: 1,
      dedup_total_references: 2,
      dedup_ratio: 2,
    })
    await s3.send(new PutObjectCommand({ Bucket: 'counted', Key: 'b', Body: 'small' }))
    await s3.send(new CopyObjectCommand({ Bucket: 'counted', Key: 'c', CopySource: 'counted/a' }))
    const expected = {
      buckets_count: 1,
      objects_count: 3,
      storage_used_bytes: 2 * same.length + 5,
      dedup_unique_blobs: 2,
      dedup_total_references: 3,
      dedup_ratio: 1.5,
    }
    assert.equal(counters(await stats(server)), expected)
    assert.is(await server.stop(), 0)
    server = await startServer({ dataDir: server.dataDir })
    s3.destroy()
    s3 = server.client()
    assert.equal(counters(await stats(server)), expected)
    await s3.send(new DeleteObjectCommand({ Bucket: 'counted', Key: 'a' }))
    await s3.send(new DeleteObjectCommand({ Bucket: 'counted', Key: 'c' }))
    const afterDeletes = {
      buckets_count: 1,
      objects_count: 1,
      storage_used_bytes: 5,
      dedup_unique_blobs: 1,
      dedup_total_references: 1,
      dedup_ratio: 1,
    }
    assert.equal(counters(await stats(server)), afterDeletes)
    await server.kill()
    server = await startServer({ dataDir: server.dataDir })
    assert.equal(counters(await stats(server)), afterDeletes)
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
  }
})

test.run()
