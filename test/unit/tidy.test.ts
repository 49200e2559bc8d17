/** Goal: the folders stay the architecture and the code stays tidy (STYLE.md sections 1, 6, 7).
 * Method: read every source file and check: import arrows (protocol imports no other folder of
 * ours; actors and http import protocol only; no actor imports another actor), no effects of their
 * own in actors/ (clock, randomness, timers, threads, files, sockets: those go through ctx), no
 * fix-me markers, no line over 100 columns, and every file opens with a module comment. */
import { test } from 'uvu'
import * as assert from 'uvu/assert'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const FOLDERS = ['protocol', 'actors', 'http', 'runtime', 'test', 'bench', 'dev', 'console']

function sources(folder: string): string[] {
  const dir = join(root, folder)
  const found: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) found.push(...sources(relative(root, path)))
    else if (name.endsWith('.ts')) found.push(relative(root, path))
  }
  return found
}

const files = FOLDERS.flatMap(sources)
const text = new Map(files.map((file) => [file, readFileSync(join(root, file), 'utf8')]))

function importsOf(file: string): string[] {
  const source = text.get(file) ?? ''
  const found: string[] = []
  for (const match of source.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
    found.push(relative(root, resolve(root, dirname(file), match[1]!)))
  }
  return found
}

/** Which of our folders each folder may import (besides itself). */
const ARROWS: Record<string, string[]> = {
  protocol: [],
  actors: ['protocol'],
  http: ['protocol'],
  runtime: ['protocol', 'actors', 'http'],
  // The bench's pure figures (thread kinds, the node's ceiling) have unit tests.
  test: ['protocol', 'actors', 'http', 'runtime', 'test', 'dev', 'bench'],
  // The bench's cluster target is dev/cluster-plan.ts's layout of a local cluster.
  bench: ['protocol', 'http', 'runtime', 'test', 'dev'],
  // `npm run cluster` runs the compiled node as a child process and imports none of it.
  dev: [],
  // The console's pages run in a browser: they speak to the node over HTTP only.
  console: [],
}

test('imports follow the arrows of the architecture', () => {
  const wrong: string[] = []
  for (const file of files) {
    const folder = file.split('/')[0]!
    for (const target of importsOf(file)) {
      const targetFolder = target.split('/')[0]!
      if (targetFolder === folder) {
        // Inside actors/, an actor may import only its own folder.
        if (folder === 'actors' && target.split('/')[1] !== file.split('/')[1]) {
          wrong.push(`${file} -> ${target}`)
        }
        continue
      }
      if (!(ARROWS[folder] ?? []).includes(targetFolder)) wrong.push(`${file} -> ${target}`)
    }
  }
  assert.equal(wrong, [])
})

const ACTOR_BANS: [RegExp, string][] = [
  [/\bDate\.now\(/, 'Date.now (use ctx.now)'],
  [/\bMath\.random\(/, 'Math.random (use ctx.randomBytes)'],
  [/\bperformance\.now\(/, 'performance.now'],
  [/\bset(Timeout|Interval|Immediate)\(/, 'timers (use ctx.after)'],
  [/\bSharedArrayBuffer\b/, 'SharedArrayBuffer'],
  [/\bAtomics\./, 'Atomics'],
  [/from 'node:(fs|fs\/promises|net|http|https|worker_threads|child_process)'/, 'I/O modules'],
  [/\bprocess\.(stdout|stderr|exit)\b/, 'process output (use ctx.log)'],
]

test('actors do no effects of their own', () => {
  const wrong: string[] = []
  for (const file of files.filter((f) => f.startsWith('actors/'))) {
    for (const [pattern, what] of ACTOR_BANS) {
      if (pattern.test(text.get(file) ?? '')) wrong.push(`${file}: ${what}`)
    }
  }
  assert.equal(wrong, [])
})

/** The simulated world (test/sim/) takes time, randomness and every effect from the simulation:
 * the one real macrotask is the scheduler's wait for the microtask queue to drain, and the command
 * line's driver prints. */
test('the simulation reads no real clock, randomness, timers, files or sockets', () => {
  const wrong: string[] = []
  for (const file of files.filter((f) => f.startsWith('test/sim/') && f !== 'test/sim/cli.ts')) {
    let source = text.get(file) ?? ''
    if (file === 'test/sim/scheduler.ts') {
      source = source.replace('new Promise((resolve) => setImmediate(resolve))', 'drained')
    }
    for (const [pattern, what] of ACTOR_BANS) {
      if (pattern.test(source)) wrong.push(`${file}: ${what}`)
    }
  }
  assert.equal(wrong, [])
})

test('no fix-me marker, no line over 100 columns, a module comment on top', () => {
  const wrong: string[] = []
  for (const file of files) {
    const source = text.get(file) ?? ''
    if (source.includes('FIX' + 'ME')) wrong.push(`${file}: FIX${'ME'}`)
    source.split('\n').forEach((line, i) => {
      const columns = [...line].length
      if (columns > 100) wrong.push(`${file}:${i + 1} is ${columns} columns`)
    })
    const commented = source.startsWith('/**') || source.startsWith('//')
    if (!file.endsWith('.d.ts') && !commented) wrong.push(`${file}: no module comment`)
  }
  assert.equal(wrong, [])
})

test.run()
