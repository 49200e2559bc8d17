/** @module One simulated run from a seed: 3 to 5 nodes of one pool (RF 3, W 2, R 2) on virtual
 * time, clients issuing S3 operations while the seed's faults happen, then a calm in which every
 * node runs again and the network heals, and the checks:
 * - every read and listing of the history saw an acknowledged write or a newer one (history.ts),
 *   with whole bytes, and no read's body stalled;
 * - no actor failed an assertion;
 * - in a run without crashes or lost calls, after the calm and before any read, the replicas of
 *   each single-part object and deletion of the plain bucket agree (hinted handoff brought them);
 * - after the calm and two sweeps of reads through every node (read repair), every replica of
 *   each key of the plain bucket holds the same record (multipart objects included), and in the
 *   versioned bucket replicas that hold the same stamp for a key hold the same version; every
 *   copy reads back whole and right (the scrubber, a pass every SCRUB_PERIOD_MS, has healed the
 *   corrupt ones);
 * - after it, every replica of each key holds the same records (the items of its digest) and
 *   lists the same versions (its store's ListObjectVersions of the key);
 * - each store's references and counters match its records (store-audit.ts), and no replica
 *   holds open an upload that a write quorum of the others completed (its parts would count in
 *   its bucket's storage beside the object);
 * - each store's count of hints (its pending hints, in all and per replica) is the number of its
 *   hint records, and none is left: with every node up and calm, every hint was delivered.
 * - every node's catalog holds the same versioning for each bucket, the last change acknowledged
 *   (sim-suspended's goes Enabled, then Suspended, while the faults happen: objects from before
 *   versioning, versions and `null` versions of one key are compared as the others are).
 * Tombstones are purged GC_GRACE_MS after their change, mostly while faults still happen: a
 * deleted key that came back would show in the history (a read of an overwritten or deleted
 * value) or in what the replicas hold.
 * At most RF − W = 1 node is down or cut off at any time, as the guarantee asks, and a content
 * has at most RF − W corrupt copies at once (a corrupt copy is a replica lost until healed). The
 * faults of a run are chosen by its seed, each kind on or off; store kills come on top of the
 * RF − W bound (a store that restarts loses nothing durable). */
import { createHash } from 'node:crypto'
import type { AntiEntropyState } from '../../actors/anti-entropy/anti-entropy.js'
import type { HintQueueState } from '../../actors/hint-queue/hint-queue.js'
import {
  completedUploadKey,
  fileKey,
  HINT_END,
  HINT_PREFIX,
} from '../../actors/replica-store/keys.js'
import type { StoreState } from '../../actors/replica-store/store-state.js'
import { loadClusterSettings } from '../../runtime/cluster-config.js'
import { clusterKey } from '../../runtime/cluster/cluster-key.js'
import { loadConfig } from '../../runtime/config.js'
import { loadNodeSecrets } from '../../runtime/node-secrets.js'
import { partitionOf, partitionTable } from '../../protocol/placement.js'
import { unpurged, type KeyManifest } from '../../protocol/anti-entropy.js'
import type { Result } from '../../protocol/errors.js'
import type { AbsentResult, GetResult, MarkerResult, StoreMsg } from '../../protocol/messages.js'
import {
  PLAIN_BUCKET,
  SIM_BUCKETS,
  SIM_KEYS,
  SimClient,
  SUSPENDED_BUCKET,
  Values,
  VERSIONED_BUCKET,
  type ClientWorld,
} from './client.js'
import { memoryStream } from '../support/fake-context.js'
import { checkReads, formatHistory, type Op } from './history.js'
import { SimNetwork } from './network.js'
import { SimRandom } from './random.js'
import { Scheduler, SIM_EPOCH_MS } from './scheduler.js'
import { SIM_ACTORS, SimNode } from './sim-node.js'
import { auditStore } from './store-audit.js'
import { answerOf, Trace } from './trace.js'
import { retagKeys, retagsHold } from './retagger.js'

export interface SimOptions {
  seed: number
  /** Keep a readable trace of the run's events. */
  trace?: boolean
  /** W and R (2 and 2 unless given): weaker ones let the checks show they can fail. */
  quorums?: { write: number; read: number }
  /** How long tombstones are kept, when not GC_GRACE_MS: set past the configuration's check, so
   * that it may be shorter than the rejoin window and than a node is away. A replica that missed
   * a deletion then still holds the object, and serves, when the others' tombstones are past the
   * grace: only the purge's rule (every other replica of the partition found alike in the round)
   * keeps the key deleted. */
  gcGraceMs?: number
}

