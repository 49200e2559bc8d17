/** Goal: every node-to-node method's schema (protocol/wire/) lets a well-formed request through
 * unchanged and refuses a malformed one, naming the first issue's path: a field of the wrong type,
 * a field missing, a number out of range, a kind the method does not take, a kind that does not
 * exist, a field the schema does not name; answers likewise.
 * Method: checkPeerRequest and checkPeerAnswer, which the gRPC server, its callers and the
 * simulator's network run, on messages as they arrive (JSON-shaped data). */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { PEER_METHODS, type PeerMethod } from '../../protocol/cluster.js'
import { checkPeerAnswer, checkPeerRequest } from '../../protocol/wire/peer-methods.js'
import { gossipEnvelope, memberRecord } from '../support/peer-bodies.js'

const STAMP = '0000018c3b5a1f2e00000001'
const SHA256 = 'ab'.repeat(32)
const ids = { requestId: 'r1', deadlineMs: 1_700_000_000_000 }
const http = { contentType: 'text/plain', cacheControl: 'no-cache' }
const head = { bucket: 'bucket', key: 'photos/a.jpg' }

const objectPut = {
  kind: 'object.put',
  ...head,
  http,
  userMeta: { owner: 'me' },
  attributes: { tags: [{ key: 'project', value: 'x' }] },
  expect: { md5Base64: '1B2M2Y8AsgTpgAmY7PhCfg==', size: 0, checksums: { crc32: 'AAAAAA==' } },
  streamMd5: true,
  conditions: { ifNoneMatch: '*' },
  stamp: STAMP,
  ...ids,
}
const objectGet = { kind: 'object.get', ...head, versionId: 'null', stamped: true, ...ids }

/** One well-formed message of every kind each method takes. */
const WELL_FORMED: Record<PeerMethod, object[]> = {
  'Membership.Ping': [gossipEnvelope('c', 'n1')],
  'Membership.PingReq': [
    { ...gossipEnvelope('c', 'n1'), target: { id: 'n3', grpcAddr: '127.0.0.1:7001' } },
  ],
  'Membership.PushPull': [
    { ...gossipEnvelope('c', 'n1'), members: [memberRecord('n1'), memberRecord('n2')] },
  ],
  'Membership.Leave': [
    { ...gossipEnvelope('c', 'n1'), updates: [{ ...memberRecord('n2'), status: 'Left' }] },
  ],
  'Catalog.Apply': [
    { records: [{ key: 'B/bucket', value: 'eyJhIjoxfQ==', stamp: STAMP }] },
    { records: [{ key: 'B/gone', value: null, stamp: STAMP }] },
  ],
  'Catalog.Snapshot': [
    { after: null, limit: 500 },
    { after: 'B/bucket', limit: 1 },
  ],
  'Catalog.Claim': [{ bucket: 'bucket', claimant: 'n1:abc' }],
  'Catalog.Release': [{ bucket: 'bucket', claimant: 'n1:abc' }],
  'Iam.LoginOutcome': [{ username: 'admin', address: '::1', failed: true }],
  'Replica.Op': [
    { msg: objectGet },
    { msg: { kind: 'object.delete', ...head, versionId: 'v1', stamp: STAMP, ...ids } },
    {
      msg: {
        kind: 'object.delete-many',
        bucket: 'bucket',
        objects: [{ key: 'a' }, { key: 'b', versionId: 'v2' }],
        stamp: STAMP,
      },
    },
    { msg: { kind: 'object.stamps', bucket: 'bucket', keys: ['a', 'b'] } },
    { msg: { kind: 'object.heads', bucket: 'bucket', keys: ['a'] } },
    {
      msg: {
        kind: 'object.versions-deleted',
        bucket: 'bucket',
        versions: [{ key: 'a', versionId: 'v' }],
      },
    },
    {
      msg: {
        kind: 'object.list',
        bucket: 'bucket',
        prefix: 'p/',
        delimiter: '/',
        after: '',
        maxKeys: 1000,
        withStamps: true,
      },
    },
    {
      msg: {
        kind: 'object.list-versions',
        bucket: 'bucket',
        prefix: '',
        delimiter: '',
        keyMarker: '',
        versionIdMarker: '',
        maxKeys: 10,
      },
    },
    { msg: { kind: 'object.attributes.put', ...head, attributes: { tags: [] }, stamp: STAMP } },
    { msg: { kind: 'object.attributes.get', ...head, versionId: 'v1' } },
    {
      msg: {
        kind: 'upload.create',
        ...head,
        http,
        userMeta: {},
        checksum: { algorithm: 'crc32c', type: 'COMPOSITE' },
        stamp: STAMP,
        uploadId: '0123456789abcdef0123456789abcdef',
      },
    },
    {
      msg: {
        kind: 'upload.complete',
        ...head,
        uploadId: 'u1',
        parts: [{ partNumber: 1, etag: '"e1"', checksums: { crc32c: 'AAAAAA==' } }],
        conditions: { ifMatch: '"e0"' },
        judgedOn: { etag: '"e0"', lastModifiedMs: 5 },
        stamp: STAMP,
      },
    },
    { msg: { kind: 'upload.abort', ...head, uploadId: 'u1', stamp: STAMP } },
    { msg: { kind: 'upload.states', bucket: 'bucket', uploadIds: ['u1', 'u2'] } },
    { msg: { kind: 'key.claim', ...head, claimant: 'n1:1' } },
    { msg: { kind: 'key.release', ...head, claimant: 'n1:1' } },
    {
      msg: {
        kind: 'upload.list-parts',
        ...head,
        uploadId: 'u1',
        afterPartNumber: 0,
        maxParts: 1000,
      },
    },
    {
      msg: {
        kind: 'upload.list',
        bucket: 'bucket',
        prefix: '',
        delimiter: '/',
        keyMarker: '',
        uploadIdMarker: '',
        maxUploads: 1000,
      },
    },
    { msg: { kind: 'bucket.delete', bucket: 'bucket', force: true } },
    { msg: { kind: 'bucket.stats', ...ids } },
    { msg: { kind: 'system.stats' } },
    { msg: { kind: 'ae.roots', partitions: [0, 7, 255] } },
    { msg: { kind: 'ae.leaves', partition: 3 } },
    { msg: { kind: 'ae.keys', partition: 3, leaf: 9, after: null, limit: 1000 } },
    { msg: { kind: 'ae.keys', partition: 3, leaf: 9, after: { bucket: 'b', key: 'k' }, limit: 1 } },
    { msg: { kind: 'key.manifest', ...head } },
    { msg: { kind: 'records.get', ...head } },
    {
      msg: {
        kind: 'records.merge',
        ...head,
        records: {
          stamp: STAMP,
          versions: [{ token: 't1', record: { etag: '"e"', size: 3 } }],
          deleted: [{ token: 't0', stamp: STAMP }],
        },
        from: { id: 'n2', grpcAddr: '127.0.0.1:7002' },
      },
    },
  ],
  'Replica.Write': [
    { msg: objectPut },
    {
      msg: {
        kind: 'upload.part',
        ...head,
        uploadId: 'u1',
        partNumber: 10_000,
        expect: { sha256Hex: SHA256 },
        streamMd5: false,
      },
    },
  ],
  'Replica.Read': [
    { msg: objectGet, range: { start: 0, end: 99 } },
    { msg: { ...objectGet, partNumber: 2, withParts: true } },
    { msg: { kind: 'blob.read', sha256: SHA256 }, range: { start: 5, end: 5 } },
  ],
}

