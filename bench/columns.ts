/** @module How the closing tables print: columns padded to their widest cell, and the numbers and
 * ratios in them. */

/** A table under its title: the first column left-aligned, the others right-aligned. */
export function printColumns(
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
  console.log(`\n${title}`)
  console.log(format(header))
  for (const line of lines) console.log(format(line))
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
