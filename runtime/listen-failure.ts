/** @module Why the HTTP or gRPC port could not be opened, in the operator's words: the address in
 * use, not one of this machine's, a name that does not resolve, or a port below 1024 without the
 * privilege. These come from the environment, so they are an EnvironmentError naming
 * SVC_NODE_HTTP_ADDR (or SVC_NODE_GRPC_ADDR) and stop the node instead of restarting the
 * ingress. */
import { EnvironmentError } from '../protocol/environment-error.js'

const CAUSES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'is already in use by another process',
  EADDRNOTAVAIL: 'is not an address of this machine',
  EACCES: 'needs a privilege this user lacks (ports below 1024)',
  EPERM: 'needs a privilege this user lacks (ports below 1024)',
  ENOTFOUND: 'does not resolve: no such host name',
  EAI_AGAIN: 'does not resolve: the name service did not answer',
  EAI_FAIL: 'does not resolve: the name service failed',
  EAI_NONAME: 'does not resolve: no such host name',
  EAFNOSUPPORT: 'is of an address family this machine does not support',
}

/** The EnvironmentError for a listen failure the environment causes; other errors unchanged. */
export function listenFailure(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`
  return failureOf(error, code, address, 'SVC_NODE_HTTP_ADDR')
}

/** The same for @grpc/grpc-js's bind, which names the errno only inside its message ("listen
 * EADDRINUSE: address already in use ...") and a name that does not resolve in words of its own. */
export function grpcBindFailure(error: unknown, address: string): unknown {
  const message = error instanceof Error ? error.message : String(error)
  const code = message.startsWith('Name resolution failed')
    ? 'ENOTFOUND'
    : /\b(E[A-Z]+)\b/.exec(message)?.[1]
  return failureOf(error, code, address, 'SVC_NODE_GRPC_ADDR')
}

function failureOf(
  error: unknown,
  code: string | undefined,
  address: string,
  variable: string,
): unknown {
  const cause = code === undefined ? undefined : CAUSES[code]
  if (cause === undefined) return error
  return new EnvironmentError(variable, `${address} ${cause} (${code})`)
}
