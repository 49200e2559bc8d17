/** @module External programs that tests run (promtool, systemd-analyze, a Dockerfile linter,
 * docker-compose), each bounded in time. A program that is not installed makes its check say so
 * and not run; with CI=true it fails instead, since .ci/test-deps installs every one of them. */
import { spawnSync } from 'node:child_process'
import * as assert from 'uvu/assert'

const TOOL_TIMEOUT_MS = 60_000

export interface ToolRun {
  status: number | null
  /** stdout and stderr together, as a person would read them. */
  output: string
}

/** Whether `command` runs here (it answers `probeArgs`); says so when it does not. */
export function toolFound(command: string, probeArgs: string[] = ['--version']): boolean {
  const probe = spawnSync(command, probeArgs, { encoding: 'utf8', timeout: TOOL_TIMEOUT_MS })
  if (probe.error === undefined) return true
  assert.is(process.env['CI'], undefined, `CI installs ${command} (.ci/test-deps)`)
  console.log(`${command} not installed here (bash .ci/test-deps installs it): check not run`)
  return false
}

export function runTool(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): ToolRun {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    timeout: TOOL_TIMEOUT_MS,
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
  })
  if (result.error !== undefined) throw result.error
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}
