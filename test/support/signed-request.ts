/** @module Raw SigV4-signed HTTP for edge cases a client library hides: signs with the independent
 * @smithy/signature-v4 (as the AWS SDKs do for S3) and sends with node:http, so a test controls
 * every header and byte of the body, including sending less than it announced. */
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http'
import { Sha256 } from '@aws-crypto/sha256-js'
import { SignatureV4 } from '@smithy/signature-v4'
import { ACCESS_KEY, SECRET_KEY } from './server.js'

export interface RawResponse {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
}

export interface RawRequest {
  method: string
  /** Path as sent on the wire (already percent-encoded). */
  path: string
  query?: Record<string, string>
  headers?: Record<string, string>
  body?: Buffer | string
  /** x-amz-content-sha256 value to sign; default UNSIGNED-PAYLOAD. */
  payloadHash?: string
  /** Sign at this time instead of now (clock-skew tests). */
  signingDate?: Date
  secretKey?: string
  accessKey?: string
}

export function signer(secretKey = SECRET_KEY, accessKey = ACCESS_KEY): SignatureV4 {
  return new SignatureV4({
    service: 's3',
    region: 'us-east-1',
    credentials: { accessKeyId: accessKey, secretAccessKey: secretKey },
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  })
}

export async function signedRequest(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const signed = await signRequest(baseUrl, req)
  return send(baseUrl, req.method, signed.pathAndQuery, signed.headers, req.body)
}

/** Signs without sending: the wire path (with query) and the headers, Authorization included, so
 * a test can alter them after signing or send them over a raw socket. */
export async function signRequest(
  baseUrl: string,
  req: RawRequest,
): Promise<{ pathAndQuery: string; headers: Record<string, string> }> {
  const url = new URL(baseUrl)
  const payloadHash = req.payloadHash ?? 'UNSIGNED-PAYLOAD'
  const headers: Record<string, string> = {
    host: url.host,
    'x-amz-content-sha256': payloadHash,
    ...req.headers,
  }
  const signed = await signer(req.secretKey, req.accessKey).sign(
    {
      method: req.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: req.path,
      query: req.query ?? {},
      headers,
    },
    req.signingDate === undefined ? {} : { signingDate: req.signingDate },
  )
  const query = new URLSearchParams(req.query ?? {}).toString().replace(/\+/g, '%20')
  const pathAndQuery = req.path + (query === '' ? '' : `?${query}`)
  return { pathAndQuery, headers: signed.headers as Record<string, string> }
}

/** Sends a request exactly as given (no signing). */
export function send(
  baseUrl: string,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<RawResponse> {
  const req = openRequest(baseUrl, method, pathAndQuery, headers)
  const answered = answerOf(req)
  req.end(body)
  return answered
}

/** Signs and starts a request with a body, sending its headers and the first half of the body
 * now and the rest on `finish`: a test holds a body on its way while other requests run. */
export async function halfSentRequest(
  baseUrl: string,
  req: RawRequest & { body: Buffer },
): Promise<{ finish: () => Promise<RawResponse> }> {
  const headers = { ...req.headers, 'content-length': String(req.body.length) }
  const signed = await signRequest(baseUrl, { ...req, headers })
  const open = openRequest(baseUrl, req.method, signed.pathAndQuery, signed.headers)
  const answered = answerOf(open)
  open.write(req.body.subarray(0, req.body.length / 2))
  return {
    finish: () => {
      open.end(req.body.subarray(req.body.length / 2))
      return answered
    },
  }
}

function openRequest(
  baseUrl: string,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string>,
): ClientRequest {
  const url = new URL(baseUrl)
  const req = httpRequest({
    host: url.hostname,
    port: url.port,
    method,
    path: pathAndQuery,
    headers,
    timeout: 30_000,
  })
  req.on('timeout', () => req.destroy(new Error('request timed out')))
  return req
}

function answerOf(req: ClientRequest): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      )
      res.on('error', reject)
    })
    req.on('error', reject)
  })
}

export function errorCode(response: RawResponse): string | undefined {
  return /<Code>([^<]+)<\/Code>/.exec(response.body.toString())?.[1]
}
