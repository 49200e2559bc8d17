/** @module The set-up most S3 suites share: one server started before the suite and stopped
 * after it, an SDK client with the test keys, the suite's bucket, and `test`, which registers
 * the suite's cases. `server` and `s3` are live
 * bindings: a suite imports them and reads them in its tests (each suite runs in its own
 * process, so they are that suite's). With TEST_TARGET=cluster the suite runs against the first
 * node of a 3-node cluster (test/support/cluster.ts), and with TEST_TARGET=gateway against a
 * gateway in front of one: the same tests, another deployment. When the test runner started that
 * cluster itself (TEST_TARGET_URL and TEST_TARGET_DATA_DIR name the member a suite talks to), the
 * suite uses it and leaves it running: suites of one pass share a cluster, each with its own
 * buckets. Through a gateway only the suite's smoke cases run: the gateway relays requests and
 * bodies whole, so one case of each operation family and of each way a body or a signature can
 * arrive shows that it does, while the node and cluster passes run every case. */
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3'
import { test as uvuTest } from 'uvu'
import { login } from './admin-client.js'
import { ROOT_PASSWORD, ROOT_USERNAME, startCluster } from './cluster.js'
import { clientFor, startServer, type TestServer } from './server.js'

/** What a suite reaches its server by, and what ends it. */
export interface SuiteTarget {
  url: string
  dataDir: string
  client: TestServer['client']
  stop(): Promise<unknown>
  cleanup(): void
}

export let server: SuiteTarget
export let s3: S3Client

type Target = 'single' | 'cluster' | 'gateway'

/** Store shards of the single node the suites run on. */
const SUITE_SHARDS = 3

function target(): Target {
  const named = process.env['TEST_TARGET'] ?? 'single'
  if (named === 'single' || named === 'cluster' || named === 'gateway') return named
  throw new Error(`TEST_TARGET must be single, cluster or gateway, got ${named}`)
}

/** The server a suite talks to; stopping it stops everything the target started. */
async function startTarget(): Promise<SuiteTarget> {
  const chosen = target()
  // A single node's store in shards (more than this machine may have cores): every S3 case
  // meets the routing of keys to shards and their claims on shared records.
  if (chosen === 'single') {
    const root = { SVC_ROOT_USERNAME: ROOT_USERNAME, SVC_ROOT_PASSWORD: ROOT_PASSWORD }
    return startServer({ env: { SVC_STORE_SHARDS: String(SUITE_SHARDS), ...root } })
  }
  const shared = process.env['TEST_TARGET_URL']
  if (shared !== undefined && shared !== '') {
    const dataDir = process.env['TEST_TARGET_DATA_DIR'] ?? ''
    const client: TestServer['client'] = (keys) => clientFor(shared, keys)
    return { url: shared, dataDir, client, stop: () => Promise.resolve(), cleanup: () => {} }
  }
  const cluster = await startCluster({ nodes: 3, gateways: chosen === 'gateway' ? 1 : 0 })
  const facing = cluster.server(chosen === 'gateway' ? 'g1' : 'n1')
  return {
    ...facing,
    stop: async () => {
      const code = await facing.stop()
      await cluster.destroy()
      return code
    },
    cleanup: () => undefined,
  }
}

/** The beginnings of the names of the cases that run through a gateway. */
let smokeCases: readonly string[] = []
const smokeSeen = new Set<string>()

function runsHere(name: string): boolean {
  if (target() !== 'gateway') return true
  const smoke = smokeCases.find((start) => name.startsWith(start))
  if (smoke !== undefined) smokeSeen.add(smoke)
  return smoke !== undefined
}

type Case = Parameters<typeof uvuTest>[1]

/** uvu's `test`, but for a gateway target, where it registers only the smoke cases. `run` fails
 * the suite when a smoke name matches no case (a case renamed without its entry). */
export const test = Object.assign(
  (name: string, handler: Case): void => {
    if (runsHere(name)) uvuTest(name, handler)
  },
  {
    before: uvuTest.before,
    after: uvuTest.after,
    run: (): void => {
      const unmatched = smokeCases.filter((start) => !smokeSeen.has(start))
      if (target() === 'gateway' && unmatched.length > 0) {
        throw new Error(`smoke cases that match no case: ${unmatched.join('; ')}`)
      }
      uvuTest.run()
    },
  },
)

/** Registers the suite's before and after hooks; `bucket`, when given, exists before any test;
 * `smoke` names the cases (by the start of their names) that also run through a gateway. */
export function useS3Suite(bucket?: string, smoke: readonly string[] = []): void {
  smokeCases = smoke
  uvuTest.before(async () => {
    server = await startTarget()
    s3 = server.client()
    if (bucket !== undefined) await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  })
  uvuTest.after(async () => {
    s3.destroy()
    await server.stop()
    server.cleanup()
  })
}

/** A token of the admin API's root user, which every target has (the cluster's own). */
export function adminToken(): Promise<string> {
  return login(server, ROOT_USERNAME, ROOT_PASSWORD)
}
