/** Goal: the cluster administration routes take SigV4 as a non-S3 signer sends it, without
 * x-amz-content-sha256 (curl --aws-sigv4 for a service other than s3 does so): a call without a
 * body is served, since its payload hash is the empty body's; a call with a body answers 400
 * naming the missing header, never 401 "A valid bearer token is required.". Method: three real
 * nodes (test/support/cluster.ts); requests signed by @smithy/signature-v4 for another service
 * with no x-amz-content-sha256 header (the signer then hashes the body itself), sent by
 * node:http. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { Sha256 } from '@aws-crypto/sha256-js'
import { SignatureV4 } from '@smithy/signature-v4'
import { startCluster, type TestCluster } from '../support/cluster.js'
import { ACCESS_KEY, SECRET_KEY } from '../support/server.js'
import { send, type RawResponse } from '../support/signed-request.js'

let cluster: TestCluster

test.before(async () => {
  cluster = await startCluster({ nodes: 3 })
})

test.after(async () => {
  // Undefined when the cluster did not start: the before hook's error says why.
  await (cluster as TestCluster | undefined)?.destroy()
})

/** A request signed as a generic SigV4 client signs it: no x-amz-content-sha256 header. */
async function signedWithoutPayloadHeader(
  method: string,
  path: string,
  body?: string,
): Promise<RawResponse> {
  const url = new URL(cluster.server('n1').url)
  const signer = new SignatureV4({
    service: 'execute-api',
    region: 'us-east-1',
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
    sha256: Sha256,
    applyChecksum: false,
  })
  const headers: Record<string, string> = { host: url.host }
  if (body !== undefined) {
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(Buffer.byteLength(body))
  }
  const signed = await signer.sign({
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path,
    query: {},
    headers,
    ...(body === undefined ? {} : { body }),
  })
  const sent = signed.headers as Record<string, string>
  assert.is(sent['x-amz-content-sha256'], undefined, 'the signer sent no payload header')
  return send(cluster.server('n1').url, method, path, sent, body)
}

test('a bodiless admin call signed without x-amz-content-sha256 is served', async () => {
  for (const path of ['/admin/cluster/topology', '/admin/node/health']) {
    const answer = await signedWithoutPayloadHeader('GET', path)
    assert.is(answer.status, 200, `${path}: ${answer.body.toString()}`)
  }
})

test('an admin call with a body and no x-amz-content-sha256 is 400 naming the header', async () => {
  const answer = await signedWithoutPayloadHeader('POST', '/admin/node/bootstrap', '{}')
  const body = answer.body.toString()
  assert.is(answer.status, 400, body)
  assert.match(body, 'x-amz-content-sha256')
})

test.run()