/** The faults one seed turns on. */
export interface FaultPlan {
  nodes: number
  clients: number
  delay: boolean
  loss: boolean
  duplication: boolean
  partitions: boolean
  nodeCrashes: boolean
  actorCrashes: boolean
  clockSkew: boolean
  corruptBlobs: boolean
  /** A node's replica-store killed while it takes requests: writes and hints in flight. */
  storeKills: boolean
  /** Object tags set beside the clients' writes (retagger.ts). */
  retags: boolean
}

export interface SimReport {
  seed: number
  plan: FaultPlan
  problems: string[]
  history: Op[]
  /** Operations that answered ok, of all. */
  acknowledged: number
  /** Hints the nodes' hint queues delivered (since their last start). */
  hintsDelivered: number
  /** Tombstones the nodes' anti-entropy purged (since its last start). */
  tombstonesPurged: number
  events: number
  virtualMs: number
  trace: string
  /** The history as text: equal for two runs of one seed. */
  fingerprint: string
}

/** Virtual time the clients run while faults happen, and the calm after. */
const FAULT_PHASE_MS = 20_000
const CALM_MS = 15_000
const OPS_PER_CLIENT_MAX = 40
const CLUSTER_NAME = 'sim'
const ROOT_PASSWORD = 'sim-root-password-1'
const SCRUB_PERIOD_MS = 4_320
const ANTI_ENTROPY_INTERVAL_MS = 5_000
/** Tombstones are purged this long after their change, by the nodes' anti-entropy: those of the
 * fault phase while faults still happen and in the calm. A node is away at most 5 s, within the
 * rejoin window (REJOIN_WINDOW_MS: it comes back without a bootstrap), so a replica that missed a
 * deletion may still hold the object when the others' tombstones are near their grace: only the
 * purge's rule, every replica of the partition found alike in the round, keeps the key deleted. */
const GC_GRACE_MS = 12_000
/** Longer than any absence of the faults (5 s, and up to a quarter of the window since the node
 * last noted it was alive), shorter than the grace, as the configuration asks. */
const REJOIN_WINDOW_MS = 8_000
/** Time for every node to start and pull the catalog before the calm's bootstraps. */
const BOOTSTRAP_AFTER_MS = 3_000
const DAY_MS = 86_400_000
/** The nodes' SVC_REPLICATION_FACTOR (its default). */
const REPLICATION_FACTOR = 3
/** Open uploads (U\0 bucket\0 key\0 upload id), read in one scan: a run makes a few dozen. */
const UPLOAD_PREFIX = 'U\0'
const UPLOAD_END = 'U\x01'
const SCAN_ROWS_MAX = 100_000

/** The retagger's client id, apart from the clients' (1 to 4) and the admin's (0). */
const RETAGGER_CLIENT = 9

export function planOf(seed: number): FaultPlan {
  const random = new SimRandom(seed).fork(1)
  return {
    nodes: random.between(3, 5),
    clients: random.between(2, 4),
    delay: random.chance(0.5),
    loss: random.chance(0.4),
    duplication: random.chance(0.4),
    partitions: random.chance(0.4),
    nodeCrashes: random.chance(0.4),
    actorCrashes: random.chance(0.4),
    clockSkew: random.chance(0.5),
    corruptBlobs: random.chance(0.3),
    storeKills: random.chance(0.3),
    // Drawn last, so that every fault above is what it was before retags existed.
    retags: random.chance(0.5),
  }
}

