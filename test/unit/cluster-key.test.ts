/** Goal: every node of a cluster computes the same key from the same settings, and another
 * cluster name or secret gives another key; without any secret there is no key. Method: call
 * clusterKey on configurations. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { clusterKey } from '../../runtime/cluster/cluster-key.js'
import { ConfigError } from '../../runtime/config.js'

const SECRET = 'a dedicated cluster secret, 32+ chars'
const BASE = { SVC_CLUSTER_NAME: 'blue', SVC_SECRET_ACCESS_KEY: 's3-secret-access-key' }

test('SVC_CLUSTER_SECRET is the key when set', () => {
  const { key, derived } = clusterKey({ ...BASE, SVC_CLUSTER_SECRET: SECRET })
  assert.is(derived, false)
  assert.is(key.toString('utf8'), SECRET)
})

test('without it, the key is derived from the S3 secret and the cluster name', () => {
  const first = clusterKey(BASE)
  assert.is(first.derived, true)
  assert.is(first.key.length, 32)
  assert.ok(first.key.equals(clusterKey({ ...BASE }).key), 'the same on every node')
  const otherName = clusterKey({ ...BASE, SVC_CLUSTER_NAME: 'green' }).key
  const otherSecret = clusterKey({ ...BASE, SVC_SECRET_ACCESS_KEY: 'another-secret' }).key
  assert.not.ok(first.key.equals(otherName))
  assert.not.ok(first.key.equals(otherSecret))
  assert.not.ok(first.key.equals(Buffer.from(BASE.SVC_SECRET_ACCESS_KEY)), 'not the secret itself')
})

test('with no secret at all there is no key', () => {
  assert.throws(
    () => clusterKey({ SVC_CLUSTER_NAME: 'blue' }),
    (error: unknown) => {
      return error instanceof ConfigError && /SVC_CLUSTER_SECRET/.test(error.message)
    },
  )
  assert.throws(
    () => clusterKey({ SVC_SECRET_ACCESS_KEY: 'x' }),
    (error: unknown) => error instanceof ConfigError,
  )
})

test.run()
