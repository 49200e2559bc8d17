/** Goal: a gateway does not wait on a frozen storage node. With one node of three stopped by
 * SIGSTOP for FREEZE_MS (a long GC pause, a stalled disk, a VM migration: the process keeps its
 * port and its kernel takes the bytes, but nothing answers), no request through the gateway takes
 * more than REQUEST_MAX_MS (the issue's bound) and none fails: GETs, HEADs and listings go to
 * another node as well when the frozen one is slow, and PUTs go to another node instead, their
 * small bodies sent again. Every PUT acknowledged under the freeze reads back. The gateway's
 * reasons for its choices (svc_gateway_attempts_total) are printed with the measured times. A
 * request the gateway gave up on (a TCP reset) is not run by the frozen node when it resumes,
 * which reads the request and the reset together: marked as forwarded, it is dropped.
 * Method: three real nodes and a gateway as child processes on 127.0.0.1 (test/support/
 * cluster.ts), LOAD_CLIENTS SDK clients with one attempt per request (a failure is the gateway's
 * answer, not hidden by a client retry). The bound is the issue's: a healthy node answers this
 * load far within it, and a wait on the frozen node lasts until it resumes, far beyond it. The
 * frozen node is always resumed (SIGCONT by its PID) before the cluster is stopped. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { createHash, randomBytes } from 'node:crypto'
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { once } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { FORWARDED_HEADER } from '../../http/app.js'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { failure } from '../support/s3-failure.js'
import {
  errorCode,
  halfSentRequest,
  signedRequest,
  signRequest,
} from '../support/signed-request.js'
import { sample } from '../support/metrics-text.js'
import { pollUntil, sleep } from '../support/wait.js'

/** The issue's bound on any request through a gateway while one node of three is frozen. */
const REQUEST_MAX_MS = 3_000
const FREEZE_MS = 10_000
/** Load before the freeze and after the resume. */
const LOAD_AROUND_MS = 2_000
const LOAD_CLIENTS = 6
const LOAD_OPS_PER_CLIENT_MAX = 2_000
/** A body streamed over the inline threshold: the coordinating node sends it to each replica on
 * its own gRPC stream, one of which goes to the frozen node. */
const LARGE_BODY_BYTES = 2_500_000
const LARGE_PUTS_PER_WRITER_MAX = 200
/** Large PUTs through the gateway stop this long before the frozen node resumes. */
const RESUME_MARGIN_MS = 2_000
/** Objects written before the load, for its GETs and HEADs. */
const SEEDED = 20
const ALIVE_WAIT_MS = 60_000
/** How long a raw request sits in a frozen node's kernel before, and after, its reset. */
const FROZEN_WRITE_MS = 200
/** How long the kernel may take to stop every thread of a node after SIGSTOP: the stop starts once
 * one of its threads takes the signal, which a loaded machine may not run at once (meanwhile the
 * others run on). Far more than a stop takes. */
const STOP_WAIT_MS = 5_000
/** How long a node resumed may take to run what it read: the case waits this long for a run. */
const LATE_RUN_WAIT_MS = 5_000
/** How long a client holds the second half of a body: well over the second in which a gateway
 * gives up a node that has not asked for the body. */
const BODY_HOLD_MS = 2_500
/** PUTs of a large body to a missing bucket, with n3 frozen and again with it resumed. */
const EARLY_ANSWER_PUTS = 8
/** A body streamed through the gateway, half of it sent before its node freezes: more than the
 * kernel's socket buffers take from a frozen process, so the node stops taking it. */
const STALLED_BODY_BYTES = 32 * 1024 * 1024
/** How long the node has to take the first half before it freezes. */
const FIRST_HALF_MS = 1_000
/** The case's bound on the gateway's 503 for a node frozen under a body it took: the gateway's
 * bound (two seconds without progress) with a margin for a loaded machine, far below the
 * gateway's two minutes for an answer. */
const STALLED_ANSWER_MAX_MS = 10_000

let cluster: TestCluster

