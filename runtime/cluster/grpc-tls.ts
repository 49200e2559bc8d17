/** @module TLS of the gRPC transport: when SVC_GRPC_TLS_CERT, SVC_GRPC_TLS_KEY and SVC_GRPC_TLS_CA
 * are set, every channel and the server use TLS with certificates of the cluster's own CA, and the
 * server requires a client certificate from it (mutual TLS); otherwise both use plaintext, and
 * the HMAC of call-auth.ts alone authenticates each call. Nodes are addressed by host:port while
 * their certificates name nodes, so a client checks that the server's chain ends at the cluster
 * CA, not that its name matches the address; which node answered is the signed answer's job.
 * The name a client sends (TLS's server name) is a fixed one, not the address: RFC 6066 allows
 * no IP address there, and Node warns of it. */
import {
  credentials,
  ServerCredentials,
  type ChannelCredentials,
  type ChannelOptions,
} from '@grpc/grpc-js'
import { EnvironmentError } from '../../protocol/environment-error.js'
import { readCaFile, readTlsPair } from '../tls-files.js'

export interface GrpcTls {
  ca: Buffer
  cert: Buffer
  key: Buffer
}

const VARIABLES = ['SVC_GRPC_TLS_CERT', 'SVC_GRPC_TLS_KEY', 'SVC_GRPC_TLS_CA'] as const

/** The files, read and checked, or null when none is set; some but not all is an error. */
export function readGrpcTls(config: Readonly<Record<string, string>>): GrpcTls | null {
  const [certPath, keyPath, caPath] = VARIABLES.map((name) => config[name] || undefined)
  if (certPath === undefined && keyPath === undefined && caPath === undefined) return null
  if (certPath === undefined || keyPath === undefined || caPath === undefined) {
    const missing = VARIABLES.find((name) => !config[name]) ?? VARIABLES[0]
    throw new EnvironmentError(missing, 'must be set with the other SVC_GRPC_TLS_* files')
  }
  const pair = readTlsPair(certPath, keyPath, { cert: VARIABLES[0], key: VARIABLES[1] })
  return { ...pair, ca: readCaFile(VARIABLES[2], caPath) }
}

export function channelCredentials(tls: GrpcTls | null): ChannelCredentials {
  if (tls === null) return credentials.createInsecure()
  return credentials.createSsl(tls.ca, tls.key, tls.cert, { checkServerIdentity: () => undefined })
}

/** The server name every TLS channel sends, in place of the node's address. */
const TLS_SERVER_NAME = 'svc-node'

/** Channel options `credentials` need: with TLS, the fixed server name. */
export function channelTlsOptions(tls: GrpcTls | null): ChannelOptions {
  return tls === null ? {} : { 'grpc.ssl_target_name_override': TLS_SERVER_NAME }
}

export function serverCredentials(tls: GrpcTls | null): ServerCredentials {
  if (tls === null) return ServerCredentials.createInsecure()
  const pair = { cert_chain: tls.cert, private_key: tls.key }
  return ServerCredentials.createSsl(tls.ca, [pair], true)
}
