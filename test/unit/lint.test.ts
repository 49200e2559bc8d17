/** Goal: no floating or misused promise, no await of a non-promise and no switch over a union
 * that misses a case anywhere in the code (eslint.config.js: the typescript-eslint rules that use
 * the type checker; in an actor runtime a dropped promise is a lost message). Method: run ESLint
 * through its API on the TypeScript sources, as `npm run lint` does, and require no message. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ESLint } from 'eslint'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

test('ESLint finds no problem in the sources', async () => {
  const eslint = new ESLint({ cwd: root })
  const results = await eslint.lintFiles(['protocol', 'actors', 'http', 'runtime', 'test', 'bench'])
  const problems = results.flatMap((result) =>
    result.messages.map((message) => {
      const file = result.filePath.slice(root.length + 1)
      return `${file}:${message.line} ${message.ruleId ?? 'parse'}: ${message.message}`
    }),
  )
  assert.equal(problems, [])
  assert.ok(results.length > 100, `only ${results.length} files linted`)
})

test.run()