function md5(bytes: Uint8Array): string {
  return createHash('md5').update(bytes).digest('hex')
}

test.before(async () => {
  cluster = await startCluster({ nodes: 3, gateways: 1 })
})

test.after(async () => {
  await (cluster as TestCluster | undefined)?.destroy()
})

/** Whether the gateway holds every node Alive (its membership, as an admin sees it). */
async function allAliveAtGateway(): Promise<boolean> {
  const answer = await signedRequest(cluster.server('g1').url, {
    method: 'GET',
    path: '/admin/cluster/topology',
  })
  if (answer.status !== 200) return false
  const topology = JSON.parse(answer.body.toString()) as {
    pools: { nodes: { status: string }[] }[]
  }
  const nodes = topology.pools.flatMap((pool) => pool.nodes)
  return nodes.length === 3 && nodes.every((node) => node.status === 'Alive')
}

interface Timed {
  op: string
  ms: number
  error?: string
}

/** One client's loop: PUT a new key, GET and HEAD a written one, list; each request timed. */
async function client(
  s3: S3Client,
  id: number,
  written: Map<string, string>,
  loading: () => boolean,
  seen: Timed[],
): Promise<void> {
  const timed = async (op: string, run: () => Promise<unknown>): Promise<void> => {
    const startedMs = Date.now()
    try {
      await run()
      seen.push({ op, ms: Date.now() - startedMs })
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
      const what = `${String(error)} (${status?.httpStatusCode ?? 'no status'})`
      seen.push({ op, ms: Date.now() - startedMs, error: what })
    }
  }
  for (let op = 0; op < LOAD_OPS_PER_CLIENT_MAX && loading(); op++) {
    const Key = `c${id}-${op}`
    const Body = randomBytes(op % 10 === 0 ? 200_000 : 2_000)
    await timed('PutObject', async () => {
      await s3.send(new PutObjectCommand({ Bucket: 'frozen', Key, Body }))
      written.set(Key, md5(Body))
    })
    const known = `seed-${op % SEEDED}`
    await timed('GetObject', async () => {
      const got = await s3.send(new GetObjectCommand({ Bucket: 'frozen', Key: known }))
      await got.Body?.transformToByteArray()
    })
    await timed('HeadObject', () =>
      s3.send(new HeadObjectCommand({ Bucket: 'frozen', Key: known })),
    )
    if (op % 4 === 0) {
      await timed('ListObjectsV2', () =>
        s3.send(new ListObjectsV2Command({ Bucket: 'frozen', Prefix: `c${id}-`, MaxKeys: 50 })),
      )
    }
  }
}

test('one node of three frozen: no request through the gateway waits on it', async () => {
  assert.ok(await pollUntil(allAliveAtGateway, ALIVE_WAIT_MS, 200), 'the gateway sees all Alive')
  const s3 = cluster.server('g1').client()
  await s3.send(new CreateBucketCommand({ Bucket: 'frozen' }))
  for (let n = 0; n < SEEDED; n++) {
    const Body = randomBytes(4_000)
    await s3.send(new PutObjectCommand({ Bucket: 'frozen', Key: `seed-${n}`, Body }))
  }
  const written = new Map<string, string>()
  const seen: Timed[] = []
  let loading = true
  const load = Promise.all(
    Array.from({ length: LOAD_CLIENTS }, (_, id) => client(s3, id, written, () => loading, seen)),
  )
  const frozen = cluster.server('n3').child
  const pid = frozen.pid
  assert.ok(pid !== undefined)
  let stopped = false
  try {
    await sleep(LOAD_AROUND_MS)
    process.kill(pid, 'SIGSTOP')
    stopped = true
    await sleep(FREEZE_MS)
    process.kill(pid, 'SIGCONT')
    stopped = false
    await sleep(LOAD_AROUND_MS)
  } finally {
    if (stopped) process.kill(pid, 'SIGCONT')
    loading = false
    await load
  }
  const failed = seen.filter((timed) => timed.error !== undefined)
  const slowest = [...seen].sort((a, b) => b.ms - a.ms).slice(0, 5)
  const text = await (await fetch(`${cluster.server('g1').url}/metrics`)).text()
  const reasons = ['first', 'hedge', 'slow', 'refused'].map(
    (reason) =>
      `${reason} ${sample(text, 'svc_gateway_attempts_total', `reason="${reason}"`) ?? 0}`,
  )
  console.log(
    `  ${seen.length} requests, slowest ${slowest.map((t) => `${t.op} ${t.ms} ms`).join(', ')}`,
  )
  console.log(`  gateway attempts by reason: ${reasons.join(', ')}`)
  assert.equal(
    failed.map((timed) => `${timed.op}: ${timed.error}`),
    [],
  )
  assert.ok(seen.length > LOAD_CLIENTS * 20, `only ${seen.length} requests`)
  const over = seen.filter((timed) => timed.ms > REQUEST_MAX_MS)
  assert.equal(
    over.map((timed) => `${timed.op} ${timed.ms} ms`),
    [],
    'requests over the bound',
  )
  // What was acknowledged under the freeze is there, through the gateway.
  for (const [Key, sum] of written) {
    const got = await s3.send(new GetObjectCommand({ Bucket: 'frozen', Key }))
    assert.is(md5((await got.Body?.transformToByteArray()) ?? new Uint8Array(0)), sum, Key)
  }
})