export async function simulate(options: SimOptions): Promise<SimReport> {
  const { seed } = options
  const plan = planOf(seed)
  const random = new SimRandom(seed)
  const scheduler = new Scheduler()
  const trace = new Trace(options.trace === true, scheduler.nowMs)
  const network = new SimNetwork(scheduler, random.fork(2))
  const quorums = options.quorums ?? { write: 2, read: 2 }
  const gcGraceMs = options.gcGraceMs ?? GC_GRACE_MS
  const settings = { quorums, gcGraceMs }
  const nodes = await makeNodes(plan, settings, scheduler, network, random, trace)
  if (plan.clockSkew) {
    const skews = random.fork(3)
    for (const node of nodes.slice(1)) node.skewMs = skews.between(-2_000, 2_000)
  }
  for (const node of nodes) void node.start()
  const world: ClientWorld = { scheduler, nodes, values: new Values(), history: [], problems: [] }
  const admin = new SimClient(0, world, random.fork(4))

  // Start: the nodes find each other, then the buckets exist before the faults begin.
  await scheduler.run(scheduler.nowMs + 5_000)
  await setUp(world, admin)
  const setupOps = world.history.length

  // Faults, with clients running.
  network.faults = {
    latencyMs: plan.delay ? [0.1, 40] : [0.1, 2],
    lossRate: plan.loss ? 0.02 : 0,
    duplicateRate: plan.duplication ? 0.05 : 0,
  }
  const faultsUntil = scheduler.nowMs + FAULT_PHASE_MS
  scheduleFaults(plan, world, network, random.fork(5), trace, faultsUntil, quorums.write)
  if (plan.storeKills) scheduleStoreKills(world, random.fork(6), faultsUntil)
  const versioning = changeVersioning(world, admin, random.fork(7), trace, faultsUntil)
  const tagger = new SimClient(RETAGGER_CLIENT, world, random.fork(8))
  const retags = plan.retags
    ? retagKeys(world, tagger, random.fork(9), trace, faultsUntil)
    : Promise.resolve([])
  const clients = Array.from(
    { length: plan.clients },
    (_, index) => new SimClient(index + 1, world, random.fork(10 + index)),
  )
  let running = clients.length
  for (const client of clients) {
    void client.run(faultsUntil, OPS_PER_CLIENT_MAX).finally(() => running--)
  }
  await scheduler.run(faultsUntil + 60_000, () => running === 0 && scheduler.nowMs >= faultsUntil)

  // Calm: every node up, the network whole and quiet; then two sweeps of reads.
  network.faults = { latencyMs: [0.1, 2], lossRate: 0, duplicateRate: 0 }
  network.heal()
  for (const node of nodes) if (!node.up) void node.start()
  // A node whose crashes kept it away longer than the rejoin window in all is needs_bootstrap:
  // bootstrapped, as an operator would, once it has started.
  await scheduler.run(scheduler.nowMs + BOOTSTRAP_AFTER_MS)
  await drive(scheduler, bootstrapStale(world, trace))
  await scheduler.run(scheduler.nowMs + CALM_MS)
  // Without crashes or lost calls every miss was hinted and every hint can be delivered: the
  // replicas agree before any read repairs them.
  const hinted = !plan.nodeCrashes && !plan.actorCrashes && !plan.storeKills && !plan.loss
  const beforeReads = hinted ? await drive(scheduler, compareReplicas(world, 'after hints')) : []
  for (let sweep = 0; sweep < 2; sweep++) {
    await drive(scheduler, sweepReads(world, admin))
    await scheduler.run(scheduler.nowMs + 2_000)
  }

  const problems = [...world.problems]
  problems.push(...checkReads(world.history, () => [...SIM_KEYS]))
  for (const node of nodes) problems.push(...node.crashes.map((crash) => `actor crash: ${crash}`))
  problems.push(...beforeReads)
  problems.push(...(await drive(scheduler, compareReplicas(world, 'after read repair'))))
  problems.push(...(await drive(scheduler, compareDigests(world, gcGraceMs))))
  for (const node of nodes) {
    problems.push(...auditStore(node.kv).map((line) => `${node.id} store: ${line}`))
    problems.push(...hintsLeft(node))
  }
  problems.push(...uploadsLeftOpen(nodes, quorums.write))
  const changes = await drive(scheduler, versioning)
  problems.push(...(await drive(scheduler, versioningAgrees(world, changes))))
  const retagged = await drive(scheduler, retags)
  problems.push(...(await drive(scheduler, retagsHold(world, tagger, retagged))))
  const history = world.history
  const fingerprint = formatHistory(history)
  return {
    seed,
    plan,
    problems,
    history,
    acknowledged: history.slice(setupOps).filter((op) => op.outcome === 'ok').length,
    hintsDelivered: nodes.reduce((sum, node) => sum + hintsDeliveredBy(node), 0),
    tombstonesPurged: nodes.reduce((sum, node) => sum + tombstonesPurgedBy(node), 0),
    events: scheduler.steps,
    virtualMs: scheduler.nowMs - SIM_EPOCH_MS,
    trace: trace.format(),
    fingerprint,
  }
}

/** After the calm: the hints `node` keeps, which must be none (every replica was up long enough to
 * be brought each one), and its store's counts of them, which must be the records. */
function hintsLeft(node: SimNode): string[] {
  const problems: string[] = []
  const rows = node.kv.scan({ gte: HINT_PREFIX, lt: HINT_END, limit: Number.MAX_SAFE_INTEGER })
  const perNode = new Map<string, number>()
  for (const [key] of rows) {
    const replica = key.slice(HINT_PREFIX.length, key.indexOf('\0', HINT_PREFIX.length))
    perNode.set(replica, (perNode.get(replica) ?? 0) + 1)
  }
  const store = node.stateOf('replica-store') as StoreState | undefined
  if (store === undefined) problems.push(`${node.id}'s store is not running after the calm`)
  else {
    const counted = [...store.hintsPerNode].filter(([, count]) => count !== 0)
    const held = [...perNode].sort()
    if (store.hintsPending !== rows.length || !sameCounts(counted.sort(), held)) {
      problems.push(
        `${node.id} counts ${store.hintsPending} hints (${JSON.stringify(counted)}) but keeps ` +
          `${rows.length} (${JSON.stringify(held)})`,
      )
    }
  }
  if (rows.length > 0) {
    const named = rows.map(([key, stamp]) => {
      const name = key.slice(HINT_PREFIX.length).replaceAll('\0', '/')
      return `${name}@${Buffer.from(stamp).toString('utf8')}`
    })
    problems.push(`${node.id} keeps hints after the calm: ${named.join(', ')}`)
  }
  return problems
}

