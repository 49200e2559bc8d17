/** Goal: /metrics counts every S3 request under the operation it named, with its method and
 * status, and shows every actor (up, restarts, mailbox, messages) in one valid text exposition.
 * Method: a real server; known requests, then exact counter values from a scrape, and each
 * metric family's HELP and TYPE appearing exactly once. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { startServer, type TestServer } from '../support/server.js'

let server: TestServer
let s3: S3Client

test.before(async () => {
  server = await startServer()
  s3 = server.client()
})

test.after(async () => {
  s3.destroy()
  await server.stop()
  server.cleanup()
})

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

test('S3 requests are counted by operation, method and status', async () => {
  await s3.send(new CreateBucketCommand({ Bucket: 'metered' }))
  for (let i = 0; i < 3; i++) {
    await s3.send(new PutObjectCommand({ Bucket: 'metered', Key: `k${i}`, Body: 'x' }))
  }
  await s3.send(new GetObjectCommand({ Bucket: 'metered', Key: 'k0' }))
  await s3.send(new GetObjectCommand({ Bucket: 'metered', Key: 'absent' })).catch(() => undefined)
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const labels = (op: string, method: string, status: number): string =>
    `operation="${op}",method="${method}",status="${status}"`
  assert.is(sample(text, 'svc_http_requests_total', labels('CreateBucket', 'PUT', 200)), 1)
  assert.is(sample(text, 'svc_http_requests_total', labels('PutObject', 'PUT', 200)), 3)
  assert.is(sample(text, 'svc_http_requests_total', labels('GetObject', 'GET', 200)), 1)
  assert.is(sample(text, 'svc_http_requests_total', labels('GetObject', 'GET', 404)), 1)
  assert.is(sample(text, 'svc_http_request_duration_seconds_count', 'operation="PutObject"'), 3)
  assert.is(
    sample(text, 'svc_http_response_bytes_total', 'operation="GetObject"') !== undefined,
    true,
  )
})

test('every actor is in one valid exposition', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  for (const actor of ['replica-store', 'coordinator', 'iam', 'http-ingress']) {
    assert.is(sample(text, 'svc_actor_up', `actor="${actor}"`), 1, actor)
    assert.is(sample(text, 'svc_actor_restarts_total', `actor="${actor}"`), 0, actor)
  }
  assert.match(text, /svc_actor_messages_total\{kind="object.put",actor="replica-store"\} \d+/)
  const seen = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) {
      const key = line.split(' ').slice(0, 3).join(' ')
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
  }
  const repeated = [...seen.entries()].filter(([, count]) => count > 1).map(([key]) => key)
  assert.equal(repeated, [])
})

test.run()
