/** Goal: racing writes to one key from two coordinators converge to one winner on every replica,
 * the same object (bytes, ETag, Last-Modified) and, in a versioned bucket, the same current
 * version id; a client that writes through one node and then through another sees its second
 * write win on every replica, whatever the nodes' clocks say; and hinted handoff: a node cut off
 * while 300 writes and deletes go through n1 holds every one of them within 60 s of the
 * partition's healing, brought by the hints n1 kept (no read repair, no scan), and n1 keeps no
 * hint any more.
 * Method: three real nodes that each read with R = 1 (SVC_READ_QUORUM=1, per node), so a GET
 * through a node answers from that node's own replica, never repairing it: reading through every
 * node shows every replica. Writes still need W = 2 of 3. The chaos route cuts a node off both
 * ways and heals it. */
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
import { createPlainAndVersioned, startCluster, type TestCluster } from '../support/cluster.js'
import { sample } from '../support/metrics-text.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'

let cluster: TestCluster
const NODES = ['n1', 'n2', 'n3']
const BUCKET = 'hinted'
const WRITES = 300
/** Writes in flight at once through n1. */
const WRITERS = 8
const HEALED_WITHIN_MS = 60_000

test.before(async () => {
  cluster = await startCluster({ nodes: 3, env: { SVC_READ_QUORUM: '1', SVC_CHAOS: '1' } })
  const s3 = cluster.server('n1').client()
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }))
  await createPlainAndVersioned(s3)
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

interface Seen {
  md5: string
  etag: string | undefined
  lastModified: number | undefined
  versionId: string | undefined
}

async function seenThrough(id: string, Bucket: string, Key: string): Promise<Seen> {
  const got = await cluster.server(id).client().send(new GetObjectCommand({ Bucket, Key }))
  const body = (await got.Body?.transformToByteArray()) ?? new Uint8Array(0)
  return {
    md5: createHash('md5').update(body).digest('hex'),
    etag: got.ETag,
    lastModified: got.LastModified?.getTime(),
    versionId: got.VersionId,
  }
}

/** What every replica holds once they agree, or null when they did not within the bound. */
async function agreed(Bucket: string, Key: string): Promise<Seen | null> {
  let seen: Seen[] = []
  const same = await pollUntil(async () => {
    seen = await Promise.all(NODES.map((id) => seenThrough(id, Bucket, Key)))
    return seen.every((one) => JSON.stringify(one) === JSON.stringify(seen[0]))
  }, 20_000)
  return same ? (seen[0] as Seen) : null
}

test('racing writes from two coordinators converge to one winner on every replica', async () => {
  for (const Bucket of ['plain', 'versioned']) {
    for (let round = 0; round < 6; round++) {
      const Key = `race-${round}`
      const bodies = [randomBytes(3000), randomBytes(300_000)]
      await Promise.all(
        bodies.map((Body, i) =>
          cluster
            .server(NODES[i] as string)
            .client()
            .send(new PutObjectCommand({ Bucket, Key, Body })),
        ),
      )
      const winner = await agreed(Bucket, Key)
      assert.ok(winner !== null, `${Bucket}/${Key}: the replicas did not converge`)
      const sums = bodies.map((body) => createHash('md5').update(body).digest('hex'))
      assert.ok(sums.includes(winner.md5), `${Bucket}/${Key}: a body nobody wrote`)
    }
  }
})

test('a write through n2 after one through n1 wins on every replica', async () => {
  for (let round = 0; round < 5; round++) {
    const Key = `sequence-${round}`
    const s3 = (id: string) => cluster.server(id).client()
    await s3('n1').send(new PutObjectCommand({ Bucket: 'plain', Key, Body: 'first' }))
    const second = randomBytes(2048)
    await s3('n2').send(new PutObjectCommand({ Bucket: 'plain', Key, Body: second }))
    const winner = await agreed('plain', Key)
    assert.ok(winner !== null, `${Key}: the replicas did not converge`)
    assert.is(winner.md5, createHash('md5').update(second).digest('hex'), Key)
  }
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
