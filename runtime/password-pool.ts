/** @module The node's password pool: a piscina pool on the main thread that runs argon2id for iam
 * (runtime/password-task.ts). Actors reach it through the supervisor; an actor killed while its
 * hash runs only loses the answer. Bounded: PASSWORD_THREADS_MAX threads, at most
 * PASSWORD_QUEUE_MAX tasks waiting (one more answers `busy`), each answered `timeout` after
 * PASSWORD_TASK_TIMEOUT_MS. A late task is not aborted: piscina aborts a running task by
 * terminating its thread, and a thread terminated inside argon2's native call aborts the whole
 * process (Napi::Error, terminate). It runs on to its end instead (argon2 with fixed costs always
 * ends), its answer dropped; the queue bound keeps such work bounded. */
import { Piscina } from 'piscina'
import { fail, ok, type Result } from '../protocol/errors.js'
import { PASSWORD_QUEUE_MAX, PASSWORD_TASK_TIMEOUT_MS, PASSWORD_THREADS_MAX } from './knobs.js'
import type { PasswordTask } from './password-task.js'

export class PasswordPool {
  /** `taskTimeoutMs`: tests that must not depend on the machine's speed set their own. */
  constructor(private readonly taskTimeoutMs = PASSWORD_TASK_TIMEOUT_MS) {}

  private readonly pool = new Piscina({
    filename: new URL('./password-task.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: PASSWORD_THREADS_MAX,
    maxQueue: PASSWORD_QUEUE_MAX,
    // No thread while nobody logs in (a thread costs several MB); one that idles 30 s goes.
    idleTimeout: 30_000,
  })

  hash(password: string, salt: Uint8Array): Promise<Result<string>> {
    return this.run<string>({ kind: 'hash', password, salt })
  }

  verify(storedHash: string, password: string): Promise<Result<boolean>> {
    return this.run<boolean>({ kind: 'verify', storedHash, password })
  }

  /** Tasks the pool runs now, late ones included. */
  private readonly running = new Set<Promise<unknown>>()

  /** Waits for every task to end, then ends the threads. Bounded: each task is one argon2 run of
   * fixed cost. piscina's own wait is not enough: its `close` counts a worker done once per
   * callback it registered, so after one task ends it may end threads whose hash still runs,
   * which aborts the process (seen in the test suite under load). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.running])
    await this.pool.close()
  }

  private async run<T>(task: PasswordTask): Promise<Result<T>> {
    if (this.pool.queueSize >= PASSWORD_QUEUE_MAX) {
      return fail('busy', 'too many password checks waiting')
    }
    const running = this.pool.run(task) as Promise<T>
    this.running.add(running)
    void running.then(
      () => this.running.delete(running),
      () => this.running.delete(running),
    )
    const answer = running.then(
      (value) => ok(value),
      (error: unknown) => fail<T>('internal', `password pool: ${String(error)}`),
    )
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<Result<T>>((resolve) => {
      const answerLate = (): void => resolve(fail('timeout', 'password check took too long'))
      timer = setTimeout(answerLate, this.taskTimeoutMs)
    })
    try {
      return await Promise.race([answer, late])
    } finally {
      clearTimeout(timer)
    }
  }
}
