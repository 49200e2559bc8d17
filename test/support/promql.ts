/** @module Reading PromQL as deploy/ writes it (alert rules, dashboard queries) closely enough to
 * list the metric names an expression selects. Not a parser: strings, label matchers, ranges and
 * grouping clauses are cut out, and what remains that is not a function, keyword or number is a
 * metric name. */

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
])

export function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
  const names = new Set<string>()
  for (const match of bare.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const [, name = '', call] = match
    const before = bare[match.index - 1] ?? ''
    if (call !== undefined || /[0-9.$]/.test(before) || KEYWORDS.has(name.toLowerCase())) continue
    names.add(name)
  }
  return [...names]
}

/** The expressions of a Prometheus rules file: `expr: <one line>` or `expr: |` and the lines
 * indented under it, the two forms deploy/prometheus/alerts.yml uses. */
export function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n')
  const found: string[] = []
  lines.forEach((line, at) => {
    const match = /^(\s*)expr:\s*(.*)$/.exec(line)
    if (match === null) return
    const [, indent = '', rest = ''] = match
    if (rest !== '|') {
      found.push(rest)
      return
    }
    const block: string[] = []
    for (const next of lines.slice(at + 1)) {
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent.length) break
      block.push(next.trim())
    }
    found.push(block.join(' ').trim())
  })
  return found
}
