/** Goal: `--help` and the README's configuration table list the same variables, and every variable
 * the configuration reads is among them. Method: the README's table rows and the sources of
 * runtime/config.ts, runtime/node-secrets.ts and runtime/cluster-config.ts, read as text, against
 * runtime/usage.ts. */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { usage, VARIABLES } from '../../runtime/usage.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const listed = VARIABLES.map((variable) => variable.name).sort()
/** Values config.ts derives for the actors, not settings. */
const DERIVED = ['SVC_HTTP_HOST', 'SVC_HTTP_PORT']

test("the README's configuration table names the variables --help lists", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const rows = readme.split('\n').filter((line) => line.startsWith('| `SVC_'))
  const named = rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`(SVC_\w+)`/g)])
  assert.equal([...new Set(named.map((match) => match[1]))].sort(), listed)
})

test('every variable the configuration reads is listed, and --help prints each', () => {
  for (const file of ['config.ts', 'node-secrets.ts', 'cluster-config.ts']) {
    const source = readFileSync(join(root, 'runtime', file), 'utf8')
    for (const [name] of source.matchAll(/SVC_[A-Z_]+/g)) {
      if (DERIVED.includes(name)) continue
      assert.ok(listed.includes(name), `${file}: ${name}`)
    }
  }
  const text = usage()
  for (const name of listed) assert.ok(text.includes(name), name)
})

test.run()
