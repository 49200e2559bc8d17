/** @module Health probe of a node: GET /health on the address and scheme the node's own
 * configuration gives (SVC_NODE_HTTP_ADDR; HTTPS when SVC_TLS_CERT and SVC_TLS_KEY are set),
 * bounded by HEALTH_PROBE_TIMEOUT_MS. runtime/healthcheck.ts runs it as a command. */
import { get as httpGet, type IncomingMessage } from 'node:http'
import { get as httpsGet } from 'node:https'
import type { NodeConfig } from './config.js'

/** Within the image's HEALTHCHECK --timeout (5 s), so the probe reports before Docker cuts it. */
const HEALTH_PROBE_TIMEOUT_MS = 3_000

/** The URL of the node's /health as seen from its own host: a wildcard listen address is reached
 * on loopback of the same family. */
export function healthUrl(config: NodeConfig): URL {
  const scheme = config.actorConfig['SVC_TLS_CERT'] === undefined ? 'http' : 'https'
  const wildcard: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' }
  const host = wildcard[config.httpHost] ?? config.httpHost
  const hostPart = host.includes(':') ? `[${host}]` : host
  return new URL(`${scheme}://${hostPart}:${config.httpPort}/health`)
}

/** The status /health answered, or why there was none. */
export function probe(url: URL): Promise<number | string> {
  return new Promise((resolve) => {
    const done = (response: IncomingMessage): void => {
      response.resume()
      resolve(response.statusCode ?? 'no status')
    }
    const options = { signal: AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS) }
    // The probe runs beside its node and asks whether it answers, not who it is: the certificate
    // names the node's public host, not the loopback address, so its identity is not checked.
    const request =
      url.protocol === 'https:'
        ? httpsGet(url, { ...options, rejectUnauthorized: false }, done)
        : httpGet(url, options, done)
    request.on('error', (error) => resolve(error.message))
  })
}