/** PUTs of LARGE_BODY_BYTES in a row until `writing` is false, each timed. */
async function largeWriter(
  s3: S3Client,
  name: string,
  writing: () => boolean,
  written: Map<string, string>,
  seen: Timed[],
): Promise<void> {
  for (let n = 0; n < LARGE_PUTS_PER_WRITER_MAX && writing(); n++) {
    const Key = `${name}-${n}`
    const Body = randomBytes(LARGE_BODY_BYTES)
    const startedMs = Date.now()
    const put = new PutObjectCommand({ Bucket: 'frozen', Key, Body })
    const { name: error } = await failure(() => s3.send(put))
    const ms = Date.now() - startedMs
    if (error === 'no error') written.set(Key, md5(Body))
    seen.push({ op: `PutObject ${Key}`, ms, ...(error === 'no error' ? {} : { error }) })
  }
}

/** A streamed body goes to each replica on its own stream: the one to the frozen replica stops
 * taking bytes, which must hold back neither the others nor the answer (the write quorum is two
 * of three), and what was acknowledged must read back. Straight to a healthy node, PUTs run
 * before the freeze and on through it and the resume, so the freeze lands in the middle of a
 * body. Through the gateway, they run while the node stays frozen: from the freeze (a body that a
 * node asked for before it froze is the gateway's to wait for) to RESUME_MARGIN_MS before the
 * resume. The bucket is the first case's. */
test('one node of three frozen: large PUTs reach their quorum without it', async () => {
  assert.ok(await pollUntil(allAliveAtGateway, ALIVE_WAIT_MS, 200), 'the gateway sees all Alive')
  const pid = cluster.server('n3').child.pid
  assert.ok(pid !== undefined)
  const written = new Map<string, string>()
  const seen: Timed[] = []
  let throughGateway = false
  let writing = true
  const direct = largeWriter(
    cluster.server('n1').client(),
    'large-n1',
    () => writing,
    written,
    seen,
  )
  let gateway = Promise.resolve()
  let stopped = false
  try {
    await sleep(LOAD_AROUND_MS)
    process.kill(pid, 'SIGSTOP')
    stopped = true
    throughGateway = true
    const s3 = cluster.server('g1').client()
    gateway = largeWriter(s3, 'large-g1', () => throughGateway, written, seen)
    await sleep(FREEZE_MS - RESUME_MARGIN_MS)
    throughGateway = false
    await sleep(RESUME_MARGIN_MS)
    process.kill(pid, 'SIGCONT')
    stopped = false
    await sleep(LOAD_AROUND_MS)
  } finally {
    if (stopped) process.kill(pid, 'SIGCONT')
    throughGateway = false
    writing = false
    await Promise.all([direct, gateway])
  }
  const slowest = [...seen].sort((a, b) => b.ms - a.ms).slice(0, 5)
  console.log(`  ${seen.length} large PUTs, slowest ${slowest.map((t) => `${t.ms} ms`).join(', ')}`)
  assert.equal(
    seen.filter((timed) => timed.error !== undefined || timed.ms > REQUEST_MAX_MS),
    [],
    'large PUTs failed or over the bound',
  )
  assert.ok(seen.length >= 10, `only ${seen.length} large PUTs`)
  const s3 = cluster.server('g1').client()
  for (const [Key, sum] of written) {
    const got = await s3.send(new GetObjectCommand({ Bucket: 'frozen', Key }))
    assert.is(md5((await got.Body?.transformToByteArray()) ?? new Uint8Array(0)), sum, Key)
  }
})

