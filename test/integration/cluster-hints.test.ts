/** Goal: the hints for a node that stays away do not stay: n1 hints the writes a cut-off n3
 * misses, those hints expire and n1's pending count (health, repair-status) drops to 0 while n3
 * is still away, and once n3 has been away longer than SVC_HINT_TTL_HOURS n1 records no hint for
 * the writes it keeps missing (anti-entropy or a bootstrap is left to bring them).
 * Method: three real nodes with a TTL of 0.002 h (7.2 s, CLUSTER-INTERFACE.md's fractions); the
 * chaos route cuts n3 off both ways for the whole test, and writes go through n1. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { signedRequest } from '../support/signed-request.js'
import { pollUntil } from '../support/wait.js'

const TTL_HOURS = 0.002
const TTL_MS = TTL_HOURS * 3_600_000
const BUCKET = 'away'
const WRITES = 12
/** Far above when the hints go (their TTL, then an expiry pass within a second): bounds a slow
 * machine's wait, asserts no speed. */
const EXPIRED_WITHIN_MS = 60_000

let cluster: TestCluster

test.before(async () => {
  cluster = await startCluster({
    nodes: 3,
    env: { SVC_CHAOS: '1', SVC_HINT_TTL_HOURS: String(TTL_HOURS) },
  })
  await cluster
    .server('n1')
    .client()
    .send(new CreateBucketCommand({ Bucket: BUCKET }))
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

async function hintsOf(id: string): Promise<{ health: number; pending: number; expired: number }> {
  const url = cluster.server(id).url
  const health = await signedRequest(url, { method: 'GET', path: '/admin/cluster/health' })
  const status = await signedRequest(url, { method: 'GET', path: '/admin/cluster/repair-status' })
  const hints = (JSON.parse(status.body.toString()) as { hints: Record<string, number> }).hints
  return {
    health: (JSON.parse(health.body.toString()) as { hints_pending: number }).hints_pending,
    pending: hints['pending'] ?? -1,
    expired: hints['expired'] ?? -1,
  }
}

/** Writes WRITES keys through n1: each misses n3 (cut off) and is acknowledged by n1 and n2. */
async function writeThroughN1(prefix: string): Promise<void> {
  const s3 = cluster.server('n1').client()
  for (let index = 0; index < WRITES; index++) {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}${index}`, Body: 'x' }))
  }
}

test('hints for a node that stays away expire, and none is recorded past the TTL', async () => {
  const cutAt = Date.now()
  const cut = await signedRequest(cluster.server('n3').url, {
    method: 'POST',
    path: '/admin/chaos/partition',
    body: JSON.stringify({ peers: ['n1', 'n2'] }),
    headers: { 'content-type': 'application/json' },
  })
  assert.is(cut.status, 200, cut.body.toString())
  await writeThroughN1('missed-')
  const kept = await hintsOf('n1')
  assert.ok(kept.health > 0 && kept.pending === kept.health, `n1 keeps ${kept.health} hints`)

  const drained = await pollUntil(
    async () => (await hintsOf('n1')).health === 0,
    EXPIRED_WITHIN_MS,
    500,
  )
  const left = await hintsOf('n1')
  assert.ok(drained, `n3 still away, n1 still keeps ${left.health} hints`)
  assert.is(left.pending, 0)
  assert.ok(left.expired >= kept.pending, `${left.expired} expired of ${kept.pending}`)

  // n1's hint queue saw n3 away within seconds of the cut (gossip's suspicion); twice the TTL
  // after the cut, n3 has been away longer than the TTL in its eyes, however slow the machine.
  const waitMs = cutAt + 2 * TTL_MS - Date.now()
  if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs))
  await writeThroughN1('later-')
  // Hints of a miss known before the answer are recorded before it: none came.
  assert.equal(await hintsOf('n1'), { health: 0, pending: 0, expired: left.expired })
})

test.run()
