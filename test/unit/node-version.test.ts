/** Goal: the node refuses a Node.js older than it needs with a configuration error, and accepts
 * the versions it runs on. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { ConfigError } from '../../runtime/config.js'
import { checkNodeVersion } from '../../runtime/node-version.js'

test('Node 22.12 and later are accepted', () => {
  for (const version of [
    '22.12.0',
    '22.23.3',
    '23.1.0',
    '24.21.0',
    '25.0.0',
    process.versions.node,
  ]) {
    checkNodeVersion(version)
  }
})

test('older versions are refused with a line that names the version needed', () => {
  for (const version of ['20.20.2', '22.11.0', '18.0.0']) {
    try {
      checkNodeVersion(version)
      assert.unreachable(`${version} accepted`)
    } catch (error) {
      assert.instance(error, ConfigError)
      assert.match((error as Error).message, `Node.js ${version} is too old`)
      assert.match((error as Error).message, '22.12 or later')
    }
  }
})

test.run()
