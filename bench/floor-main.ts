/** @module The floor reference of the bench (argv: port): a bare node:http server, one thread, that
 * does per request only what no S3 server in Node.js can skip. A PUT's body is hashed as S3
 * requires (MD5 for the ETag, SHA-256 and CRC32 as the service computes them) and dropped; only
 * its size is kept, and a GET or HEAD answers that many bytes from one shared buffer, with the
 * headers an S3 GET carries. No signature is checked, nothing is stored, no thread is crossed: the
 * service's CPU per request beside this one is what its storage, checks and actors cost. Stops
 * on SIGTERM. */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { crc32Update } from '../protocol/checksums.js'

/** Object sizes kept by path: more than any bench run writes. */
const KEYS_MAX = 1_000_000
/** A GET's body is this buffer, written as many times as the object's size needs. */
const FILL = Buffer.alloc(1024 * 1024, 0x61)
const LAST_MODIFIED = new Date().toUTCString()

const port = Number(process.argv[2])
assert(Number.isInteger(port) && port > 0, 'usage: floor-main.js <port>')

const sizes = new Map<string, number>()
let requests = 0

function put(request: IncomingMessage, response: ServerResponse): void {
  const md5 = createHash('md5')
  const sha256 = createHash('sha256')
  let crc32 = 0
  let size = 0
  request.on('data', (data: Buffer) => {
    md5.update(data)
    sha256.update(data)
    crc32 = crc32Update(crc32, data)
    size += data.byteLength
  })
  request.on('end', () => {
    sha256.digest()
    if (!sizes.has(request.url ?? '') && sizes.size >= KEYS_MAX) {
      response.writeHead(507).end()
      return
    }
    sizes.set(request.url ?? '', size)
    response.writeHead(200, {
      etag: `"${md5.digest('hex')}"`,
      'x-amz-checksum-crc32': crc32.toString(16),
      'x-amz-request-id': (requests++).toString(16),
      'content-length': 0,
    })
    response.end()
  })
}

function get(request: IncomingMessage, response: ServerResponse): void {
  const size = sizes.get(request.url ?? '')
  if (size === undefined) {
    response.writeHead(404, { 'content-length': 0 }).end()
    return
  }
  response.writeHead(200, {
    'content-length': size,
    'content-type': 'application/octet-stream',
    etag: '"0123456789abcdef0123456789abcdef"',
    'last-modified': LAST_MODIFIED,
    'accept-ranges': 'bytes',
    'x-amz-request-id': (requests++).toString(16),
  })
  if (request.method === 'HEAD') {
    response.end()
    return
  }
  let left = size
  // Bounded by the size: each turn writes at least one byte, and waits while the socket is full.
  const more = (): void => {
    while (left > 0) {
      const piece = left >= FILL.byteLength ? FILL : FILL.subarray(0, left)
      left -= piece.byteLength
      if (!response.write(piece)) {
        response.once('drain', more)
        return
      }
    }
    response.end()
  }
  more()
}

const server = createServer((request, response) => {
  switch (request.method) {
    case 'PUT':
      put(request, response)
      return
    case 'GET':
    case 'HEAD':
      get(request, response)
      return
    case 'DELETE':
      sizes.delete(request.url ?? '')
      request.resume()
      response.writeHead(204).end()
      return
    default:
      request.resume()
      response.writeHead(405, { 'content-length': 0 }).end()
  }
})
// Exit at once: close() would wait for the bench's keep-alive connections.
process.once('SIGTERM', () => process.exit(0))
server.listen(port, '127.0.0.1')
