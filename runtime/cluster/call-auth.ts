/** @module Authentication of node-to-node calls with the cluster key (cluster-key.ts). A caller
 * signs each call: metadata `x-svc-cluster`, `x-svc-node`, `x-svc-ts` (its clock, ms),
 * `x-svc-nonce` (16 random bytes, hex) and `x-svc-mac`, the HMAC-SHA256 of
 * cluster|node|method|ts|nonce|SHA-256(request body). The server verifies before any handler runs:
 * the fields are well formed, the cluster is its own, the timestamp is within CALL_CLOCK_WINDOW_MS
 * of its clock, the MAC matches (compared in constant time), and the nonce was not seen: a
 * captured call cannot be replayed within the window, nor outside it. The MAC is checked before
 * the nonce is recorded, so calls without the key cannot fill the replay window.
 * The server signs its answer likewise (`x-svc-node`, `x-svc-mac` over the request's nonce and
 * the answer's body), so a caller trusts an answer, and the id of the node that gave it, only
 * from a holder of the key. TLS, when configured, adds confidentiality; this alone authenticates.
 */
import {
  createHash,
  createHmac,
  createSecretKey,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto'

/** How far a call's timestamp may be from the server's clock, either way. */
export const CALL_CLOCK_WINDOW_MS = 60_000
/** Nonces remembered at once: at most this many calls per 2 windows (about 1,600 a second).
 * Past it new calls are refused as `busy` rather than forgetting a nonce that could be replayed.
 * At ~80 bytes a nonce, the bound holds the set under ~16 MB. */
export const NONCES_MAX = 200_000
const NONCE_BYTES = 16
/** Node ids and cluster names are joined with `|` under the MAC, so they may not contain it. */
const FIELD_PATTERN = /^[^|]{1,128}$/
const NONCE_PATTERN = /^[0-9a-f]{32}$/
const MAC_PATTERN = /^[0-9a-f]{64}$/
/** Remembered nonces are kept in buckets of this span, by the time they expire, so that
 * forgetting the expired ones drops whole buckets. */
const NONCE_BUCKET_MS = 10_000

export const CALL_METADATA = {
  cluster: 'x-svc-cluster',
  node: 'x-svc-node',
  ts: 'x-svc-ts',
  nonce: 'x-svc-nonce',
  mac: 'x-svc-mac',
} as const

export type CallHeaders = Record<(typeof CALL_METADATA)[keyof typeof CALL_METADATA], string>

/** Who calls, and the key all nodes of the cluster share. */
export interface Signer {
  key: Uint8Array
  clusterName: string
  nodeId: string
}

export type Verdict =
  | { ok: true; node: string; nonce: string }
  /** `busy`: the replay window is full, a matter of load, not of trust. */
  | { ok: false; refusal: 'unauthenticated' | 'busy'; reason: string }

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** The cluster key as a KeyObject, made once per key: an HMAC keyed by raw bytes builds one on
 * every call, several times the cost of the MAC itself (four MACs go with each call). */
const keyObjects = new WeakMap<Uint8Array, KeyObject>()

function mac(key: Uint8Array, fields: readonly string[]): string {
  let keyObject = keyObjects.get(key)
  if (keyObject === undefined) {
    keyObject = createSecretKey(key)
    keyObjects.set(key, keyObject)
  }
  return createHmac('sha256', keyObject).update(fields.join('|')).digest('hex')
}

/** The metadata of one call of `method` (`Service.Rpc`) carrying `body`. */
export function signCall(
  signer: Signer,
  method: string,
  body: Uint8Array,
  nowMs: number,
  nonce = randomBytes(NONCE_BYTES).toString('hex'),
): CallHeaders {
  const ts = String(Math.trunc(nowMs))
  const fields = [signer.clusterName, signer.nodeId, method, ts, nonce, sha256Hex(body)]
  return {
    'x-svc-cluster': signer.clusterName,
    'x-svc-node': signer.nodeId,
    'x-svc-ts': ts,
    'x-svc-nonce': nonce,
    'x-svc-mac': mac(signer.key, fields),
  }
}

/** Checks a call's metadata against this server's cluster, key and clock; records its nonce. */
export function verifyCall(
  server: Omit<Signer, 'nodeId'>,
  headers: Readonly<Record<string, string | undefined>>,
  method: string,
  body: Uint8Array,
  nowMs: number,
  nonces: NonceWindow,
): Verdict {
  const refuse = (reason: string): Verdict => ({ ok: false, refusal: 'unauthenticated', reason })
  const cluster = headers[CALL_METADATA.cluster]
  const node = headers[CALL_METADATA.node]
  const ts = headers[CALL_METADATA.ts]
  const nonce = headers[CALL_METADATA.nonce]
  const given = headers[CALL_METADATA.mac]
  if (cluster === undefined || node === undefined || ts === undefined) return refuse('unsigned')
  if (nonce === undefined || given === undefined) return refuse('unsigned')
  if (!FIELD_PATTERN.test(cluster) || !FIELD_PATTERN.test(node)) return refuse('malformed')
  if (!NONCE_PATTERN.test(nonce) || !MAC_PATTERN.test(given)) return refuse('malformed')
  if (!/^\d{1,15}$/.test(ts)) return refuse('malformed timestamp')
  if (cluster !== server.clusterName) return refuse('another cluster')
  const tsMs = Number(ts)
  if (Math.abs(nowMs - tsMs) > CALL_CLOCK_WINDOW_MS) return refuse('timestamp outside the window')
  const expected = mac(server.key, [cluster, node, method, ts, nonce, sha256Hex(body)])
  if (!timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(given, 'hex'))) {
    return refuse('bad signature')
  }
  switch (nonces.admit(nonce, tsMs + CALL_CLOCK_WINDOW_MS, nowMs)) {
    case 'new':
      return { ok: true, node, nonce }
    case 'seen':
      return refuse('replayed')
    case 'full':
      return { ok: false, refusal: 'busy', reason: 'replay window full' }
  }
}

