/** @module The cluster key, which authenticates every node-to-node call (call-auth.ts). It is
 * SVC_CLUSTER_SECRET when set (the configuration requires at least 32 characters); otherwise it is
 * derived with HKDF-SHA256 from SVC_SECRET_ACCESS_KEY, salted with SVC_CLUSTER_NAME, both of which
 * every node of a cluster shares anyway. A derived key ties node-to-node trust to the S3 secret, so
 * `derived` is exported: the node warns and recommends a dedicated secret. Authentication is never
 * off: with neither value there is no key, and the node refuses to start. */
import { createSecretKey, hkdfSync, type KeyObject } from 'node:crypto'
import { ConfigError } from '../config.js'

export interface ClusterKey {
  key: Buffer
  /** True when the key comes from SVC_SECRET_ACCESS_KEY rather than SVC_CLUSTER_SECRET. */
  derived: boolean
}

/** HMAC-SHA256 takes a key of any length; 32 bytes is the hash's own size. */
const DERIVED_KEY_BYTES = 32
/** HKDF's `info`: a key derived for this purpose differs from any other derived from the same
 * secret. */
const DERIVATION_INFO = 'svc-object-store cluster key v1'

export function clusterKey(config: Readonly<Record<string, string>>): ClusterKey {
  const secret = config['SVC_CLUSTER_SECRET']
  if (secret !== undefined && secret !== '') {
    return { key: Buffer.from(secret, 'utf8'), derived: false }
  }
  const clusterName = config['SVC_CLUSTER_NAME']
  const accessSecret = config['SVC_SECRET_ACCESS_KEY']
  if (clusterName === undefined || clusterName === '') {
    throw new ConfigError('SVC_CLUSTER_NAME must be set in cluster and gateway modes')
  }
  if (accessSecret === undefined || accessSecret === '') {
    throw new ConfigError(
      'SVC_CLUSTER_SECRET (or SVC_SECRET_ACCESS_KEY, to derive it from) must be set in cluster' +
        ' and gateway modes',
    )
  }
  const key = hkdfSync('sha256', accessSecret, clusterName, DERIVATION_INFO, DERIVED_KEY_BYTES)
  return { key: Buffer.from(key), derived: true }
}

/** The key with which a gateway vouches for its client's address to a node
 * (http/client-address.ts): derived from the cluster key for that purpose alone, so that it
 * authenticates nothing else. */
export function clientAddressKey(config: Readonly<Record<string, string>>): KeyObject {
  const info = 'svc-object-store client address key v1'
  const key = hkdfSync('sha256', clusterKey(config).key, '', info, DERIVED_KEY_BYTES)
  return createSecretKey(Buffer.from(key))
}