/** Whether every thread of process `pid` is stopped (state T in /proc; a thread gone counts). */
function allStopped(pid: number): boolean {
  return readdirSync(`/proc/${pid}/task`).every((task) => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8')
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')
    } catch {
      return true
    }
  })
}

/** Sends a signed CreateBucket over a raw socket to `id` while it is frozen, then resets the
 * connection (as a gateway that gives the node up does) before the node resumes. A request with
 * no body: what it does happens whether or not its connection is still there, unless the node
 * checks first (a request to a bucket would also read the bucket's access rules first, and an
 * upload's body read after them would end at the reset). */
async function createResetWhileFrozen(
  id: string,
  bucket: string,
  forwarded: boolean,
): Promise<void> {
  const node = cluster.server(id)
  const pid = node.child.pid
  assert.ok(pid !== undefined)
  const signed = await signRequest(node.url, {
    method: 'PUT',
    path: `/${bucket}`,
    headers: {
      'content-length': '0',
      ...(forwarded ? { [FORWARDED_HEADER]: '1' } : {}),
    },
  })
  const socket = connect(node.port, '127.0.0.1')
  socket.on('error', () => undefined)
  await once(socket, 'connect')
  process.kill(pid, 'SIGSTOP')
  try {
    // The request must reach the node frozen, not in the moment before its threads stop.
    assert.ok(await pollUntil(() => allStopped(pid), STOP_WAIT_MS, 5), `${id} did not stop`)
    const head = Object.entries(signed.headers).map(([name, value]) => `${name}: ${value}\r\n`)
    socket.write(`PUT ${signed.pathAndQuery} HTTP/1.1\r\n${head.join('')}\r\n`)
    await sleep(FROZEN_WRITE_MS)
    socket.resetAndDestroy()
    await sleep(FROZEN_WRITE_MS)
  } finally {
    process.kill(pid, 'SIGCONT')
  }
}

test('a forwarded request that a frozen node reads with its reset is not run', async () => {
  const s3 = cluster.server('g1').client()
  const created = async (Bucket: string): Promise<boolean> =>
    (await failure(() => s3.send(new HeadBucketCommand({ Bucket })))).name === 'no error'
  // Unmarked, the node reads the request before the reset and runs it: the kernel keeps what it
  // received for the process. (This shows the case can see a late run.)
  await createResetWhileFrozen('n2', 'late-unmarked', false)
  const late = await pollUntil(() => created('late-unmarked'), LATE_RUN_WAIT_MS, 100)
  assert.ok(late, 'unmarked not run')
  // Marked as a gateway marks what it forwards, it is not run.
  await createResetWhileFrozen('n2', 'late-forwarded', true)
  await sleep(LATE_RUN_WAIT_MS)
  assert.not.ok(await created('late-forwarded'), 'a forwarded request was run after its reset')
})