function sameCounts(a: [string, number][], b: [string, number][]): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** Uploads a replica still holds open though a write quorum of the others completed them: their
 * parts would count in its bucket's storage beside the object it is brought. */
function uploadsLeftOpen(nodes: readonly SimNode[], writeQuorum: number): string[] {
  const problems: string[] = []
  for (const node of nodes) {
    const open = node.kv.scan({ gte: UPLOAD_PREFIX, lt: UPLOAD_END, limit: SCAN_ROWS_MAX })
    for (const [key] of open) {
      const uploadId = key.slice(key.lastIndexOf('\0') + 1)
      const completedOn = nodes.filter(
        (other) => other.kv.get(completedUploadKey(uploadId)) !== undefined,
      )
      if (completedOn.length >= writeQuorum) {
        const where = completedOn.map((other) => other.id).join(', ')
        const name = key.slice(UPLOAD_PREFIX.length, key.lastIndexOf('\0')).replace('\0', '/')
        problems.push(`${node.id} holds upload ${uploadId} of ${name} open, completed on ${where}`)
      }
    }
  }
  return problems
}

function hintsDeliveredBy(node: SimNode): number {
  const state = node.stateOf('hint-queue') as HintQueueState | undefined
  return state?.counters.delivered ?? 0
}

function tombstonesPurgedBy(node: SimNode): number {
  const state = node.stateOf('anti-entropy') as AntiEntropyState | undefined
  return state?.status.tombstonesPurged ?? 0
}

async function makeNodes(
  plan: FaultPlan,
  settings: { quorums: { write: number; read: number }; gcGraceMs: number },
  scheduler: Scheduler,
  network: SimNetwork,
  random: SimRandom,
  trace: Trace,
): Promise<SimNode[]> {
  const ids = Array.from({ length: plan.nodes }, (_, index) => `n${index + 1}`)
  const addressOf = (index: number): string => `127.0.0.1:${19_101 + index}`
  const poolNodes = ids.map((id, index) => `${id}:${addressOf(index)}`).join(',')
  const nodes: SimNode[] = []
  for (const [index, id] of ids.entries()) {
    const env = {
      SVC_MODE: 'cluster',
      SVC_CLUSTER_NAME: CLUSTER_NAME,
      SVC_CLUSTER_SECRET: 'a simulated cluster secret of 32 chars',
      SVC_NODE_ID: id,
      SVC_NODE_GRPC_ADDR: addressOf(index),
      SVC_NODE_HTTP_ADDR: `127.0.0.1:${19_001 + index}`,
      SVC_SEEDS: ids.map((_, other) => addressOf(other)).join(','),
      SVC_POOL_NAME: 'p1',
      SVC_WRITE_QUORUM: String(settings.quorums.write),
      SVC_READ_QUORUM: String(settings.quorums.read),
      SVC_POOL_NODES: poolNodes,
      SVC_ROOT_USERNAME: 'root',
      SVC_ROOT_PASSWORD: ROOT_PASSWORD,
      SVC_ACCESS_KEY_ID: 'SIMACCESSKEY0000001',
      SVC_SECRET_ACCESS_KEY: 'sim-secret-access-key-of-forty-chars-00',
      SVC_DATA_DIR: `sim-data-${id}`,
      // A pass every 4.3 s of virtual time, so that the scrubber runs through the faults and
      // heals corrupt copies in the calm.
      SVC_SCRUBBER_FULL_SCAN_DAYS: String(SCRUB_PERIOD_MS / 86_400_000),
      // Rounds every 5 s of virtual time: three in the calm.
      SVC_ANTI_ENTROPY_INTERVAL_SECS: String(ANTI_ENTROPY_INTERVAL_MS / 1000),
      SVC_GC_GRACE_DAYS: String(GC_GRACE_MS / DAY_MS),
      SVC_MAX_REJOIN_DOWNTIME_DAYS: String(REJOIN_WINDOW_MS / DAY_MS),
    }
    const config = loadConfig(env)
    const cluster = loadClusterSettings(env, 'cluster')
    const actorConfig = { ...config.actorConfig, ...cluster.actorConfig }
    // Past the check above, which wants the grace longer than the rejoin window.
    actorConfig['SVC_GC_GRACE_DAYS'] = String(settings.gcGraceMs / DAY_MS)
    const secrets = await loadNodeSecrets('', env, clusterKey(actorConfig).key)
    const node = new SimNode(
      id,
      addressOf(index),
      { ...actorConfig, ...secrets, SVC_VERSION: 'sim' },
      scheduler,
      network,
      random.fork(100 + index),
      trace,
    )
    network.add(node)
    nodes.push(node)
  }
  return nodes
}

