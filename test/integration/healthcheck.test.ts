/** Goal: the image's health check probes the node where its configuration says it listens: the
 * configured port, loopback for a wildcard address, HTTPS when TLS is configured; it exits 0 only
 * on a 200 from /health and says what it saw otherwise. Method: the probe command
 * (dist/runtime/healthcheck.js) as a child process with the node's own environment, against real
 * servers over HTTP and HTTPS (a self-signed certificate) and against a port nobody listens on. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { loadConfig } from '../../runtime/config.js'
import { healthUrl } from '../../runtime/health-probe.js'
import { freePort, MAIN_JS, startServer } from '../support/server.js'
import { selfSignedCertificate } from '../support/tls-cert.js'

const HEALTHCHECK_JS = join(dirname(MAIN_JS), 'healthcheck.js')

function runProbe(env: Record<string, string>): { status: number | null; output: string } {
  const probe = spawnSync(process.execPath, [HEALTHCHECK_JS], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    encoding: 'utf8',
    timeout: 20_000,
  })
  return { status: probe.status, output: `${probe.stdout}${probe.stderr}` }
}

test('the probe URL follows the configured address and scheme', () => {
  const url = (env: Record<string, string>): string => healthUrl(loadConfig(env)).href
  assert.is(url({}), 'http://127.0.0.1:9000/health')
  assert.is(url({ SVC_NODE_HTTP_ADDR: '0.0.0.0:8080' }), 'http://127.0.0.1:8080/health')
  assert.is(url({ SVC_NODE_HTTP_ADDR: '[::]:9000' }), 'http://[::1]:9000/health')
  assert.is(url({ SVC_NODE_HTTP_ADDR: '10.0.0.5:9000' }), 'http://10.0.0.5:9000/health')
  const tls = { SVC_TLS_CERT: 'cert.pem', SVC_TLS_KEY: 'key.pem' }
  assert.is(url({ ...tls, SVC_NODE_HTTP_ADDR: '0.0.0.0:9443' }), 'https://127.0.0.1:9443/health')
})

test('a healthy node over HTTP on its configured port passes', async () => {
  const server = await startServer()
  try {
    const probe = runProbe({ SVC_NODE_HTTP_ADDR: `127.0.0.1:${server.port}` })
    assert.is(probe.status, 0, probe.output)
  } finally {
    await server.stop()
    server.cleanup()
  }
})

test('a healthy node over HTTPS passes, probed with TLS', async () => {
  const { cert, key, cleanup } = selfSignedCertificate()
  const tls = { SVC_TLS_CERT: cert, SVC_TLS_KEY: key }
  process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0' // The test's own self-signed certificate.
  const server = await startServer({ protocol: 'https', env: tls })
  try {
    const address = { SVC_NODE_HTTP_ADDR: `127.0.0.1:${server.port}` }
    const probe = runProbe({ ...address, ...tls })
    assert.is(probe.status, 0, probe.output)
    const plain = runProbe(address)
    assert.is(plain.status, 1, 'plain HTTP to a TLS port is not healthy')
  } finally {
    await server.stop()
    server.cleanup()
    cleanup()
  }
})

test('no node listening fails with one line naming the URL', async () => {
  const port = await freePort()
  const probe = runProbe({ SVC_NODE_HTTP_ADDR: `127.0.0.1:${port}` })
  assert.is(probe.status, 1)
  assert.match(probe.output, `http://127.0.0.1:${port}/health: connect ECONNREFUSED`)
  assert.is(probe.output.trim().split('\n').length, 1, probe.output)
})

test.run()
