/** Goal: hinted handoff. A node cut off from the others while 300 writes and deletes go through
 * n1 holds every one of them within 60 s of the partition's healing, brought by the hints n1 kept
 * (no read repair, no scan): each key it was sent reads back with the same ETag and bytes, each
 * key deleted meanwhile is gone, and n1 keeps no hint any more.
 * Method: three real nodes that read with R = 1 (SVC_READ_QUORUM=1), so a GET through n3 answers
 * from n3's own replica and never repairs it; the chaos route cuts n3 off both ways and heals
 * it. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { sample } from '../support/metrics-text.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'

let cluster: TestCluster
const BUCKET = 'hinted'
const WRITES = 300
/** Writes in flight at once through n1. */
const WRITERS = 8
const HEALED_WITHIN_MS = 60_000

test.before(async () => {
  cluster = await startCluster({ nodes: 3, env: { SVC_READ_QUORUM: '1', SVC_CHAOS: '1' } })
  await cluster
    .server('n1')
    .client()
    .send(new CreateBucketCommand({ Bucket: BUCKET }))
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

async function hintsPending(id: string): Promise<number> {
  const health = await signedRequest(cluster.server(id).url, {
    method: 'GET',
    path: '/admin/cluster/health',
  })
  return (JSON.parse(health.body.toString()) as { hints_pending: number }).hints_pending
}

async function md5Through(s3: S3Client, Key: string): Promise<string | null> {
  try {
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key }))
    const body = (await got.Body?.transformToByteArray()) ?? new Uint8Array(0)
    return createHash('md5').update(body).digest('hex')
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return null
    throw error
  }
}

test('a node cut off during 300 writes holds them all within 60 s of healing', async () => {
  const n3 = cluster.server('n3').url
  const cut = await signedRequest(n3, {
    method: 'POST',
    path: '/admin/chaos/partition',
    body: JSON.stringify({ peers: ['n1', 'n2'] }),
    headers: { 'content-type': 'application/json' },
  })
  assert.is(cut.status, 200, cut.body.toString())
  const s3 = cluster.server('n1').client()
  // Every tenth write deletes a key whose write was acknowledged; some bodies are blob files.
  const expected = new Map<string, string | null>()
  let next = 0
  const writer = async (): Promise<void> => {
    while (next < WRITES) {
      const index = next++
      const older = `k${index - 9}`
      if (index % 10 === 9 && typeof expected.get(older) === 'string') {
        await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: older }))
        expected.set(older, null)
        continue
      }
      const Body = randomBytes(index % 25 === 0 ? 200_000 : 1_000 + index)
      const Key = `k${index}`
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body }))
      expected.set(Key, createHash('md5').update(Body).digest('hex'))
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, writer))
  assert.ok((await hintsPending('n1')) >= WRITES * 0.8, 'n1 keeps a hint of each change')
  const n3s3 = cluster.server('n3').client()
  assert.is(await md5Through(n3s3, 'k0'), null, 'n3 missed the writes')
  const heal = await signedRequest(n3, { method: 'DELETE', path: '/admin/chaos/partition' })
  assert.is(heal.status, 200)
  const drained = await pollUntil(
    async () => (await hintsPending('n1')) === 0,
    HEALED_WITHIN_MS,
    500,
  )
  assert.ok(drained, `n1 still keeps ${await hintsPending('n1')} hints`)
  for (const [Key, md5] of expected) {
    assert.is(await md5Through(n3s3, Key), md5, `${Key} through n3`)
  }
  const metrics = await (await fetch(`${cluster.server('n1').url}/metrics`)).text()
  const delivered = sample(metrics, 'svc_cluster_hints_delivered_total') ?? 0
  assert.ok(delivered >= expected.size, `${delivered} hints delivered`)
  const status = await signedRequest(cluster.server('n1').url, {
    method: 'GET',
    path: '/admin/cluster/repair-status',
  })
  assert.is(status.status, 200)
  const repair = JSON.parse(status.body.toString()) as {
    hints: { pending: number; delivered: number; expired: number }
    scrubber: { blobs_scanned: number; full_scan_progress: number }
  }
  assert.equal([repair.hints.pending, repair.hints.delivered], [0, delivered])
  assert.is(repair.hints.expired, 0)
  assert.type(repair.scrubber.blobs_scanned, 'number')
})

test.run()