/** The two buckets, through n1, retried until they exist (the nodes may still be joining). */
async function setUp(world: ClientWorld, admin: SimClient): Promise<void> {
  const node = world.nodes[0] as SimNode
  const steps: StoreMsgBody[] = [
    { kind: 'bucket.create', bucket: PLAIN_BUCKET, owner: 'root' },
    { kind: 'bucket.create', bucket: VERSIONED_BUCKET, owner: 'root' },
    { kind: 'bucket.versioning.put', bucket: VERSIONED_BUCKET, status: 'Enabled' },
    { kind: 'bucket.create', bucket: SUSPENDED_BUCKET, owner: 'root' },
  ]
  for (const step of steps) {
    let answer: Result<unknown> = { ok: false, code: 'unavailable', detail: 'not asked' }
    for (let attempt = 0; attempt < 20 && !answer.ok; attempt++) {
      answer = await drive(world.scheduler, admin.control(node, step))
      if (answer.ok || answer.code === 'bucket_owned_by_you') break
      await world.scheduler.run(world.scheduler.nowMs + 1_000)
    }
    if (!answer.ok && answer.code !== 'bucket_owned_by_you') {
      const nodes = world.nodes.map((one) => `${one.id}: ${[...one.actors.keys()].join(', ')}`)
      throw new Error(`set-up ${step.kind} failed: ${answer.detail}; running ${nodes.join('; ')}`)
    }
  }
}

type StoreMsgBody = { kind: string; bucket: string } & Record<string, unknown>

/** Runs the scheduler until `promise` settles (bounded by virtual time). */
async function drive<T>(scheduler: Scheduler, promise: Promise<T>): Promise<T> {
  let done = false
  void promise.finally(() => (done = true))
  await scheduler.run(scheduler.nowMs + 600_000, () => done)
  if (!done) throw new Error('the simulation went quiet with a request unanswered')
  return promise
}

/** Reads every key through every node, and lists each bucket through each. */
async function sweepReads(world: ClientWorld, admin: SimClient): Promise<void> {
  for (const node of world.nodes) {
    for (const bucket of SIM_BUCKETS) {
      for (const key of SIM_KEYS) await admin.read(node, bucket, key)
      await admin.list(node, bucket)
    }
  }
}

/** Asks each replica's store directly what it holds of each key, and compares. */
async function compareReplicas(world: ClientWorld, when: string): Promise<string[]> {
  const problems: string[] = []
  const byId = new Map(world.nodes.map((node) => [node.id, node]))
  const table = partitionTable(
    world.nodes.map((node) => node.id),
    3,
  )
  for (const bucket of SIM_BUCKETS) {
    for (const key of SIM_KEYS) {
      const replicas = table[partitionOf(bucket, key)] as string[]
      const held: { node: string; stamp: string; record: string }[] = []
      for (const id of replicas) {
        const node = byId.get(id) as SimNode
        const msg: StoreMsg = {
          kind: 'object.get',
          bucket,
          key,
          stamped: true,
          requestId: 'check',
          deadlineMs: node.now() + 30_000,
        }
        const answer = (await node.deliver('replica-store', msg, { alive: true })) as Result<
          GetResult | AbsentResult | MarkerResult
        >
        if (!answer.ok) {
          problems.push(`${id} cannot say what it holds of ${bucket}/${key}: ${answer.code}`)
          continue
        }
        const copy = await bytesHeld(world, node, bucket, key, answer.value)
        if (copy !== null) problems.push(`${id} holds ${bucket}/${key}: ${copy}`)
        held.push({ node: id, ...describe(answer.value) })
      }
      problems.push(...disagreements(bucket, key, held, when))
    }
  }
  return problems
}

/** Reads one replica's copy of a key straight from its store: null when its bytes are the value
 * its ETag says (or it holds none), else what is wrong (a copy its store knows corrupt, which the
 * scrubber has not healed, among them). */
async function bytesHeld(
  world: ClientWorld,
  node: SimNode,
  bucket: string,
  key: string,
  held: GetResult | AbsentResult | MarkerResult,
): Promise<string | null> {
  if (!('info' in held)) return null
  const stream = memoryStream()
  const msg: StoreMsg = {
    kind: 'object.get',
    bucket,
    key,
    stream: stream.handle,
    requestId: 'check',
    deadlineMs: node.now() + 30_000,
  }
  const answer = (await node.deliver('replica-store', msg, { alive: true })) as Result<GetResult>
  if (!answer.ok) return `a read that failed: ${answer.code}`
  let bytes = answer.value.body
  if (bytes === undefined) {
    stream.request(0, answer.value.info.size - 1)
    const got = await stream.received()
    if (!got.ended) return `a body that failed: ${got.code}`
    bytes = got.bytes
  }
  const seen = world.values.identify(bytes)
  return 'problem' in seen ? seen.problem : null
}

