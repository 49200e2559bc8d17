/** Goal: SIGTERM of a node under load loses no request of a client that retries, as an S3 client
 * does: the stopping node answers what it has in flight, refuses new requests with a 503 the
 * client retries, and the gateway sends the retry to a node that serves; the node exits 0 and the
 * others see it Left. Every acknowledged write reads back whole after.
 * Method: three real nodes and a gateway; four clients PUT and GET through the gateway (the AWS
 * SDK with its standard retries) while n3 is stopped with SIGTERM. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { ACCESS_KEY, SECRET_KEY } from '../support/server.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil, sleep } from '../support/wait.js'

let cluster: TestCluster
const BUCKET = 'stopping'
const CLIENTS = 4
/** Each client's operations at most: the load is bounded whatever the timing. */
const OPS_PER_CLIENT_MAX = 400
const LEFT_WAIT_MS = 15_000
/** The SDK's default is 3; a stop takes a few seconds to spread, and backoff spaces the tries. */
const RETRYING_ATTEMPTS = 3

test.before(async () => {
  cluster = await startCluster({ nodes: 3, gateways: 1 })
  await cluster
    .server('g1')
    .client()
    .send(new CreateBucketCommand({ Bucket: BUCKET }))
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

function md5(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

test('SIGTERM under load: no failed request through the gateway, exit 0, Left', async () => {
  // An S3 client as applications run it: the SDK's standard retries, with backoff.
  const s3 = new S3Client({
    endpoint: cluster.server('g1').url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    maxAttempts: RETRYING_ATTEMPTS,
  })
  const written = new Map<string, string>()
  const failures: string[] = []
  let stopping = true
  let retried = 0
  const client = async (id: number): Promise<void> => {
    for (let op = 0; op < OPS_PER_CLIENT_MAX && stopping; op++) {
      const Key = `c${id}-${op}`
      const Body = randomBytes(op % 10 === 0 ? 300_000 : 2_000)
      try {
        const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body }))
        retried += (put.$metadata.attempts ?? 1) - 1
        written.set(Key, md5(Body))
        const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key }))
        retried += (got.$metadata.attempts ?? 1) - 1
        const bytes = (await got.Body?.transformToByteArray()) ?? new Uint8Array(0)
        if (md5(bytes) !== md5(Body)) failures.push(`${Key}: other bytes read back`)
      } catch (error) {
        failures.push(`${Key}: ${String(error)}`)
      }
    }
  }
  const load = Promise.all(Array.from({ length: CLIENTS }, (_, id) => client(id)))
  await sleep(1_500)
  const exitCode = await cluster.server('n3').stop()
  await sleep(1_500)
  stopping = false
  await load
  console.log(`  ${retried} retries`)
  assert.equal(failures, [])
  assert.is(exitCode, 0)
  assert.ok(written.size > CLIENTS * 5, `only ${written.size} writes`)
  const left = async (): Promise<boolean> => {
    const topology = await signedRequest(cluster.server('n1').url, {
      method: 'GET',
      path: '/admin/cluster/topology',
    })
    const body = JSON.parse(topology.body.toString()) as {
      pools: { nodes: { id: string; status: string }[] }[]
    }
    return body.pools.some((pool) =>
      pool.nodes.some((node) => node.id === 'n3' && node.status === 'Left'),
    )
  }
  assert.ok(await pollUntil(left, LEFT_WAIT_MS, 200), 'n1 does not see n3 Left')
  for (const [Key, sum] of written) {
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key }))
    assert.is(md5((await got.Body?.transformToByteArray()) ?? new Uint8Array(0)), sum, Key)
  }
})

test.run()
