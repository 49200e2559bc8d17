/** @module The Range header of GET, as Amazon S3 reads it: one range of `bytes=a-b`, `bytes=a-` or
 * `bytes=-n`. A syntactically invalid or multi-range header is ignored (the whole object is sent);
 * a range that starts past the end is unsatisfiable (416 InvalidRange). */

export type RangeOutcome =
  { kind: 'whole' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' }

export function resolveRange(header: string | undefined, size: number): RangeOutcome {
  if (header === undefined) return { kind: 'whole' }
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return { kind: 'whole' }
  const [, first = '', last = ''] = match
  if (first === '' && last === '') return { kind: 'whole' }
  if (first === '') {
    const suffix = Number(last)
    if (suffix === 0) return { kind: 'unsatisfiable' }
    if (size === 0) return { kind: 'unsatisfiable' }
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1)
  if (last !== '' && Number(last) < start) return { kind: 'whole' }
  if (start >= size) return { kind: 'unsatisfiable' }
  return { kind: 'partial', start, end }
}