function describe(answer: GetResult | AbsentResult | MarkerResult): {
  stamp: string
  record: string
} {
  const stamp = answer.keyStamp ?? 'none'
  if ('absent' in answer) return { stamp, record: 'absent' }
  if ('marker' in answer) {
    return { stamp, record: `marker ${answer.marker.versionId} ${answer.marker.lastModifiedMs}` }
  }
  const info = answer.info
  return {
    stamp,
    record: `${info.etag} ${info.size} ${info.lastModifiedMs} ${info.versionId ?? ''}`,
  }
}

function disagreements(
  bucket: string,
  key: string,
  held: { node: string; stamp: string; record: string }[],
  when: string,
): string[] {
  const problems: string[] = []
  const byStamp = new Map<string, Set<string>>()
  for (const one of held) {
    const records = byStamp.get(one.stamp) ?? new Set()
    records.add(one.record)
    byStamp.set(one.stamp, records)
  }
  for (const [stamp, records] of byStamp) {
    if (records.size > 1) {
      problems.push(`${bucket}/${key}: replicas at stamp ${stamp} hold ${[...records].join(' / ')}`)
    }
  }
  // Read repair gives every replica it reads the winner's records, multipart objects included.
  const visible = new Set(held.map((one) => one.record))
  if (bucket === PLAIN_BUCKET && visible.size > 1) {
    const states = held.map((one) => `${one.node}@${one.stamp}: ${one.record}`).join(', ')
    problems.push(`${bucket}/${key}: replicas differ ${when}: ${states}`)
  }
  return problems
}

/** What became of the versioning changes of SUSPENDED_BUCKET: the last one acknowledged, and
 * every attempt that failed. A failed change may have reached a replica of the catalog and still
 * spread from it, last writer wins: it ends the history when its stamp can be above the
 * acknowledged one's. Acknowledged changes are ordered among themselves whatever the clocks
 * (their quorums meet and a stale answer restamps), failed ones only by their stamps. */
interface VersioningChanges {
  acknowledged: { status: VersioningStatus; stampAtLeastMs: number } | null
  failed: { status: VersioningStatus; stampAtMostMs: number }[]
}

type VersioningStatus = 'Enabled' | 'Suspended'

/** While the clients run, SUSPENDED_BUCKET's versioning is Enabled in the first third of the fault
 * phase and Suspended in the second, each asked through a random node until one acknowledges it
 * (a node down, cut off or without a quorum of the catalog's peers refuses), a second apart. */
async function changeVersioning(
  world: ClientWorld,
  admin: SimClient,
  random: SimRandom,
  trace: Trace,
  untilMs: number,
): Promise<VersioningChanges> {
  const { scheduler } = world
  const third = (untilMs - scheduler.nowMs) / 3
  const changes: VersioningChanges = { acknowledged: null, failed: [] }
  // A stamp is the hybrid clock of the node that made it, which its peers' stamps can raise to
  // theirs but no further: at most the fastest clock of the cluster, at least its own.
  const fastestSkewMs = Math.max(...world.nodes.map((node) => node.skewMs))
  const steps = [
    { status: 'Enabled' as const, atMs: scheduler.nowMs + random.float() * third },
    { status: 'Suspended' as const, atMs: scheduler.nowMs + third + random.float() * third },
  ]
  for (const { status, atMs } of steps) {
    await scheduler.sleep(atMs - scheduler.nowMs)
    for (let attempt = 0; attempt < VERSIONING_ATTEMPTS_MAX; attempt++) {
      if (attempt > 0) await scheduler.sleep(1_000)
      const node = random.pick(world.nodes)
      const step = { kind: 'bucket.versioning.put', bucket: SUSPENDED_BUCKET, status }
      const askedMs = scheduler.nowMs
      const answer = await admin.control(node, step)
      trace.add(scheduler.nowMs, node.id, `versioning ${status} asked: ${answerOf(answer)}`)
      if (answer.ok) {
        changes.acknowledged = { status, stampAtLeastMs: askedMs + node.skewMs }
        break
      }
      changes.failed.push({ status, stampAtMostMs: scheduler.nowMs + fastestSkewMs })
    }
  }
  return changes
}

/** The statuses SUSPENDED_BUCKET may end with: the last acknowledged, or that of a failed change
 * whose stamp can be above it. */
