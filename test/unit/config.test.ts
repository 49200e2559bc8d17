/** Goal: the node's configuration from the environment. SVC_NODE_HTTP_ADDR gives host and port
 * (IPv6 in brackets); SVC_HTTP_WORKERS defaults to the cores beyond the two the store and the
 * coordinator keep busy (1 to 4), takes 1 to 64, and refuses anything else with a
 * ConfigError naming the variable; SVC_STORE_SHARDS follows the cores on a single node (1 to 16)
 * and is 1 for a cluster's nodes and gateways, as is anything else refused with a
 * ConfigError naming the variable, as does an SVC_LOG_LEVEL pino does not know; every actor gets
 * the values it needs in its flat record, the scrubber's cycle in every mode (30 days, fractions
 * accepted).
 * Method: loadConfig on literal environments. */
import { availableParallelism } from 'node:os'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { ConfigError, loadConfig } from '../../runtime/config.js'

test('defaults: 0.0.0.0:9000, ./data, ingress threads from the core count', () => {
  const config = loadConfig({})
  assert.is(config.httpHost, '0.0.0.0')
  assert.is(config.httpPort, 9000)
  assert.ok(config.dataDir.endsWith('/data'))
  const expected =
    process.platform === 'linux' ? Math.min(Math.max(1, availableParallelism() - 2), 4) : 1
  assert.is(config.httpWorkers, expected)
  assert.is(config.actorConfig['SVC_HTTP_WORKERS'], String(expected))
  assert.is(config.storeShards, Math.min(availableParallelism(), 16))
  assert.is(config.actorConfig['SVC_STORE_SHARDS'], String(config.storeShards))
})

test('store shards: 1 to 16 on a single node, 1 and no more for a cluster node', () => {
  assert.is(loadConfig({ SVC_STORE_SHARDS: '16' }).storeShards, 16)
  const cluster = { SVC_MODE: 'gateway' }
  assert.is(loadConfig(cluster).storeShards, 1)
  assert.is(loadConfig({ ...cluster, SVC_STORE_SHARDS: '1' }).storeShards, 1)
  assert.is(loadConfig({}).coordinators, 1)
})

test('an address with an IPv6 host, and an explicit thread count', () => {
  const config = loadConfig({ SVC_NODE_HTTP_ADDR: '[::1]:9100', SVC_HTTP_WORKERS: '3' })
  assert.is(config.httpHost, '::1')
  assert.is(config.httpPort, 9100)
  if (process.platform === 'linux') assert.is(config.httpWorkers, 3)
  assert.is(config.actorConfig['SVC_HTTP_PORT'], '9100')
})

test('bad values are configuration errors that name their variable', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ SVC_HTTP_WORKERS: '0' }, /SVC_HTTP_WORKERS/],
    [{ SVC_HTTP_WORKERS: '65' }, /SVC_HTTP_WORKERS/],
    [{ SVC_HTTP_WORKERS: '1.5' }, /SVC_HTTP_WORKERS/],
    [{ SVC_HTTP_WORKERS: '-2' }, /SVC_HTTP_WORKERS/],
    [{ SVC_STORE_SHARDS: '0' }, /SVC_STORE_SHARDS/],
    [{ SVC_STORE_SHARDS: '17' }, /SVC_STORE_SHARDS/],
    [{ SVC_STORE_SHARDS: 'two' }, /SVC_STORE_SHARDS/],
    [{ SVC_MODE: 'gateway', SVC_STORE_SHARDS: '2' }, /SVC_STORE_SHARDS above 1 is for a single/],
    [{ SVC_COORDINATORS: '0' }, /SVC_COORDINATORS/],
    [{ SVC_COORDINATORS: '2' }, /SVC_COORDINATORS above 1 is for a cluster node/],
    [{ SVC_NODE_HTTP_ADDR: '9000' }, /SVC_NODE_HTTP_ADDR/],
    [{ SVC_NODE_HTTP_ADDR: 'localhost:70000' }, /SVC_NODE_HTTP_ADDR/],
    [{ SVC_MODE: 'cloud' }, /SVC_MODE/],
    [{ SVC_LOG_LEVEL: 'verbose' }, /SVC_LOG_LEVEL must be one of trace, debug, info/],
    [{ SVC_LOG_LEVEL: 'INFO' }, /SVC_LOG_LEVEL/],
    [{ SVC_SCRUBBER_FULL_SCAN_DAYS: '0' }, /SVC_SCRUBBER_FULL_SCAN_DAYS/],
    [{ SVC_SCRUBBER_FULL_SCAN_DAYS: 'monthly' }, /SVC_SCRUBBER_FULL_SCAN_DAYS/],
    [{ SVC_SCRUBBER_FULL_SCAN_DAYS: '1e3' }, /SVC_SCRUBBER_FULL_SCAN_DAYS/],
  ]
  for (const [env, message] of cases) {
    assert.throws(
      () => loadConfig(env),
      (error: unknown) => error instanceof ConfigError && message.test(error.message),
      JSON.stringify(env),
    )
  }
})

test("the scrubber's cycle: 30 days by default, fractions for tests, in single mode too", () => {
  assert.is(loadConfig({}).actorConfig['SVC_SCRUBBER_FULL_SCAN_DAYS'], '30')
  const env = { SVC_SCRUBBER_FULL_SCAN_DAYS: '0.0001' }
  assert.is(loadConfig(env).actorConfig['SVC_SCRUBBER_FULL_SCAN_DAYS'], '0.0001')
})

test('every log level pino knows is accepted, and silent', () => {
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']) {
    assert.is(loadConfig({ SVC_LOG_LEVEL: level }).actorConfig['SVC_LOG_LEVEL'], level)
  }
})

test.run()
