/** @module Presigned S3 requests for the load generator. Every URL is signed before a timed phase
 * starts (SigV4 query auth, UNSIGNED-PAYLOAD, as the AWS SDK's presigner does), so signing costs
 * nothing while we measure. The hash is node:crypto's rather than the pure-JS Sha256 because a
 * phase can need 100,000 URLs and the pure-JS hash would make preparing them the slowest part. */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto'
import { SignatureV4 } from '@smithy/signature-v4'

export interface Credentials {
  accessKeyId: string
  secretAccessKey: string
}

/** Turns (method, path, query) into a path with the signature in its query string. */
export type Presign = (
  method: string,
  path: string,
  query?: Record<string, string>,
) => Promise<string>

type Key = string | ArrayBuffer | ArrayBufferView

/** The Checksum shape SignatureV4 expects, on node:crypto; `secret` makes it an HMAC. */
class NodeSha256 {
  private hash: Hash | Hmac
  private readonly secret: Buffer | null

  constructor(secret?: Key) {
    this.secret = secret === undefined ? null : toBuffer(secret)
    this.hash = this.fresh()
  }

  update(data: Uint8Array): void {
    this.hash.update(data)
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()))
  }

  reset(): void {
    this.hash = this.fresh()
  }

  private fresh(): Hash | Hmac {
    return this.secret === null ? createHash('sha256') : createHmac('sha256', this.secret)
  }
}

function toBuffer(data: Key): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  return Buffer.from(data)
}

/** One hour: the whole bench takes minutes, and a URL is used within its phase. */
const EXPIRES_SECONDS = 3600

export function presigner(port: number, credentials: Credentials): Presign {
  const signer = new SignatureV4({
    credentials,
    region: 'us-east-1',
    service: 's3',
    sha256: NodeSha256,
    uriEscapePath: false, // S3 signs the path as sent, without escaping it a second time.
    applyChecksum: false,
  })
  const host = `127.0.0.1:${port}`
  return async (method, path, query = {}) => {
    const signed = await signer.presign(
      {
        method,
        protocol: 'http:',
        hostname: '127.0.0.1',
        port,
        path,
        query,
        headers: { host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
      },
      { expiresIn: EXPIRES_SECONDS },
    )
    return `${path}?${queryString(signed.query ?? {})}`
  }
}

function queryString(query: Record<string, string | string[] | null>): string {
  const parts: string[] = []
  for (const [name, value] of Object.entries(query)) {
    if (typeof value !== 'string') continue // We only ever sign single-valued parameters.
    parts.push(`${encodeRfc3986(name)}=${encodeRfc3986(value)}`)
  }
  return parts.join('&')
}

/** Presigning many URLs is a chain of microtasks; awaiting this lets timers and signals run. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/** encodeURIComponent leaves !'()* alone; SigV4 canonical queries escape them. */
function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
}