function possibleEnds(changes: VersioningChanges): Set<string> {
  const last = changes.acknowledged
  const ends = new Set([String(last?.status ?? null)])
  for (const failed of changes.failed) {
    if (last === null || failed.stampAtMostMs >= last.stampAtLeastMs) ends.add(failed.status)
  }
  return ends
}

const VERSIONING_ATTEMPTS_MAX = 10

/** After the calm every node's catalog holds the same versioning for each bucket, one that
 * SUSPENDED_BUCKET's changes may end with. */
async function versioningAgrees(world: ClientWorld, changes: VersioningChanges): Promise<string[]> {
  const problems: string[] = []
  for (const bucket of SIM_BUCKETS) {
    const statuses: string[] = []
    for (const node of world.nodes) {
      const msg: StoreMsg = {
        kind: 'bucket.versioning.get',
        bucket,
        requestId: 'check',
        deadlineMs: node.now() + 30_000,
      }
      const answer = (await node.deliver('replica-store', msg, { alive: true })) as Result<{
        status: string | null
      }>
      statuses.push(answer.ok ? String(answer.value.status) : `a read that failed: ${answer.code}`)
    }
    const held = world.nodes.map((node, index) => `${node.id}: ${statuses[index]}`).join(', ')
    if (new Set(statuses).size > 1)
      problems.push(`${bucket}: nodes hold different versioning: ${held}`)
    const ends = possibleEnds(changes)
    if (bucket === SUSPENDED_BUCKET && !ends.has(statuses[0] as string)) {
      const last = String(changes.acknowledged?.status ?? null)
      problems.push(`${bucket}: versioning ${last} was acknowledged last, nodes hold ${held}`)
    }
  }
  return problems
}

/** Starts a bootstrap on every node that needs one. */
async function bootstrapStale(world: ClientWorld, trace: Trace): Promise<void> {
  for (const node of world.nodes) {
    const ask = { requestId: 'bootstrap', deadlineMs: node.now() + 30_000 }
    const phase = await node.deliver('replica-store', { kind: 'system.phase', ...ask }, node.life)
    if (!phase.ok || phase.value !== 'needs_bootstrap') continue
    trace.add(world.scheduler.nowMs, node.id, 'bootstrap asked')
    await node.deliver('replica-store', { kind: 'node.bootstrap', ...ask }, node.life)
  }
}

/** After the calm (anti-entropy ran several rounds with every node up): every replica of each key
 * holds the same records, by what the stores list (the items of their digests,
 * protocol/anti-entropy.ts), tombstones past the grace aside. */
async function compareDigests(world: ClientWorld, gcGraceMs: number): Promise<string[]> {
  const problems: string[] = []
  const byId = new Map(world.nodes.map((node) => [node.id, node]))
  const table = partitionTable(
    world.nodes.map((node) => node.id),
    REPLICATION_FACTOR,
  )
  for (const bucket of SIM_BUCKETS) {
    for (const key of SIM_KEYS) {
      const held: string[] = []
      const kept = new Set<string>()
      const listed: string[] = []
      const listings = new Set<string>()
      for (const id of table[partitionOf(bucket, key)] as string[]) {
        const node = byId.get(id) as SimNode
        const msg: StoreMsg = {
          kind: 'key.manifest',
          bucket,
          key,
          requestId: 'check',
          deadlineMs: node.now() + 30_000,
        }
        const answer = (await node.deliver('replica-store', msg, {
          alive: true,
        })) as Result<KeyManifest>
        if (!answer.ok) problems.push(`${id} cannot say what it holds of ${bucket}/${key}`)
        else {
          held.push(`${id}: ${summary(answer.value)}`)
          // Tombstones past the grace aside: a node that still sees a restarted peer joining
          // (gossip has not told it yet) has not compared with it, so has not purged them yet.
          kept.add(JSON.stringify(unpurged(answer.value, node.now(), gcGraceMs)))
        }
        const listing = await versionsListed(node, bucket, key)
        listed.push(`${id}: ${listing}`)
        listings.add(listing)
      }
      if (kept.size > 1) {
        problems.push(`${bucket}/${key}: replicas hold different records: ${held.join('; ')}`)
      }
      if (listings.size > 1) {
        problems.push(`${bucket}/${key}: replicas list different versions: ${listed.join('; ')}`)
      }
    }
  }
  return problems
}

/** The key's versions as the replica's store lists them (ListObjectVersions of its own records):
 * ids, ETags, sizes, Last-Modified, which is latest, markers. */
async function versionsListed(node: SimNode, bucket: string, key: string): Promise<string> {
  const msg: StoreMsg = {
    kind: 'object.list-versions',
    bucket,
    prefix: key,
    delimiter: '',
    keyMarker: '',
    versionIdMarker: '',
    maxKeys: 1_000,
    requestId: 'check',
    deadlineMs: node.now() + 30_000,
  }
  const answer = (await node.deliver('replica-store', msg, { alive: true })) as Result<{
    versions: { key: string }[]
  }>
  if (!answer.ok) return `a listing that failed: ${answer.code}`
  return JSON.stringify(answer.value.versions.filter((one) => one.key === key))
}