test('every method has well-formed samples, and each passes unchanged', () => {
  for (const method of PEER_METHODS) {
    const samples = WELL_FORMED[method]
    assert.ok(samples.length > 0, method)
    for (const body of samples) {
      const checked = checkPeerRequest(method, JSON.parse(JSON.stringify(body)))
      assert.ok(checked.ok, `${method}: ${checked.ok ? '' : checked.issue}`)
      assert.equal(checked.value, body)
    }
  }
})

/** A malformed request and the start of the issue it must be refused with (its path first). */
type Malformed = [method: PeerMethod, body: unknown, issue: string]

const envelope = gossipEnvelope('c', 'n1')
const put = (fields: object): object => ({ msg: { ...objectPut, ...fields } })
const get = (fields: object): object => ({ msg: { ...objectGet, ...fields } })

const MALFORMED: Malformed[] = [
  // Not an object at all, or an empty one.
  ['Membership.Ping', null, '(body): Invalid input: expected object'],
  ['Replica.Op', [], '(body): Invalid input: expected object'],
  ['Replica.Op', {}, 'msg: Invalid input'],
  // Wrong type.
  ['Membership.Ping', { ...envelope, wallMs: '1' }, 'wallMs: Invalid input: expected number'],
  ['Membership.PingReq', { ...envelope, target: 'n3' }, 'target: Invalid input'],
  ['Catalog.Apply', { records: {} }, 'records: Invalid input: expected array'],
  ['Iam.LoginOutcome', { username: 'admin', address: '::1', failed: 'yes' }, 'failed:'],
  ['Replica.Op', { msg: { kind: 'object.stamps', bucket: 'b', keys: [1] } }, 'msg.keys.0:'],
  ['Replica.Write', put({ userMeta: { a: 1 } }), 'msg.userMeta.a:'],
  ['Replica.Read', get({ versionId: 7 }), 'msg.versionId:'],
  // Missing field.
  ['Membership.Ping', { ...envelope, sender: undefined }, 'sender:'],
  ['Membership.PushPull', envelope, 'members:'],
  ['Catalog.Claim', { bucket: 'bucket' }, 'claimant:'],
  ['Catalog.Snapshot', { after: null }, 'limit:'],
  [
    'Replica.Op',
    { msg: { kind: 'object.list', bucket: 'b', prefix: '', delimiter: '', after: '' } },
    'msg.maxKeys:',
  ],
  ['Replica.Write', put({ expect: undefined }), 'msg.expect:'],
  ['Replica.Read', { msg: { kind: 'object.get', bucket: 'b' } }, 'msg.key:'],
  // Out of range (numbers, lengths, formats).
  [
    'Membership.Ping',
    { ...envelope, sender: { ...memberRecord('n1'), incarnation: -1 } },
    'sender.incarnation: Too small',
  ],
  [
    'Membership.Ping',
    { ...envelope, updates: Array.from({ length: 17 }, (_, i) => memberRecord(`n${i}`)) },
    'updates: Too big',
  ],
  ['Catalog.Snapshot', { after: null, limit: 501 }, 'limit: Too big'],
  ['Catalog.Snapshot', { after: null, limit: 0 }, 'limit: Too small'],
  [
    'Catalog.Apply',
    { records: [{ key: 'B/b', value: 'not base64!', stamp: STAMP }] },
    'records.0.value:',
  ],
  [
    'Catalog.Apply',
    { records: [{ key: 'B/b', value: null, stamp: 'yesterday' }] },
    'records.0.stamp:',
  ],
  ['Catalog.Release', { bucket: 'a\0b', claimant: 'n1' }, 'bucket: a malformed bucket name'],
  ['Iam.LoginOutcome', { username: 'x', address: '::1', failed: true }, 'username: an invalid'],
  ['Iam.LoginOutcome', { username: 'admin', address: 'a'.repeat(65), failed: true }, 'address:'],
  [
    'Replica.Write',
    { msg: { ...objectPut, kind: 'upload.part', uploadId: 'u', partNumber: 0 } },
    'msg.partNumber: Too small',
  ],
  ['Replica.Read', get({ partNumber: 10_001 }), 'msg.partNumber: Too big'],
  ['Replica.Read', { msg: objectGet, range: { start: 9, end: 3 } }, 'range: a range ends before'],
  ['Replica.Read', { msg: objectGet, range: { start: -1, end: 3 } }, 'range.start: Too small'],
  ['Replica.Read', { msg: { kind: 'blob.read', sha256: 'AB' } }, 'msg.sha256: a malformed sha256'],
  ['Replica.Op', { msg: { kind: 'ae.leaves', partition: 256 } }, 'msg.partition: Too big'],
  [
    'Replica.Op',
    { msg: { kind: 'ae.keys', partition: 1, leaf: 1, after: null, limit: 0 } },
    'msg.limit: Too small',
  ],
  [
    'Replica.Op',
    { msg: { kind: 'ae.roots', partitions: Array(257).fill(0) } },
    'msg.partitions: Too big',
  ],
  [
    'Replica.Op',
    { msg: { kind: 'object.delete-many', bucket: 'b', objects: Array(1001).fill({ key: 'k' }) } },
    'msg.objects: Too big',
  ],
  ['Replica.Op', { msg: { kind: 'object.delete', ...head, key: '' } }, 'msg.key: Too small'],
  [
    'Replica.Op',
    { msg: { kind: 'upload.create', ...head, http, userMeta: {}, uploadId: 'u1' } },
    'msg.uploadId: a malformed upload id',
  ],
  [
    'Replica.Op',
    {
      msg: {
        kind: 'object.attributes.put',
        ...head,
        attributes: { tags: [{ key: 'aws:x', value: '' }] },
      },
    },
    'msg.attributes:',
  ],
  ['Replica.Op', { msg: { kind: 'bucket.delete', bucket: 'b' } }, 'msg.force: a peer deletes'],
  // A kind the method does not take.
  ['Replica.Op', put({}), 'msg.kind: a kind'],
  ['Replica.Op', { msg: { kind: 'system.get', name: 'x' } }, 'msg.kind: a kind'],
  [
    'Replica.Op',
    { msg: { kind: 'ae.purge', partition: 1, beforeMs: 0, after: null, limit: 1 } },
    'msg.kind: a kind',
  ],
  ['Replica.Op', { msg: { kind: 'blob.read', sha256: SHA256 } }, 'msg.kind: a kind'],
  ['Replica.Write', get({}), 'msg.kind: a kind'],
  ['Replica.Read', put({}), 'msg.kind: a kind'],
  // A kind that does not exist.
  ['Replica.Op', { msg: { kind: 'object.explode', ...head } }, 'msg.kind: a kind'],
  ['Replica.Write', { msg: { kind: 42 } }, 'msg.kind: a kind'],
  // A field the schema does not name: new fields are refused, not passed on unchecked.
  ['Membership.Ping', { ...envelope, extra: true }, '(body): Unrecognized key: "extra"'],
  ['Replica.Read', get({ lend: true }), 'msg: Unrecognized key: "lend"'],
  [
    'Replica.Write',
    { ...put({}), range: { start: 0, end: 1 } },
    '(body): Unrecognized key: "range"',
  ],
  [
    'Catalog.Apply',
    { records: [{ key: 'B/b', value: null, stamp: STAMP, owner: 'x' }] },
    'records.0:',
  ],
]

