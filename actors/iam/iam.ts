/** @module IAM: owns identities. Today that is the bootstrap SuperUser key pair: from
 * SVC_ACCESS_KEY_ID/SVC_SECRET_ACCESS_KEY, or generated on first start, kept sealed with the master
 * key in replica-store's system records and printed once when generated. Handles iam.lookup-key,
 * the secret lookup behind SigV4 verification. */
import assert from 'node:assert/strict'
import type { Actor, Context } from '../../protocol/actor.js'
import { fail, ok, unreachable, type Result } from '../../protocol/errors.js'
import type { IamMsg, KeyLookup } from '../../protocol/messages.js'
import { newAccessKey, newSecretKey } from './random-keys.js'
import { seal, SEAL_IV_BYTES, unseal } from './sealed.js'

interface IamState {
  keys: Map<string, KeyLookup>
  /** Counts changes to credentials; it starts from the clock so it still grows across restarts. */
  generation: number
}

const BOOTSTRAP_RECORD = 'iam.bootstrap-credentials'
const INIT_TIMEOUT_MS = 10_000

export const iam: Actor<IamState, IamMsg> = {
  name: 'iam',
  async init(ctx) {
    const pair = await bootstrapPair(ctx)
    const generation = ctx.now()
    const keys = new Map<string, KeyLookup>()
    keys.set(pair.accessKey, {
      secretKey: pair.secretKey,
      principal: { userId: 'bootstrap', role: 'SuperUser' },
      generation,
    })
    return { keys, generation }
  },
  handle(state, msg) {
    switch (msg.kind) {
      case 'iam.lookup-key':
        return lookupKey(state, msg.accessKey)
      default:
        return unreachable(msg.kind)
    }
  },
}

function lookupKey(state: IamState, accessKey: string): Result<KeyLookup> {
  const found = state.keys.get(accessKey)
  if (found === undefined) return fail('invalid_access_key', 'unknown access key')
  return ok(found)
}

interface Pair {
  accessKey: string
  secretKey: string
}

async function bootstrapPair(ctx: Context): Promise<Pair> {
  const fromEnv = {
    accessKey: ctx.config['SVC_ACCESS_KEY_ID'],
    secretKey: ctx.config['SVC_SECRET_ACCESS_KEY'],
  }
  if (fromEnv.accessKey !== undefined && fromEnv.secretKey !== undefined) {
    return { accessKey: fromEnv.accessKey, secretKey: fromEnv.secretKey }
  }
  const masterKey = ctx.config['SVC_MASTER_KEY']
  assert(masterKey !== undefined, 'the runtime always passes the master key')
  const deadlineMs = ctx.now() + INIT_TIMEOUT_MS
  const stored = await ctx.call<Uint8Array | null>('replica-store', {
    kind: 'system.get',
    name: BOOTSTRAP_RECORD,
    requestId: 'iam-init',
    deadlineMs,
  })
  if (!stored.ok) throw new Error(`cannot read bootstrap credentials: ${stored.detail}`)
  if (stored.value !== null) {
    const record = JSON.parse(Buffer.from(stored.value).toString('utf8')) as {
      a: string
      s: string
    }
    const secretKey = unseal(record.s, masterKey)
    if (secretKey === undefined)
      throw new Error('bootstrap secret does not open with this master key')
    return { accessKey: record.a, secretKey }
  }
  const pair = {
    accessKey: newAccessKey(ctx.randomBytes),
    secretKey: newSecretKey(ctx.randomBytes),
  }
  const record = {
    a: pair.accessKey,
    s: seal(pair.secretKey, masterKey, ctx.randomBytes(SEAL_IV_BYTES)),
  }
  const saved = await ctx.call('replica-store', {
    kind: 'system.put',
    name: BOOTSTRAP_RECORD,
    value: new Uint8Array(Buffer.from(JSON.stringify(record))),
    requestId: 'iam-init',
    deadlineMs,
  })
  if (!saved.ok) throw new Error(`cannot save bootstrap credentials: ${saved.detail}`)
  // Shown once, when generated: the secret is stored sealed and never printed again.
  process.stdout.write(
    '\nGenerated S3 credentials (shown once; ' +
      'set SVC_ACCESS_KEY_ID/SVC_SECRET_ACCESS_KEY to choose):\n' +
      `  access key: ${pair.accessKey}\n  secret key: ${pair.secretKey}\n\n`,
  )
  return pair
}
