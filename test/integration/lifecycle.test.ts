/** Goal: the node's lifecycle as an operator sees it: HTTPS when certificates are configured,
 * generated bootstrap credentials kept (secret sealed) across restarts, a graceful SIGTERM that
 * lets an in-flight upload finish and exits 0, and /health. Method: real server child processes;
 * a self-signed certificate made with openssl for the TLS case. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import { startServer } from '../support/server.js'

function grep(dir: string, needle: string): string[] {
  const found: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) found.push(...grep(path, needle))
    else if (readFileSync(path).includes(needle)) found.push(path)
  }
  return found
}

test('HTTPS with a self-signed certificate serves the S3 API', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tls-'))
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  )
  process.env['NODE_TLS_REJECT_UNAUTHORIZED'] = '0' // The test's own self-signed certificate.
  const server = await startServer({
    protocol: 'https',
    env: { SVC_TLS_CERT: cert, SVC_TLS_KEY: key },
  })
  const s3 = server.client()
  try {
    assert.ok(server.url.startsWith('https://'))
    await s3.send(new CreateBucketCommand({ Bucket: 'secure' }))
    await s3.send(new PutObjectCommand({ Bucket: 'secure', Key: 'k', Body: 'over tls' }))
    const got = await s3.send(new GetObjectCommand({ Bucket: 'secure', Key: 'k' }))
    assert.is(await got.Body!.transformToString(), 'over tls')
  } finally {
    s3.destroy()
    await server.stop()
    server.cleanup()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('generated credentials are printed once, kept sealed, and work after restart', async () => {
  const noKeys = { SVC_ACCESS_KEY_ID: '', SVC_SECRET_ACCESS_KEY: '', SVC_LOG_LEVEL: 'info' }
  const first = await startServer({ env: noKeys })
  const printed = /access key: (SVCAK[A-Z0-9]{20})\n\s+secret key: ([A-Za-z0-9]{40})/.exec(
    first.output(),
  )
  assert.ok(printed, 'the generated pair was not printed')
  const [, accessKeyId = '', secretAccessKey = ''] = printed
  assert.is(await first.stop(), 0)
  assert.equal(grep(first.dataDir, secretAccessKey), [], 'the secret is stored in clear')
  const second = await startServer({ env: noKeys, dataDir: first.dataDir })
  const s3 = second.client({ accessKeyId, secretAccessKey })
  try {
    await s3.send(new ListBucketsCommand({}))
    assert.not.match(second.output(), secretAccessKey)
    const keyFile = statSync(join(first.dataDir, 'master.key'))
    assert.is(keyFile.mode & 0o777, 0o600)
  } finally {
    s3.destroy()
    await second.stop()
    second.cleanup()
  }
})

test('SIGTERM lets an in-flight upload finish, then exits 0 and refuses new work', async () => {
  const server = await startServer()
  const s3: S3Client = server.client()
  try {
    await s3.send(new CreateBucketCommand({ Bucket: 'drain' }))
    const url = new URL(
      await getSignedUrl(s3, new PutObjectCommand({ Bucket: 'drain', Key: 'slow' })),
    )
    const size = 4 * 1024 * 1024
    const status = new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method: 'PUT',
          headers: { 'content-length': size },
        },
        (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        },
      )
      req.on('error', reject)
      // Half the body now, SIGTERM, the other half after: the upload spans the shutdown.
      req.write(Buffer.alloc(size / 2, 1))
      setTimeout(() => {
        server.child.kill('SIGTERM')
        setTimeout(() => req.end(Buffer.alloc(size / 2, 2)), 500)
      }, 300)
    })
    assert.is(await status, 200)
    const code = await server.stop()
    assert.is(code, 0)
    const again = await startServer({ dataDir: server.dataDir })
    const s3Again = again.client()
    const got = await s3Again.send(new GetObjectCommand({ Bucket: 'drain', Key: 'slow' }))
    assert.is(got.ContentLength, size)
    s3Again.destroy()
    await again.stop()
  } finally {
    s3.destroy()
    await server.kill()
    server.cleanup()
  }
})

test.run()
