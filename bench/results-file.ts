/** @module The bench's record: each run that measured something appends its closing report to
 * bench/results.md (newest last) under a heading with its date and commit, and the facts of the
 * machine and of the run's settings that the figures depend on. Figures live there, dated, not in
 * code comments or documents, where they would drift from the code they describe. */
import { execFileSync } from 'node:child_process'
import { appendFileSync, existsSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'

/** In the source tree, beside this module's source (dist/bench/ is two folders below the root). */
export const RESULTS_FILE = fileURLToPath(new URL('../../bench/results.md', import.meta.url))

/** A git command of the heading gets this long; the bench does not wait on a stuck one. */
const GIT_TIMEOUT_MS = 5_000

const PREAMBLE = [
  '# Bench results',
  '',
  'Appended by `npm run bench`, newest last: each run under its date (UTC) and commit, with the',
  'machine and settings it ran on. The load generator shares the cores with the servers, so a',
  'run measures this machine at that moment: compare runs of one machine, not figures alone.',
  '',
].join('\n')

export interface RunFacts {
  startedAt: Date
  /** The commit the run was built from, as `describeCommit` gave it at the start. */
  commit: string
  /** The settings line the bench printed first. */
  settings: string
  /** The load average as each target started, by target name. */
  loadAverages: ReadonlyMap<string, string>
}

/** The report lines, printed as they come and kept for the results file. */
export class Transcript {
  readonly lines: string[] = []

  readonly print = (text: string): void => {
    console.log(text)
    this.lines.push(text)
  }
}

/** Appends one run's entry; returns the reason when the file could not be written. */
export function appendResults(facts: RunFacts, transcript: Transcript): string | null {
  const entry = [
    `## ${facts.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${facts.commit}`,
    '',
    `${machineText()}; ${facts.settings}.`,
    '',
    `Load average (1, 5, 15 min) as each target started: ${loadText(facts.loadAverages)}.`,
    '',
    '```text',
    ...transcript.lines.join('\n').trim().split('\n'),
    '```',
    '',
  ].join('\n')
  try {
    const text = existsSync(RESULTS_FILE) ? `\n${entry}` : `${PREAMBLE}\n${entry}`
    appendFileSync(RESULTS_FILE, text)
    return null
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/** The checkout's commit, taken when the run starts: the tree may move on while it runs. */
export function describeCommit(): string {
  const head = git('rev-parse', '--short=12', 'HEAD')
  if (head === null) return 'commit unknown (not a git checkout)'
  // Changes to tracked files make the figures those of no commit; say so (earlier entries aside).
  const changed = git(
    'status',
    '--porcelain',
    '--untracked-files=no',
    '--',
    '.',
    ':!bench/results.md',
  )
  return changed === '' ? `commit ${head}` : `commit ${head} with uncommitted changes`
}

function git(...args: string[]): string | null {
  try {
    const output = execFileSync('git', args, {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: GIT_TIMEOUT_MS,
    })
    return output.trim()
  } catch {
    return null
  }
}

function machineText(): string {
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU'
  const memory = (totalmem() / 2 ** 30).toFixed(1)
  return `Node ${process.version}, ${model}, ${memory} GiB of memory`
}

function loadText(loads: ReadonlyMap<string, string>): string {
  if (loads.size === 0) return 'none started'
  return [...loads].map(([name, load]) => `${name} ${load}`).join('; ')
}
