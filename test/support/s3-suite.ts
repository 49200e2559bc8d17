/** @module The set-up most S3 suites share: one server started before the suite and stopped
 * after it, an SDK client with the test keys, and the suite's bucket. `server` and `s3` are live
 * bindings: a suite imports them and reads them in its tests (each suite runs in its own
 * process, so they are that suite's). */
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3'
import { test } from 'uvu'
import { startServer, type TestServer } from './server.js'

export let server: TestServer
export let s3: S3Client

/** Registers the suite's before and after hooks; `bucket`, when given, exists before any test. */
export function useS3Suite(bucket?: string): void {
  test.before(async () => {
    server = await startServer()
    s3 = server.client()
    if (bucket !== undefined) await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  })
  test.after(async () => {
    s3.destroy()
    await server.stop()
    server.cleanup()
  })
}
