/** @module The node's password pool: a piscina pool on the main thread that runs argon2id for iam
 * (runtime/password-task.ts). Actors reach it through the supervisor; an actor killed while its
 * hash runs only loses the answer. Bounded: PASSWORD_THREADS_MAX threads, at most
 * PASSWORD_QUEUE_MAX tasks waiting (one more answers `busy`), each task aborted after
 * PASSWORD_TASK_TIMEOUT_MS (`timeout`). */
import { Piscina } from 'piscina'
import { fail, ok, type Result } from '../protocol/errors.js'
import { PASSWORD_QUEUE_MAX, PASSWORD_TASK_TIMEOUT_MS, PASSWORD_THREADS_MAX } from './knobs.js'
import type { PasswordTask } from './password-task.js'

export class PasswordPool {
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

  /** Waits (bounded) for running tasks, then ends the threads. */
  async close(): Promise<void> {
    await this.pool.close()
  }

  private async run<T>(task: PasswordTask): Promise<Result<T>> {
    if (this.pool.queueSize >= PASSWORD_QUEUE_MAX) {
      return fail('busy', 'too many password checks waiting')
    }
    try {
      const signal = AbortSignal.timeout(PASSWORD_TASK_TIMEOUT_MS)
      return ok((await this.pool.run(task, { signal })) as T)
    } catch (error) {
      const name = error instanceof Error ? error.name : ''
      if (name === 'AbortError') return fail('timeout', 'password check took too long')
      return fail('internal', `password pool: ${String(error)}`)
    }
  }
}
