/** @module The servers under test as child processes: spawned with their output in a log file,
 * waited for until a probe URL answers (or they exit, or a bound passes), and stopped by PID:
 * SIGTERM, then SIGKILL after a grace period, then any descendant left over (nginx workers) by
 * its own PID. Ports come from the kernel. */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { processTree } from './rss.js'

/** The service's entry, built beside the bench. */
export const SERVICE_MAIN = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'runtime',
  'main.js',
)
const POLL_MS = 100
const STOP_GRACE_MS = 10_000
const LOG_TAIL_CHARS = 2000

export function spawnLogged(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logPath: string,
): ChildProcess {
  const log = openSync(logPath, 'a')
  try {
    return spawn(command, args, { env, stdio: ['ignore', log, log] })
  } finally {
    closeSync(log) // The child holds its own copy of the descriptor.
  }
}

/** Null once GET `url` answers a status `isUp` accepts within `waitMs`; else why not. */
export async function waitUp(
  server: ChildProcess,
  url: string,
  isUp: (status: number) => boolean,
  waitMs: number,
): Promise<string | null> {
  const deadline = Date.now() + waitMs
  let last = 'no answer'
  for (let attempt = 0; attempt < waitMs / POLL_MS && Date.now() < deadline; attempt++) {
    if (server.exitCode !== null || server.signalCode !== null) {
      return `exited (${server.exitCode ?? server.signalCode}) before it was up`
    }
    try {
      const response = await request(url, { headersTimeout: 2000, bodyTimeout: 2000 })
      await response.body.dump()
      if (isUp(response.statusCode)) return null
      last = `GET ${url} answered ${response.statusCode}`
    } catch (error) {
      last = String(error)
    }
    await sleep(POLL_MS)
  }
  return `not up within ${waitMs} ms (${last})`
}

/** The end of what these log files of `dir` hold, those that exist, one after the other. */
export function logTail(dir: string, files: readonly string[]): string {
  const parts: string[] = []
  for (const file of files) {
    const path = join(dir, file)
    if (existsSync(path)) parts.push(readFileSync(path, 'utf8'))
  }
  return parts.join('').slice(-LOG_TAIL_CHARS).trim()
}

/** SIGTERM, SIGKILL if it lingers, then any descendant still there, each by its PID. */
export async function stopProcess(server: ChildProcess): Promise<void> {
  const pid = server.pid
  if (pid === undefined) return
  const descendants = processTree(pid).slice(1)
  if (server.exitCode === null && server.signalCode === null) {
    const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
    server.kill('SIGTERM')
    if (!(await within(exited, STOP_GRACE_MS))) {
      server.kill('SIGKILL')
      await within(exited, STOP_GRACE_MS)
    }
  }
  for (const child of descendants) {
    try {
      process.kill(child, 'SIGKILL')
    } catch {
      // Already gone, as it should be once its parent stopped it.
    }
  }
}

async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  try {
    return await Promise.race([promise.then(() => true), timeout])
  } finally {
    clearTimeout(timer)
  }
}

export function sleep(ms: number): Promise<void> {
  assert(ms >= 0)
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** A port the kernel just handed out; a tiny race with other programs, harmless here. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      assert(address !== null && typeof address === 'object')
      server.close(() => resolve(address.port))
    })
  })
}
