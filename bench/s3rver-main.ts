/** @module s3rver as a child process of the bench (argv: port, directory), so that its memory and
 * CPU are its own and the load generator does not share an event loop with it. Stops on SIGTERM. */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

interface S3rverOptions {
  port: number
  address: string
  directory: string
  silent: boolean
}
interface S3rverServer {
  run(): Promise<unknown>
}
type S3rverClass = new (options: S3rverOptions) => S3rverServer

// s3rver is CommonJS without type declarations: require it and state the little we use.
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass

const port = Number(process.argv[2])
const directory = process.argv[3]
assert(Number.isInteger(port) && port > 0, 'usage: s3rver-main.js <port> <directory>')
assert(directory !== undefined, 'usage: s3rver-main.js <port> <directory>')

const server = new S3rver({ port, address: '127.0.0.1', directory, silent: true })
// Exit at once: close() would wait for the bench's keep-alive connections, and s3rver has
// nothing to flush (each request's writes are done before it answers).
process.once('SIGTERM', () => process.exit(0))
await server.run()
