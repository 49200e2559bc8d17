/** @module The console's static files, all from the node itself: the pages' scripts, compiled
 * from console/ into dist/console/ by the build, and the style sheet, console/console.css. Read
 * once and kept (they change only with the build), served with an ETag so a browser revalidates
 * rather than downloads again. */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

export interface Asset {
  body: Buffer
  contentType: string
  etag: string
}

/** dist/http/console/ -> dist/console/ (scripts) and the checkout's console/ (the style sheet). */
const SCRIPTS = fileURLToPath(new URL('../../console/', import.meta.url))
const STYLES = fileURLToPath(new URL('../../../console/', import.meta.url))
const NAME = /^[a-z][a-z0-9-]*\.(js|css)$/

const loaded = new Map<string, Promise<Asset | null>>()

async function load(name: string): Promise<Asset | null> {
  const isScript = name.endsWith('.js')
  try {
    const body = await readFile((isScript ? SCRIPTS : STYLES) + name)
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
    const contentType = isScript ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8'
    return { body, contentType, etag }
  } catch {
    return null
  }
}

/** A console asset by its file name, or null for any other name. */
export function asset(name: string): Promise<Asset | null> {
  if (!NAME.test(name)) return Promise.resolve(null)
  let found = loaded.get(name)
  if (found === undefined) {
    found = load(name)
    // A missing file is looked for again (a build may bring it); a found one is kept.
    void found.then((value) => {
      if (value === null) loaded.delete(name)
    })
    loaded.set(name, found)
  }
  return found
}
