/** Goal: cluster and gateway settings are checked at start. A node that cannot take part in its
 * cluster as configured (a name missing, itself not in its pool, quorums above the replication
 * factor, a short cluster secret, GC grace within the rejoin window, half a TLS triple) is refused
 * with a ConfigError naming the variable; legal but unwise settings come back as warnings; the
 * actors get SPEC.md's defaults for every tuning variable.
 * Method: loadClusterSettings on literal environments. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { loadClusterSettings } from '../../runtime/cluster-config.js'
import { ConfigError } from '../../runtime/config.js'

const NODE = {
  SVC_CLUSTER_NAME: 'test',
  SVC_NODE_ID: 'n1',
  SVC_NODE_GRPC_ADDR: '127.0.0.1:9101',
  SVC_NODE_HTTP_ADDR: '127.0.0.1:9001',
  SVC_SEEDS: '127.0.0.1:9102, 127.0.0.1:9103',
  SVC_POOL_NAME: 'p1',
  SVC_POOL_NODES: 'n1:127.0.0.1:9101,n2:127.0.0.1:9102,n3:127.0.0.1:9103',
  SVC_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  SVC_SECRET_ACCESS_KEY: 'secret-access-key-of-the-cluster',
  SVC_CLUSTER_SECRET: 'x'.repeat(32),
}

test('a storage node: SPEC defaults, its pool, no warning with a dedicated secret', () => {
  const settings = loadClusterSettings(NODE, 'cluster')
  assert.equal(settings.warnings, [])
  assert.equal(
    settings.poolNodes.map((node) => node.id),
    ['n1', 'n2', 'n3'],
  )
  const config = settings.actorConfig
  assert.is(config['SVC_REPLICATION_FACTOR'], '3')
  assert.is(config['SVC_WRITE_QUORUM'], '2')
  assert.is(config['SVC_READ_QUORUM'], '2')
  assert.is(config['SVC_GC_GRACE_DAYS'], '7')
  assert.is(config['SVC_MAX_REJOIN_DOWNTIME_DAYS'], '3')
  assert.is(config['SVC_ANTI_ENTROPY_INTERVAL_SECS'], '600')
  assert.is(config['SVC_HINT_TTL_HOURS'], '3')
  assert.is(config['SVC_SEEDS'], '127.0.0.1:9102,127.0.0.1:9103')
  assert.is(config['SVC_NODE_GRPC_ADDR'], '127.0.0.1:9101')
})

test('fractions for durations, so that tests run in seconds', () => {
  const env = { ...NODE, SVC_GC_GRACE_DAYS: '0.0002', SVC_MAX_REJOIN_DOWNTIME_DAYS: '0.0001' }
  const config = loadClusterSettings(env, 'cluster').actorConfig
  assert.is(config['SVC_GC_GRACE_DAYS'], '0.0002')
})

test('a wildcard address is legal but warned: the others cannot reach it', () => {
  const env = { ...NODE, SVC_NODE_HTTP_ADDR: '0.0.0.0:9000' }
  assert.match(loadClusterSettings(env, 'cluster').warnings.join('\n'), /wildcard/)
})

test('warnings: a derived cluster key, and W + R not above RF', () => {
  const env = { ...NODE, SVC_CLUSTER_SECRET: '', SVC_WRITE_QUORUM: '1', SVC_READ_QUORUM: '1' }
  const warnings = loadClusterSettings(env, 'cluster').warnings
  assert.is(warnings.length, 2)
  assert.match(warnings[0] ?? '', /SVC_CLUSTER_SECRET is not set/)
  assert.match(warnings[1] ?? '', /SVC_WRITE_QUORUM \+ SVC_READ_QUORUM/)
})

test('a gateway needs seeds and no pool', () => {
  const gateway = {
    SVC_CLUSTER_NAME: 'test',
    SVC_NODE_ID: 'gw',
    SVC_SEEDS: '127.0.0.1:9101',
    SVC_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    SVC_SECRET_ACCESS_KEY: 'secret-access-key-of-the-cluster',
  }
  const settings = loadClusterSettings(gateway, 'gateway')
  assert.equal(settings.poolNodes, [])
  assert.is(settings.actorConfig['SVC_NODE_GRPC_ADDR'], '0.0.0.0:9100')
  assert.throws(
    () => loadClusterSettings({ ...gateway, SVC_SEEDS: '' }, 'gateway'),
    (error: unknown) => error instanceof ConfigError && /SVC_SEEDS/.test(error.message),
  )
})

test('settings a node cannot run with name their variable', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ SVC_CLUSTER_NAME: '' }, /SVC_CLUSTER_NAME must be set/],
    [{ SVC_CLUSTER_NAME: 'a b' }, /SVC_CLUSTER_NAME/],
    [{ SVC_NODE_ID: '' }, /SVC_NODE_ID/],
    [{ SVC_NODE_GRPC_ADDR: '9101' }, /SVC_NODE_GRPC_ADDR/],
    [{ SVC_SEEDS: 'nowhere' }, /SVC_SEEDS/],
    [{ SVC_POOL_NAME: '' }, /SVC_POOL_NAME/],
    [{ SVC_POOL_NODES: '' }, /SVC_POOL_NODES/],
    [{ SVC_POOL_NODES: 'n2:127.0.0.1:9102,n3:127.0.0.1:9103,n4:127.0.0.1:9104' }, /this node/],
    [{ SVC_REPLICATION_FACTOR: '4' }, /SVC_REPLICATION_FACTOR/],
    [{ SVC_REPLICATION_FACTOR: '0' }, /SVC_REPLICATION_FACTOR/],
    [{ SVC_WRITE_QUORUM: '4', SVC_REPLICATION_FACTOR: '3' }, /SVC_WRITE_QUORUM/],
    [{ SVC_READ_QUORUM: '2.5' }, /SVC_READ_QUORUM/],
    [{ SVC_GC_GRACE_DAYS: '3' }, /SVC_GC_GRACE_DAYS/],
    [{ SVC_HINT_TTL_HOURS: '-1' }, /SVC_HINT_TTL_HOURS/],
    [{ SVC_CLUSTER_SECRET: 'short' }, /SVC_CLUSTER_SECRET/],
    [{ SVC_GRPC_TLS_CERT: 'cert.pem' }, /SVC_GRPC_TLS_CA/],
  ]
  for (const [change, message] of cases) {
    assert.throws(
      () => loadClusterSettings({ ...NODE, ...change }, 'cluster'),
      (error: unknown) => error instanceof ConfigError && message.test(error.message),
      JSON.stringify(change),
    )
  }
  const { SVC_ACCESS_KEY_ID: _dropped, ...withoutKeys } = NODE
  assert.throws(
    () => loadClusterSettings(withoutKeys, 'cluster'),
    (error: unknown) => error instanceof ConfigError && /SVC_ACCESS_KEY_ID/.test(error.message),
  )
})

test.run()
