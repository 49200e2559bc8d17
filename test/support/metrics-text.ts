/** @module Reading one value out of a Prometheus text exposition, as a scrape returns it. */

/** The value of the series `name{labels}` (labels written exactly as the exposition orders them),
 * or undefined when the scrape has no such series. */
export function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}