test('malformed requests are refused, naming the first issue', () => {
  for (const [method, body, issue] of MALFORMED) {
    const checked = checkPeerRequest(method, body)
    assert.not.ok(checked.ok, `${method} let ${JSON.stringify(body)?.slice(0, 200)} through`)
    if (!checked.ok) {
      assert.ok(checked.issue.startsWith(issue), `${method}: "${checked.issue}" for "${issue}"`)
    }
  }
})

test('well-formed answers pass unchanged, and a failure with its code and detail', () => {
  const getAnswer = {
    info: {
      key: 'k',
      size: 3,
      etag: '"e"',
      lastModifiedMs: 5,
      http,
      userMeta: {},
      checksums: {},
      stamp: STAMP,
    },
    keyStamp: STAMP,
  }
  const cases: [PeerMethod, object, unknown][] = [
    ['Replica.Read', WELL_FORMED['Replica.Read'][0] as object, getAnswer],
    ['Replica.Op', { msg: objectGet }, { absent: true, keyStamp: null }],
    ['Replica.Op', { msg: { kind: 'object.stamps', bucket: 'b', keys: ['a'] } }, [STAMP, null]],
    [
      'Replica.Write',
      { msg: objectPut },
      { etag: '"e"', lastModifiedMs: 1, checksums: {}, stale: true },
    ],
    [
      'Catalog.Claim',
      { bucket: 'b', claimant: 'n1' },
      { granted: false, exists: false, holder: 'n2' },
    ],
    ['Catalog.Release', { bucket: 'b', claimant: 'n1' }, null],
    ['Membership.Ping', envelope, envelope],
  ]
  for (const [method, request, value] of cases) {
    const checked = checkPeerAnswer(
      method,
      request,
      JSON.parse(JSON.stringify({ ok: true, value })),
    )
    assert.ok(checked.ok, `${method}: ${checked.ok ? '' : checked.issue}`)
    assert.equal(checked.value, { ok: true, value })
  }
  // ok(undefined) arrives as { ok: true }: null, which a method answering null takes.
  assert.equal(checkPeerAnswer('Iam.LoginOutcome', {}, { ok: true }), {
    ok: true,
    value: { ok: true, value: null },
  })
  const failure = { ok: false, code: 'busy', detail: 'try later', retryAfterSecs: 1 }
  assert.equal(checkPeerAnswer('Replica.Op', { msg: objectGet }, failure), {
    ok: true,
    value: failure,
  })
})

