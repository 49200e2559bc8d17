/** @module The set-up most S3 suites share: one server started before the suite and stopped
 * after it, an SDK client with the test keys, and the suite's bucket. `server` and `s3` are live
 * bindings: a suite imports them and reads them in its tests (each suite runs in its own
 * process, so they are that suite's). With TEST_TARGET=cluster the suite runs against the first
 * node of a 3-node cluster (test/support/cluster.ts), and with TEST_TARGET=gateway against a
 * gateway in front of one: the same tests, another deployment. When the test runner started that
 * cluster itself (TEST_TARGET_URL and TEST_TARGET_DATA_DIR name the member a suite talks to), the
 * suite uses it and leaves it running: suites of one pass share a cluster, each with its own
 * buckets. */
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3'
import { test } from 'uvu'
import { startCluster } from './cluster.js'
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

function target(): Target {
  const named = process.env['TEST_TARGET'] ?? 'single'
  if (named === 'single' || named === 'cluster' || named === 'gateway') return named
  throw new Error(`TEST_TARGET must be single, cluster or gateway, got ${named}`)
}

/** The server a suite talks to; stopping it stops everything the target started. */
async function startTarget(): Promise<SuiteTarget> {
  const chosen = target()
  if (chosen === 'single') return startServer()
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

/** Registers the suite's before and after hooks; `bucket`, when given, exists before any test. */
export function useS3Suite(bucket?: string): void {
  test.before(async () => {
    server = await startTarget()
    s3 = server.client()
    if (bucket !== undefined) await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  })
  test.after(async () => {
    s3.destroy()
    await server.stop()
    server.cleanup()
  })
}
