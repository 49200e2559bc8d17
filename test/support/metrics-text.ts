/** @module Reading values out of a Prometheus text exposition, as a scrape returns it. */

/** The value of the series `name{labels}` (labels written exactly as the exposition orders them;
 * none for a series without labels), or undefined when the scrape has no such series. */
export function sample(text: string, name: string, labels = ''): number | undefined {
  const start = labels === '' ? `${name} ` : `${name}{${labels}}`
  const line = text.split('\n').find((l) => l.startsWith(start))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

/** Every series line of one metric: its name, then its labels if any, then the value. */
export function seriesLines(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
}