test('malformed answers are refused, naming the first issue', () => {
  const cases: [PeerMethod, object, unknown, string][] = [
    ['Replica.Op', { msg: objectGet }, { ok: true, value: { info: {} } }, 'value:'],
    ['Replica.Op', { msg: objectGet }, { ok: true, value: { absent: true } }, 'value:'],
    [
      'Replica.Op',
      { msg: { kind: 'object.stamps', bucket: 'b', keys: ['a'] } },
      { ok: true, value: ['soon'] },
      'value.0:',
    ],
    [
      'Replica.Write',
      { msg: objectPut },
      { ok: true, value: { etag: '"e"', lastModifiedMs: 1, checksums: {}, extra: 1 } },
      'value: Unrecognized key: "extra"',
    ],
    ['Catalog.Apply', { records: [] }, { ok: true, value: { applied: -1 } }, 'value.applied:'],
    ['Catalog.Release', { bucket: 'b', claimant: 'n1' }, { ok: true, value: 'done' }, 'value:'],
    ['Membership.Ping', envelope, { ok: false, detail: 'no code' }, 'code:'],
    ['Membership.Ping', envelope, 'ok', '(body): not a Result'],
  ]
  for (const [method, request, answer, issue] of cases) {
    const checked = checkPeerAnswer(method, request, answer)
    assert.not.ok(checked.ok, `${method} let ${JSON.stringify(answer)} through`)
    if (!checked.ok) {
      assert.ok(checked.issue.startsWith(issue), `${method}: "${checked.issue}" for "${issue}"`)
    }
  }
})

test.run()
