/** Goal: `npm run cluster` lays out a cluster the node accepts: 3 storage nodes and a gateway on
 * distinct loopback ports counted from one base, away from the single node's 9000 and 9100, one
 * pool of the three, data under the data root, shared settings from the environment or printed
 * development defaults. Method: build plans for given environments and check them, and run each
 * member's environment through the node's own configuration readers. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { loadClusterSettings } from '../../runtime/cluster-config.js'
import { loadConfig } from '../../runtime/config.js'
import {
  clusterPlan,
  DEFAULT_BASE_PORT,
  DEV_DEFAULTS,
  endpointLines,
  GRPC_PORT_OFFSET,
} from '../../dev/cluster-plan.js'

const portOf = (address: string | undefined): number => Number(address?.split(':')[1])

test('default ports: gateway on the base, nodes above, gRPC 100 higher, none on 9000/9100', () => {
  const plan = clusterPlan({}, '/repo')
  assert.equal(
    plan.members.map((member) => [member.id, member.role, member.httpUrl]),
    [
      ['n1', 'node', 'http://127.0.0.1:9011'],
      ['n2', 'node', 'http://127.0.0.1:9012'],
      ['n3', 'node', 'http://127.0.0.1:9013'],
      ['g1', 'gateway', 'http://127.0.0.1:9010'],
    ],
  )
  const ports = plan.members.flatMap((member) => [
    portOf(member.env['SVC_NODE_HTTP_ADDR']),
    portOf(member.env['SVC_NODE_GRPC_ADDR']),
  ])
  assert.is(new Set(ports).size, 8, 'every port distinct')
  assert.not.ok(ports.includes(9000) || ports.includes(9100))
  for (const member of plan.members) {
    assert.is(member.env['SVC_NODE_HTTP_ADDR'], member.httpUrl.slice('http://'.length))
    assert.is(
      portOf(member.env['SVC_NODE_GRPC_ADDR']),
      portOf(member.env['SVC_NODE_HTTP_ADDR']) + GRPC_PORT_OFFSET,
    )
  }
  assert.is(DEFAULT_BASE_PORT, 9010)
})

test('CLUSTER_BASE_PORT moves every port and CLUSTER_DATA_ROOT every data directory', () => {
  const plan = clusterPlan({ CLUSTER_BASE_PORT: '20000', CLUSTER_DATA_ROOT: 'scratch' }, '/repo')
  const n2 = plan.members.find((member) => member.id === 'n2')
  assert.is(n2?.env['SVC_NODE_HTTP_ADDR'], '127.0.0.1:20002')
  assert.is(n2?.env['SVC_NODE_GRPC_ADDR'], '127.0.0.1:20102')
  assert.is(n2?.dataDir, '/repo/scratch/n2')
  const absolute = clusterPlan({ CLUSTER_DATA_ROOT: '/elsewhere' }, '/repo')
  assert.equal(
    absolute.members.map((member) => member.dataDir),
    ['/elsewhere/n1', '/elsewhere/n2', '/elsewhere/n3', null],
  )
  assert.equal(
    clusterPlan({}, '/repo').members.map((member) => member.env['SVC_DATA_DIR']),
    ['/repo/data-cluster/n1', '/repo/data-cluster/n2', '/repo/data-cluster/n3', undefined],
  )
})

test('a base port that leaves no room for the gRPC ports is refused, naming the variable', () => {
  for (const value of ['0', '-5', '65500', '9010.5', 'ninety']) {
    assert.throws(() => clusterPlan({ CLUSTER_BASE_PORT: value }, '/repo'), /CLUSTER_BASE_PORT/)
  }
})

test('one pool of the three nodes, seeded with their gRPC addresses, on every member', () => {
  const plan = clusterPlan({}, '/repo')
  const nodes = plan.members.filter((member) => member.role === 'node')
  const pool = nodes.map((node) => `${node.id}:${node.env['SVC_NODE_GRPC_ADDR']}`).join(',')
  const seeds = nodes.map((node) => node.env['SVC_NODE_GRPC_ADDR']).join(',')
  for (const node of nodes) {
    assert.is(node.env['SVC_MODE'], 'cluster')
    assert.is(node.env['SVC_POOL_NODES'], pool)
    assert.is(node.env['SVC_POOL_NAME'], 'p1')
  }
  const gateway = plan.members.find((member) => member.role === 'gateway')
  assert.is(gateway?.env['SVC_MODE'], 'gateway')
  assert.is(gateway?.env['SVC_POOL_NODES'], undefined)
  for (const member of plan.members) assert.is(member.env['SVC_SEEDS'], seeds)
})

test('shared settings come from the environment, the others are printed defaults', () => {
  const plan = clusterPlan(
    { SVC_ACCESS_KEY_ID: 'mine', SVC_SECRET_ACCESS_KEY: 'my-secret-key', SVC_ROOT_PASSWORD: '' },
    '/repo',
  )
  for (const member of plan.members) {
    assert.is(member.env['SVC_ACCESS_KEY_ID'], 'mine')
    assert.is(member.env['SVC_SECRET_ACCESS_KEY'], 'my-secret-key')
    assert.is(member.env['SVC_ROOT_PASSWORD'], DEV_DEFAULTS.SVC_ROOT_PASSWORD)
    assert.is(member.env['SVC_CLUSTER_SECRET'], DEV_DEFAULTS.SVC_CLUSTER_SECRET)
  }
  assert.not.ok(plan.defaulted.includes('SVC_ACCESS_KEY_ID'))
  assert.ok(plan.defaulted.includes('SVC_ROOT_PASSWORD'), 'an empty value is not a choice')
  const printed = endpointLines(plan, new Map([['g1', 42]])).join('\n')
  assert.match(printed, 'g1  http://127.0.0.1:9010  gateway, pid 42')
  assert.match(printed, 'access key mine  secret key my-secret-key')
  assert.match(printed, `password ${DEV_DEFAULTS.SVC_ROOT_PASSWORD}`)
  assert.match(printed, /development defaults \(set to choose\): .*SVC_ROOT_PASSWORD/)
  assert.not.match(printed, /development defaults.*SVC_ACCESS_KEY_ID/)
})

test("every member's environment passes the node's own configuration checks", () => {
  for (const member of clusterPlan({}, '/repo').members) {
    const mode = member.role === 'node' ? 'cluster' : 'gateway'
    assert.is(loadConfig(member.env).mode, mode)
    const settings = loadClusterSettings(member.env, mode)
    assert.equal(settings.warnings, [], member.id)
    assert.is(settings.poolNodes.length, member.role === 'node' ? 3 : 0)
  }
})

test.run()
