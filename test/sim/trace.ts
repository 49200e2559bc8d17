/** @module What happened in a run, in order, for a replay to show: faults, starts and crashes, the
 * actors' warnings and errors, and each client operation with its answer. Kept only when asked
 * for (a replay), but always counted, so a run's fingerprint covers it. */

import type { Result } from '../../protocol/errors.js'

/** An answer as a trace line says it: ok, or its error code. */
export function answerOf(answer: Result<unknown>): string {
  return answer.ok ? 'ok' : answer.code
}

export interface TraceLine {
  atMs: number
  node: string
  text: string
}

export class Trace {
  readonly lines: TraceLine[] = []
  count = 0

  constructor(
    private readonly keep: boolean,
    private readonly startMs: number,
  ) {}

  add(atMs: number, node: string, text: string, fields?: Record<string, unknown>): void {
    this.count++
    if (!this.keep) return
    const detail = fields === undefined ? '' : ` ${safeJson(fields)}`
    this.lines.push({ atMs: atMs - this.startMs, node, text: text + detail })
  }

  format(): string {
    return this.lines
      .map((line) => `${line.atMs.toFixed(3).padStart(12)} ${line.node.padEnd(6)} ${line.text}`)
      .join('\n')
  }
}

function safeJson(fields: Record<string, unknown>): string {
  try {
    return JSON.stringify(fields, (_key, value: unknown) =>
      value instanceof Uint8Array ? `<${value.byteLength} bytes>` : value,
    )
  } catch {
    return '{…}'
  }
}