function summary(manifest: KeyManifest): string {
  const versions = manifest.versions.map(
    (v) => `${v.token ?? '-'}@${v.stamp ?? '-'}${v.marker ? ' marker' : ''}${v.current ? '*' : ''}`,
  )
  const deleted = manifest.deleted.map((one) => `-${one.token}`)
  const items = [...versions, ...deleted].join(', ')
  return `${manifest.digest ?? 'none'} q=${manifest.stamp ?? '-'} [${items}]`
}

function scheduleFaults(
  plan: FaultPlan,
  world: ClientWorld,
  network: SimNetwork,
  random: SimRandom,
  trace: Trace,
  untilMs: number,
  writeQuorum: number,
): void {
  const { scheduler, nodes } = world
  /** A corrupt copy is a replica lost for its content until healed: RF − W at most at once. */
  const damagedCopiesMax = REPLICATION_FACTOR - writeQuorum
  /** The one node down or cut off now, if any: at most RF − W = 1 at once. */
  let troubled: string | null = null
  const tick = (): void => {
    if (scheduler.nowMs >= untilMs) return
    scheduler.after(random.between(200, 2_000), tick)
    const roll = random.float()
    if (troubled === null) {
      const node = random.pick(nodes)
      if (plan.nodeCrashes && roll < 0.3) {
        troubled = node.id
        node.crash()
        scheduler.after(random.between(500, 5_000), () => {
          void node.start()
          troubled = null
        })
        return
      }
      if (plan.partitions && roll < 0.6) {
        troubled = node.id
        trace.add(scheduler.nowMs, node.id, 'partitioned from the others')
        network.partition([node.id])
        scheduler.after(random.between(500, 5_000), () => {
          trace.add(scheduler.nowMs, node.id, 'partition heals')
          network.heal()
          troubled = null
        })
        return
      }
    }
    if (plan.actorCrashes && roll >= 0.6 && roll < 0.8) {
      const node = random.pick(nodes)
      if (node.up) node.crashActor(random.pick(SIM_ACTORS))
      return
    }
    if (plan.corruptBlobs && roll >= 0.8) {
      const node = random.pick(nodes)
      const files = corruptible(nodes, node, damagedCopiesMax)
      if (files.length > 0) {
        const id = random.pick(files)
        trace.add(scheduler.nowMs, node.id, `blob ${id} corrupted`)
        node.blobs.corrupt(id, random.int((node.blobs.permanent.get(id) as Uint8Array).byteLength))
      }
    }
  }
  scheduler.after(random.between(100, 1_000), tick)
}

/** Now and then, while the clients run, the replica-store of a node dies a moment after it took a
 * write or a hint (a write of its own coordinator or of another, a hint being recorded); the
 * supervisor starts it again after its backoff. */
function scheduleStoreKills(world: ClientWorld, random: SimRandom, untilMs: number): void {
  const { scheduler } = world
  const tick = (): void => {
    if (scheduler.nowMs >= untilMs) return
    scheduler.after(random.between(500, 3_000), tick)
    const node = random.pick(world.nodes)
    if (node.up) {
      node.crashActorOnRequest('replica-store', isWriteOrHint, random.float() * 3, untilMs)
    }
  }
  scheduler.after(random.between(500, 3_000), tick)
}

function isWriteOrHint(kind: string): boolean {
  return (
    kind === 'hint.put' ||
    kind === 'object.put' ||
    kind.startsWith('object.delete') ||
    kind.startsWith('upload.')
  )
}

/** `node`'s blob files that may be corrupted now: sound ones whose content has fewer than
 * `damagedMax` corrupt copies on all nodes (a file's content is its store's F\0 record). */
function corruptible(nodes: readonly SimNode[], node: SimNode, damagedMax: number): string[] {
  const damaged = new Map<string, number>()
  const sound: { id: string; sha256: string }[] = []
  for (const one of nodes) {
    for (const [id, bytes] of one.blobs.permanent) {
      const named = one.kv.get(fileKey(id))
      if (named === undefined) continue
      const sha256 = new TextDecoder().decode(named)
      const isSound = createHash('sha256').update(bytes).digest('hex') === sha256
      if (!isSound) damaged.set(sha256, (damaged.get(sha256) ?? 0) + 1)
      else if (one === node) sound.push({ id, sha256 })
    }
  }
  return sound
    .filter((file) => (damaged.get(file.sha256) ?? 0) < damagedMax)
    .map((file) => file.id)
    .sort()
}

export { formatHistory }
