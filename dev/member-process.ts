/** @module One member of the local cluster as a child process: its output goes to ours line by
 * line, prefixed with its id, and it is stopped by its PID: SIGTERM, then SIGKILL when it has not
 * exited within a bound (a node drains in-flight requests for up to 30 s before it exits). When our
 * output is slow to take lines (a paused terminal, a full pipe), the member's output waits rather
 * than piling up here: at most one chunk of each member's stream is held. */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'

/** Beyond the node's 30 s drain and its stop of the actors. */
export const STOP_TIMEOUT_MS = 40_000
/** SIGKILL cannot be refused; this bounds only a process the kernel is slow to reap. */
const KILL_TIMEOUT_MS = 5_000

export interface MemberExit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface MemberProcess {
  id: string
  pid: number
  /** Settles when the process has exited (never rejects). */
  exited: Promise<MemberExit>
  /** SIGTERM, SIGKILL after STOP_TIMEOUT_MS; resolves once it exited or the bounds passed. */
  stop(): Promise<void>
}

export function spawnMember(id: string, script: string, env: NodeJS.ProcessEnv): MemberProcess {
  const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  // Without a listener, a failed spawn or kill would throw here and leave the others running.
  child.on('error', (error) => process.stderr.write(`[${id}] ${error.message}\n`))
  if (child.pid === undefined) throw new Error(`${id}: could not start ${process.execPath}`)
  prefixLines(child.stdout, process.stdout, id)
  prefixLines(child.stderr, process.stderr, id)
  let done: MemberExit | null = null
  const exited = new Promise<MemberExit>((resolve) => {
    child.once('exit', (code, signal) => resolve((done = { code, signal })))
  })
  const waitExit = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      void exited.then(() => {
        clearTimeout(timer)
        resolve(true)
      })
    })
  return {
    id,
    pid: child.pid,
    exited,
    async stop() {
      if (done !== null) return
      child.kill('SIGTERM')
      if (await waitExit(STOP_TIMEOUT_MS)) return
      process.stderr.write(`[${id}] no exit ${STOP_TIMEOUT_MS} ms after SIGTERM: SIGKILL\n`)
      child.kill('SIGKILL')
      await waitExit(KILL_TIMEOUT_MS)
    },
  }
}

function prefixLines(source: Readable, target: Writable, id: string): void {
  const lines = createInterface({ input: source, crlfDelay: Infinity })
  lines.on('line', (line) => {
    if (target.write(`[${id}] ${line}\n`)) return
    lines.pause()
    target.once('drain', () => lines.resume())
  })
}