/** The MAC of an answer: which node answered which call (by its nonce) with which bytes. */
export function answerMac(
  signer: Signer,
  method: string,
  callNonce: string,
  answer: Uint8Array,
): string {
  const fields = ['answer', signer.clusterName, signer.nodeId, method, callNonce]
  return mac(signer.key, [...fields, sha256Hex(answer)])
}

/** Whether `given` is the MAC of that answer from `node`. */
export function verifyAnswer(
  caller: Omit<Signer, 'nodeId'>,
  node: string,
  method: string,
  callNonce: string,
  answer: Uint8Array,
  given: string,
): boolean {
  if (!FIELD_PATTERN.test(node) || !MAC_PATTERN.test(given)) return false
  const expected = answerMac({ ...caller, nodeId: node }, method, callNonce, answer)
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(given, 'hex'))
}

/** The nonces of accepted calls until their timestamps leave the window, bounded in number. */
export class NonceWindow {
  /** Expiry bucket (expiry / NONCE_BUCKET_MS, floored) -> nonces expiring in it. */
  private readonly buckets = new Map<number, Set<string>>()
  private count = 0

  constructor(private readonly capacity = NONCES_MAX) {}

  get size(): number {
    return this.count
  }

  /** Records `nonce`, which must be refused until `expiresAtMs`, unless it is already known or
   * the window is full. */
  admit(nonce: string, expiresAtMs: number, nowMs: number): 'new' | 'seen' | 'full' {
    this.forgetExpired(nowMs)
    for (const bucket of this.buckets.values()) if (bucket.has(nonce)) return 'seen'
    if (this.count >= this.capacity) return 'full'
    const index = Math.floor(expiresAtMs / NONCE_BUCKET_MS)
    let bucket = this.buckets.get(index)
    if (bucket === undefined) {
      bucket = new Set()
      this.buckets.set(index, bucket)
    }
    bucket.add(nonce)
    this.count++
    return 'new'
  }

  /** A bucket goes once its span has passed: every nonce in it expired before now, so a replay
   * of one is refused by its timestamp instead. */
  private forgetExpired(nowMs: number): void {
    for (const [index, bucket] of this.buckets) {
      if ((index + 1) * NONCE_BUCKET_MS > nowMs) continue
      this.count -= bucket.size
      this.buckets.delete(index)
    }
  }
}