test('a node that asked for a body is waited for, however slowly the client sends it', async () => {
  // DeleteObjects is not run twice: its body goes to the one node that asked for it (100
  // Continue). A node still reading that body, as a slow client sends it, is alive: given up,
  // the body would be half gone to it and the rest would go to another node.
  const s3 = cluster.server('g1').client()
  const keys = ['slow-body-0', 'slow-body-1']
  for (const Key of keys) {
    await s3.send(new PutObjectCommand({ Bucket: 'frozen', Key, Body: 'to delete' }))
  }
  const objects = keys.map((key) => `<Object><Key>${key}</Key></Object>`).join('')
  const body = Buffer.from(`<Delete><Quiet>true</Quiet>${objects}</Delete>`)
  const half = await halfSentRequest(cluster.server('g1').url, {
    method: 'POST',
    path: '/frozen',
    query: { delete: '' },
    headers: { 'content-md5': createHash('md5').update(body).digest('base64') },
    body,
  })
  await sleep(BODY_HOLD_MS)
  const answer = await half.finish()
  assert.is(answer.status, 200, answer.body.toString())
  for (const Key of keys) {
    const left = await failure(() => s3.send(new HeadObjectCommand({ Bucket: 'frozen', Key })))
    assert.is(left.status, 404, Key)
  }
})

/** A node answers a large body's PUT to a missing bucket before it reads the body, and closes:
 * the rest of the body fails to go (EPIPE), and the node's 404 must still reach the client. */
async function putsToMissingBucket(): Promise<string[]> {
  const s3 = cluster.server('g1').client()
  const answers: string[] = []
  for (let n = 0; n < EARLY_ANSWER_PUTS; n++) {
    const put = new PutObjectCommand({
      Bucket: 'no-such-bucket-here',
      Key: `early-${n}`,
      Body: randomBytes(LARGE_BODY_BYTES),
    })
    const { name, status } = await failure(() => s3.send(put))
    answers.push(`${status} ${name}`)
  }
  return answers
}

test('an early answer to a large body reaches the client as the node sent it', async () => {
  assert.ok(await pollUntil(allAliveAtGateway, ALIVE_WAIT_MS, 200), 'the gateway sees all Alive')
  const expected = Array.from({ length: EARLY_ANSWER_PUTS }, () => '404 NoSuchBucket')
  assert.equal(await putsToMissingBucket(), expected, 'all nodes running')
  const pid = cluster.server('n3').child.pid
  assert.ok(pid !== undefined)
  process.kill(pid, 'SIGSTOP')
  try {
    assert.equal(await putsToMissingBucket(), expected, 'n3 frozen')
  } finally {
    process.kill(pid, 'SIGCONT')
  }
})

test('a node frozen under a body it took is given up with a 503, not waited on', async () => {
  // The node that asked for the body (100 Continue) is the gateway's alone to wait for; frozen in
  // the middle of it, it shows no progress, and the gateway gives up with S3's retryable 503.
  // Every node is frozen, so the one with the body is, whichever the gateway chose.
  assert.ok(await pollUntil(allAliveAtGateway, ALIVE_WAIT_MS, 200), 'the gateway sees all Alive')
  const pids = ['n1', 'n2', 'n3'].map((id) => cluster.server(id).child.pid)
  const half = await halfSentRequest(cluster.server('g1').url, {
    method: 'PUT',
    path: '/frozen/stalled',
    body: randomBytes(STALLED_BODY_BYTES),
  })
  await sleep(FIRST_HALF_MS)
  const stopped: number[] = []
  try {
    for (const pid of pids) {
      assert.ok(pid !== undefined)
      process.kill(pid, 'SIGSTOP')
      stopped.push(pid)
    }
    const startedMs = Date.now()
    const answer = await half.finish()
    const ms = Date.now() - startedMs
    console.log(`  a node frozen under a body: ${answer.status} after ${ms} ms`)
    assert.is(answer.status, 503, answer.body.toString())
    assert.is(errorCode(answer), 'ServiceUnavailable')
    assert.match(answer.body.toString(), /the storage node stopped/)
    assert.ok(ms < STALLED_ANSWER_MAX_MS, `${ms} ms`)
  } finally {
    for (const pid of stopped) process.kill(pid, 'SIGCONT')
  }
})

test.run()
