/** Goal: racing writes to one key from two coordinators converge to one winner on every replica,
 * the same object (bytes, ETag, Last-Modified) and, in a versioned bucket, the same current
 * version id; and a client that writes through one node and then through another sees its second
 * write win on every replica, whatever the nodes' clocks say.
 * Method: three real nodes that each read with R = 1 (SVC_READ_QUORUM=1, per node), so a GET
 * through a node answers from that node's own replica: reading through every node shows every
 * replica. Writes still need W = 2 of 3. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { pollUntil } from '../support/wait.js'

let cluster: TestCluster
const NODES = ['n1', 'n2', 'n3']

test.before(async () => {
  cluster = await startCluster({ nodes: 3, env: { SVC_READ_QUORUM: '1' } })
  const s3 = cluster.server('n1').client()
  await s3.send(new CreateBucketCommand({ Bucket: 'plain' }))
  await s3.send(new CreateBucketCommand({ Bucket: 'versioned' }))
  await s3.send(
    new PutBucketVersioningCommand({
      Bucket: 'versioned',
      VersioningConfiguration: { Status: 'Enabled' },
    }),
  )
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

test.run()
