/** Goal: bucket policies are read and applied as Amazon S3 does, on the examples of AWS's
 * documentation: a public-read bucket, a Deny outside an address range, TLS required, a Referer
 * check, a user limited to a prefix of listings, a bound on max-keys, an object's existing tag, a
 * time window; an explicit Deny wins over an Allow; NotPrincipal and NotAction; a missing key
 * fails a plain condition but satisfies a negated one, IfExists and ForAllValues; and every
 * malformed policy is refused with its reason. Then access.ts's decision over a role, a policy and
 * a bucket's ACL.
 * Method: the pure functions of protocol/s3-rules/bucket-policy.ts over a table of cases. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { decideAccess, roleAllows } from '../../protocol/s3-rules/access.js'
import {
  evaluatePolicy,
  isPublicPolicy,
  parseBucketPolicy,
  POLICY_BYTES_MAX,
  type BucketPolicy,
  type PolicyRequest,
} from '../../protocol/s3-rules/bucket-policy.js'

const BUCKET = 'examplebucket'
const ALICE = { id: 'u-alice', name: 'alice' }

function policy(statements: unknown[]): BucketPolicy {
  const parsed = parseBucketPolicy(
    JSON.stringify({ Version: '2012-10-17', Statement: statements }),
    BUCKET,
  )
  if (!parsed.ok) throw new Error(parsed.detail)
  return parsed.value
}

function request(overrides: Partial<PolicyRequest>): PolicyRequest {
  return {
    action: 's3:GetObject',
    resource: `arn:aws:s3:::${BUCKET}/photo.jpg`,
    user: null,
    context: {},
    ...overrides,
  }
}

test('public read: anyone may GET objects, nothing else', () => {
  const publicRead = policy([
    {
      Sid: 'PublicRead',
      Effect: 'Allow',
      Principal: '*',
      Action: ['s3:GetObject', 's3:GetObjectVersion'],
      Resource: [`arn:aws:s3:::${BUCKET}/*`],
    },
  ])
  assert.is(evaluatePolicy(publicRead, request({})), 'allow')
  assert.is(evaluatePolicy(publicRead, request({ user: ALICE })), 'allow')
  assert.is(evaluatePolicy(publicRead, request({ action: 's3:PutObject' })), 'none')
  const bucketItself = request({ action: 's3:GetObject', resource: `arn:aws:s3:::${BUCKET}` })
  assert.is(evaluatePolicy(publicRead, bucketItself), 'none')
  assert.ok(isPublicPolicy(publicRead))
})

test('a Deny outside an address range (NotIpAddress aws:SourceIp), v4 and v6', () => {
  const fenced = policy([
    {
      Effect: 'Deny',
      Principal: '*',
      Action: 's3:*',
      Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`],
      Condition: { NotIpAddress: { 'aws:SourceIp': ['192.0.2.0/24', '2001:db8::/32'] } },
    },
  ])
  const from = (ip: string) => request({ user: ALICE, context: { 'aws:SourceIp': [ip] } })
  assert.is(evaluatePolicy(fenced, from('203.0.113.5')), 'deny')
  assert.is(evaluatePolicy(fenced, from('192.0.2.77')), 'none')
  assert.is(evaluatePolicy(fenced, from('2001:db8:1::5')), 'none')
  assert.is(evaluatePolicy(fenced, from('2001:db9::5')), 'deny')
  assert.not.ok(isPublicPolicy(fenced))
})

test('TLS required (Bool aws:SecureTransport false denies)', () => {
  const tlsOnly = policy([
    {
      Effect: 'Deny',
      Principal: '*',
      Action: 's3:*',
      Resource: `arn:aws:s3:::${BUCKET}/*`,
      Condition: { Bool: { 'aws:SecureTransport': 'false' } },
    },
  ])
  const secure = (value: string) =>
    request({ user: ALICE, context: { 'aws:SecureTransport': [value] } })
  assert.is(evaluatePolicy(tlsOnly, secure('false')), 'deny')
  assert.is(evaluatePolicy(tlsOnly, secure('true')), 'none')
})

test('a Referer check (StringLike aws:Referer): absent or other, no allow', () => {
  const referer = policy([
    {
      Effect: 'Allow',
      Principal: '*',
      Action: 's3:GetObject',
      Resource: `arn:aws:s3:::${BUCKET}/*`,
      Condition: { StringLike: { 'aws:Referer': ['http://www.example.com/*'] } },
    },
  ])
  const sent = (value: string) => request({ context: { 'aws:Referer': [value] } })
  assert.is(evaluatePolicy(referer, sent('http://www.example.com/page.html')), 'allow')
  assert.is(evaluatePolicy(referer, sent('http://evil.example.net/')), 'none')
  assert.is(evaluatePolicy(referer, request({})), 'none')
  assert.not.ok(isPublicPolicy(referer), 'a condition narrows who may ask')
})

test('a user listing only its own prefix (s3:prefix), and at most 10 keys (s3:max-keys)', () => {
  const home = policy([
    {
      Effect: 'Allow',
      Principal: { AWS: 'arn:aws:iam:::user/alice' },
      Action: 's3:ListBucket',
      Resource: `arn:aws:s3:::${BUCKET}`,
      Condition: {
        StringEquals: { 's3:prefix': ['home/alice/'] },
        NumericLessThanEquals: { 's3:max-keys': 10 },
      },
    },
  ])
  const list = (user: PolicyRequest['user'], prefix: string, maxKeys: string) =>
    request({
      action: 's3:ListBucket',
      resource: `arn:aws:s3:::${BUCKET}`,
      user,
      context: { 's3:prefix': [prefix], 's3:max-keys': [maxKeys] },
    })
  assert.is(evaluatePolicy(home, list(ALICE, 'home/alice/', '10')), 'allow')
  assert.is(evaluatePolicy(home, list(ALICE, 'home/alice/', '11')), 'none')
  assert.is(evaluatePolicy(home, list(ALICE, 'home/bob/', '5')), 'none')
  assert.is(evaluatePolicy(home, list({ id: 'u-bob', name: 'bob' }, 'home/alice/', '5')), 'none')
  // A user named by its id matches too.
  const byId = policy([
    {
      Effect: 'Allow',
      Principal: { AWS: ['u-alice'] },
      Action: 's3:*',
      Resource: `arn:aws:s3:::${BUCKET}/*`,
    },
  ])
  assert.is(evaluatePolicy(byId, request({ user: ALICE, action: 's3:PutObject' })), 'allow')
  assert.is(evaluatePolicy(byId, request({ action: 's3:PutObject' })), 'none')
})

test('an existing tag, a time window, and an explicit Deny winning over an Allow', () => {
  const rules = policy([
    {
      Effect: 'Allow',
      Principal: '*',
      Action: 's3:GetObject',
      Resource: `arn:aws:s3:::${BUCKET}/*`,
      Condition: {
        StringEquals: { 's3:ExistingObjectTag/team': 'web' },
        DateLessThan: { 'aws:CurrentTime': '2030-01-01T00:00:00Z' },
      },
    },
    {
      Effect: 'Deny',
      Principal: '*',
      Action: 's3:GetObject',
      Resource: `arn:aws:s3:::${BUCKET}/secret/*`,
    },
  ])
  const get = (key: string, team: string, now: string) =>
    request({
      resource: `arn:aws:s3:::${BUCKET}/${key}`,
      context: { 's3:ExistingObjectTag/team': [team], 'aws:CurrentTime': [now] },
    })
  assert.is(evaluatePolicy(rules, get('a.txt', 'web', '2026-11-28T00:00:00Z')), 'allow')
  assert.is(evaluatePolicy(rules, get('a.txt', 'ops', '2026-11-28T00:00:00Z')), 'none')
  assert.is(evaluatePolicy(rules, get('a.txt', 'web', '2031-01-01T00:00:00Z')), 'none')
  assert.is(evaluatePolicy(rules, get('secret/a.txt', 'web', '2026-11-28T00:00:00Z')), 'deny')
})

test('NotPrincipal and NotAction; condition keys match without regard to case', () => {
  const rules = policy([
    {
      Effect: 'Deny',
      NotPrincipal: { AWS: 'alice' },
      NotAction: ['s3:Get*', 's3:List*'],
      Resource: `arn:aws:s3:::${BUCKET}/*`,
    },
  ])
  assert.is(evaluatePolicy(rules, request({ action: 's3:PutObject' })), 'deny')
  assert.is(evaluatePolicy(rules, request({ action: 's3:PutObject', user: ALICE })), 'none')
  assert.is(evaluatePolicy(rules, request({ action: 's3:getobject' })), 'none')
  const cased = policy([
    {
      Effect: 'Allow',
      Principal: '*',
      Action: 's3:GetObject',
      Resource: `arn:aws:s3:::${BUCKET}/*`,
      Condition: { StringEquals: { 'AWS:SourceIp': '192.0.2.1' } },
    },
  ])
  assert.is(evaluatePolicy(cased, request({ context: { 'aws:SourceIp': ['192.0.2.1'] } })), 'allow')
})

test('a missing key: a plain condition fails; negated, IfExists, ForAllValues, Null hold', () => {
  const statement = (condition: unknown) =>
    policy([
      {
        Effect: 'Allow',
        Principal: '*',
        Action: 's3:GetObject',
        Resource: `arn:aws:s3:::${BUCKET}/*`,
        Condition: condition,
      },
    ])
  const none = request({})
  assert.is(evaluatePolicy(statement({ StringEquals: { 'aws:Referer': 'x' } }), none), 'none')
  assert.is(evaluatePolicy(statement({ StringNotEquals: { 'aws:Referer': 'x' } }), none), 'allow')
  assert.is(
    evaluatePolicy(statement({ StringEqualsIfExists: { 'aws:Referer': 'x' } }), none),
    'allow',
  )
  assert.is(
    evaluatePolicy(statement({ 'ForAllValues:StringLike': { 'aws:Referer': 'x*' } }), none),
    'allow',
  )
  assert.is(evaluatePolicy(statement({ Null: { 'aws:Referer': 'true' } }), none), 'allow')
  const sent = request({ context: { 'aws:Referer': ['xyz'] } })
  assert.is(evaluatePolicy(statement({ Null: { 'aws:Referer': 'true' } }), sent), 'none')
  assert.is(
    evaluatePolicy(statement({ 'ForAnyValue:StringLike': { 'aws:Referer': ['a*', 'x*'] } }), sent),
    'allow',
  )
})

test('malformed policies are refused with their reason', () => {
  const statement = {
    Effect: 'Allow',
    Principal: '*',
    Action: 's3:GetObject',
    Resource: `arn:aws:s3:::${BUCKET}/*`,
  }
  const cases: [string, string, RegExp][] = [
    ['not JSON', 'Version: 1', /valid JSON/],
    ['broken JSON', '{"Version": ', /valid JSON/],
    ['no Statement', JSON.stringify({ Version: '2012-10-17' }), /Statement/],
    ['a bad version', JSON.stringify({ Version: '2020-01-01', Statement: [statement] }), /version/],
    ['a bad effect', JSON.stringify({ Statement: [{ ...statement, Effect: 'Maybe' }] }), /effect/],
    [
      'another bucket',
      JSON.stringify({ Statement: [{ ...statement, Resource: 'arn:aws:s3:::other/*' }] }),
      /invalid resource/,
    ],
    [
      'an action of another service',
      JSON.stringify({ Statement: [{ ...statement, Action: 'ec2:RunInstances' }] }),
      /invalid action/,
    ],
    [
      'an unknown operator',
      JSON.stringify({ Statement: [{ ...statement, Condition: { StringSortOf: { a: 'b' } } }] }),
      /Condition type/,
    ],
    [
      'Action and NotAction',
      JSON.stringify({ Statement: [{ ...statement, NotAction: 's3:PutObject' }] }),
      /both Action and NotAction/,
    ],
    [
      'no Principal',
      JSON.stringify({ Statement: [{ ...statement, Principal: undefined }] }),
      /Principal/,
    ],
    [
      'an unknown field',
      JSON.stringify({ Statement: [{ ...statement, Effects: 'Allow' }] }),
      /Unknown field/,
    ],
    ['too large', `{"Id": "${'x'.repeat(POLICY_BYTES_MAX)}"}`, /at most/],
  ]
  for (const [name, text, reason] of cases) {
    const parsed = parseBucketPolicy(text, BUCKET)
    assert.is(parsed.ok, false, name)
    if (parsed.ok) continue
    assert.is(parsed.code, 'malformed_policy', name)
    assert.match(parsed.detail, reason, name)
  }
})

test('access: Deny wins over any role but on the policy itself; Allow admits the roleless', () => {
  const read = { action: 's3:GetObject', bucket: BUCKET, key: 'a' }
  const put = { action: 's3:PutObject', bucket: BUCKET, key: 'uploads/a' }
  const ARN = `arn:aws:s3:::${BUCKET}`
  const denyReads = policy([
    { Effect: 'Deny', Principal: '*', Action: 's3:Get*', Resource: `${ARN}/*` },
  ])
  const root = { userId: 'u0', role: 'SuperUser' as const }
  const reader = { userId: 'u1', role: 'Reader' as const, username: 'rita' }
  const decide = (
    principal: typeof root | typeof reader | null,
    needed: object,
    policy = denyReads,
  ) =>
    decideAccess({
      principal,
      needed: [needed as typeof read],
      policy,
      bucketAcl: null,
      context: {},
    })
  assert.is(decide(root, read), 'deny')
  assert.is(decide(root, { action: 's3:GetBucketPolicy', bucket: BUCKET, key: null }), 'allow')
  assert.is(decide(root, { action: 's3:DeleteBucketPolicy', bucket: BUCKET, key: null }), 'allow')
  const uploads = policy([
    {
      Effect: 'Allow',
      Principal: { AWS: 'arn:aws:iam:::user/rita' },
      Action: 's3:PutObject',
      Resource: `${ARN}/uploads/*`,
    },
  ])
  assert.is(decide(reader, put, uploads), 'allow')
  assert.is(decide(reader, { ...put, key: 'elsewhere' }, uploads), 'refuse')
  assert.is(decide(null, put, uploads), 'refuse')
  // Nothing admits an anonymous read but, perhaps, the object's own ACL.
  assert.is(decide(null, read, uploads), 'object-acl')
  assert.is(decide(null, { action: 's3:ListBucket', bucket: BUCKET, key: null }, uploads), 'refuse')
  assert.is(
    decideAccess({
      principal: null,
      needed: [{ action: 's3:ListBucket', bucket: BUCKET, key: null }],
      policy: null,
      bucketAcl: 'public-read',
      context: {},
    }),
    'allow',
  )
  assert.ok(roleAllows('Writer', 's3:DeleteObject'))
  assert.not.ok(roleAllows('Writer', 's3:PutBucketPolicy'))
  assert.not.ok(roleAllows('Reader', 's3:PutObject'))
  assert.ok(roleAllows('Reader', 's3:ListBucket'))
})

test.run()
