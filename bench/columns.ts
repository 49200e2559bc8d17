/** @module How the closing tables print: columns padded to their widest cell, and the numbers and
 * ratios in them. */

/** Where the closing report goes, a line (or a few) at a time. */
export type Print = (text: string) => void

/** A table under its title: the first column left-aligned, the others right-aligned. */
export function printColumns(
  print: Print,
  title: string,
  header: readonly string[],
  lines: readonly (readonly string[])[],
): void {
  const widths = header.map((cell, i) =>
    Math.max(cell.length, ...lines.map((line) => line[i]?.length ?? 0)),
  )
  const format = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd()
  print(`\n${title}`)
  print(format(header))
  for (const line of lines) print(format(line))
}

export function number(value: number | null): string {
  if (value === null) return '-'
  if (Number.isInteger(value)) return value.toString() // Counts.
  if (Math.abs(value) >= 100) return Math.round(value).toString()
  return value.toFixed(Math.abs(value) >= 10 ? 1 : 2)
}

export function ratio(value: number | null, reference: number | null): string {
  if (value === null || reference === null || reference === 0) return '-'
  return `${(value / reference).toFixed(2)}x`
}

/** A goal's verdict: met, not met, or not measured. */
export function verdictText(met: boolean | null): string {
  if (met === null) return 'n/a'
  return met ? 'met' : 'NOT MET'
}
