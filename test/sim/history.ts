/** @module The history of a run, and the check that every read in it was right. Each client
 * operation is recorded with when it began and ended (virtual time) and its outcome; a write's
 * value is a number unique in the run (its bytes say it, so a read names what it got), a delete's
 * value is null, and a read records the value it got (null: no such key).
 *
 * A read is right when its value was produced by a write that began before the read ended, and
 * no write acknowledged before the read began began after that write was acknowledged: then the
 * value was overwritten for sure before the read, and returning it loses an acknowledged write.
 * A write that failed or never answered may or may not have taken effect, at any time after it
 * began. A listing is a read of every key of its bucket at once (a key it omits reads null). */

export type OpKind = 'put' | 'delete' | 'get' | 'list' | 'multipart'

export interface Op {
  id: number
  client: number
  node: string
  kind: OpKind
  bucket: string
  key: string
  /** put/multipart: the value written; delete: null; get: the value read (null: none). */
  value?: number | null
  /** list: the value of each key listed. */
  listed?: Record<string, number>
  beganMs: number
  endedMs: number | null
  outcome: 'ok' | 'failed' | 'pending'
  code?: string
}

export function isWrite(op: Op): boolean {
  return op.kind === 'put' || op.kind === 'delete' || op.kind === 'multipart'
}

/** What a read of one key got, and when. */
interface Observation {
  op: Op
  key: string
  value: number | null
}

/** Every read (and listing) whose value breaks the rule above, described. */
export function checkReads(history: readonly Op[], keysOf: (bucket: string) => string[]): string[] {
  const writes = new Map<string, Op[]>()
  for (const op of history) {
    if (!isWrite(op)) continue
    const id = `${op.bucket}/${op.key}`
    const list = writes.get(id) ?? []
    list.push(op)
    writes.set(id, list)
  }
  const problems: string[] = []
  for (const op of history) {
    if (op.outcome !== 'ok') continue
    for (const seen of observations(op, keysOf)) {
      const problem = judge(seen, writes.get(`${op.bucket}/${seen.key}`) ?? [])
      if (problem !== null) problems.push(problem)
    }
  }
  return problems
}

function observations(op: Op, keysOf: (bucket: string) => string[]): Observation[] {
  if (op.kind === 'get') return [{ op, key: op.key, value: op.value ?? null }]
  if (op.kind !== 'list') return []
  const listed = op.listed ?? {}
  return keysOf(op.bucket).map((key) => ({ op, key, value: listed[key] ?? null }))
}

function judge(seen: Observation, writes: readonly Op[]): string | null {
  const read = seen.op
  const readEnd = read.endedMs ?? Infinity
  const acknowledgedBefore = writes.filter(
    (write) => write.outcome === 'ok' && (write.endedMs ?? Infinity) < read.beganMs,
  )
  // The start of the run writes null to every key, acknowledged before anything began.
  const sources: { beganMs: number; endedMs: number }[] = []
  if (seen.value === null) sources.push({ beganMs: -Infinity, endedMs: -Infinity })
  for (const write of writes) {
    if ((write.value ?? null) !== seen.value || write.beganMs >= readEnd) continue
    const endedMs = write.outcome === 'ok' ? (write.endedMs ?? Infinity) : Infinity
    sources.push({ beganMs: write.beganMs, endedMs })
  }
  const what = `${read.kind} #${read.id} of ${read.bucket}/${seen.key} through ${read.node}`
  if (sources.length === 0) {
    return `${what} got value ${String(seen.value)}, which no write before it produced`
  }
  const fresh = sources.some(
    (source) => !acknowledgedBefore.some((write) => write.beganMs > source.endedMs),
  )
  if (fresh) return null
  const newer = acknowledgedBefore
    .filter((write) => sources.every((source) => write.beganMs > source.endedMs))
    .map((write) => `#${write.id} (${String(write.value ?? null)})`)
    .join(', ')
  return `${what} got ${String(seen.value)}, older than writes acknowledged before it: ${newer}`
}

/** The history as text, one operation a line: what `--seed` prints and what two runs of one seed
 * compare. */
export function formatHistory(history: readonly Op[]): string {
  return history
    .map((op) => {
      const at = `${op.beganMs.toFixed(3)}-${op.endedMs === null ? '?' : op.endedMs.toFixed(3)}`
      const value =
        op.kind === 'list'
          ? JSON.stringify(op.listed ?? {})
          : op.value === undefined
            ? ''
            : String(op.value)
      const outcome = op.outcome === 'ok' ? 'ok' : `${op.outcome}${op.code ? `:${op.code}` : ''}`
      const what = `${op.kind} ${op.bucket}/${op.key}`
      return `#${op.id} c${op.client} ${op.node} ${what} ${value} ${at} ${outcome}`
    })
    .join('\n')
}
