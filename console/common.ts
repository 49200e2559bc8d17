/** @module What every console page's script shares: the page's data (from the server's shell),
 * calls to the node's APIs with the session (the cookie rides along; a change carries the CSRF
 * token), S3 XML answers read into plain values, a small DOM builder and the page's notices. The
 * pages speak to no other host. */

export interface PageData {
  page: string
  role: 'Reader' | 'Writer' | 'SuperUser'
  mode: string
  chaos: boolean
  /** The objects page's bucket. */
  bucket: string
}

export function pageData(): PageData {
  const data = mainElement().dataset
  return {
    page: data['page'] ?? '',
    role: (data['role'] ?? 'Reader') as PageData['role'],
    mode: data['mode'] ?? 'single',
    chaos: data['chaos'] === '1',
    bucket: data['bucket'] ?? '',
  }
}

export function mainElement(): HTMLElement {
  const main = document.getElementById('main')
  if (main === null) throw new Error('the page has no <main id="main">')
  return main
}

export function csrfToken(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')?.content ?? ''
}

/** An API's refusal: its HTTP status, its code, and the message to show. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/** A session that ended (signed out elsewhere, expired, user deactivated) goes to sign-in. */
function signedOut(status: number): void {
  if (status === 401) window.location.assign('/console/login')
}

/** A JSON API of the node (`/console/api/...`): the parsed answer, or an ApiError. */
export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<T> {
  const method = init.method ?? 'GET'
  const headers: Record<string, string> = { accept: 'application/json' }
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken()
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  })
  const text = await response.text()
  const parsed: unknown = text === '' ? null : safeJson(text)
  if (!response.ok) {
    signedOut(response.status)
    const { error, code } = (parsed ?? {}) as { error?: string; code?: string }
    throw new ApiError(
      response.status,
      code ?? String(response.status),
      error ?? response.statusText,
    )
  }
  return parsed as T
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** `/console/s3/bucket/key` with each path segment encoded. */
export function s3Path(bucket: string, key = ''): string {
  const encodedKey = key.split('/').map(encodeURIComponent).join('/')
  return `/console/s3/${encodeURIComponent(bucket)}${key === '' ? '/' : '/' + encodedKey}`
}

export interface S3Call {
  method?: string
  query?: Record<string, string>
  headers?: Record<string, string>
  body?: BodyInit
}

/** An S3 request as the signed-in user; an error answer becomes an ApiError with S3's code. */
export async function s3(path: string, call: S3Call = {}): Promise<Response> {
  const method = call.method ?? 'GET'
  const query = new URLSearchParams(call.query ?? {}).toString()
  const headers: Record<string, string> = { ...(call.headers ?? {}) }
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrfToken()
  const response = await fetch(query === '' ? path : `${path}?${query}`, {
    method,
    headers,
    credentials: 'same-origin',
    ...(call.body === undefined ? {} : { body: call.body }),
  })
  if (!response.ok) {
    signedOut(response.status)
    const text = method === 'HEAD' ? '' : await response.text()
    throw s3Error(response.status, text)
  }
  return response
}

/** S3's <Error><Code/><Message/></Error>, or the console's JSON refusal. */
export function s3Error(status: number, text: string): ApiError {
  const json = safeJson(text) as { error?: string; code?: string } | null
  if (json !== null && typeof json === 'object' && json.code !== undefined) {
    return new ApiError(status, json.code, json.error ?? json.code)
  }
  const doc = text === '' ? null : parseXml(text)
  const code = doc === null ? String(status) : textOf(doc.documentElement, 'Code') || String(status)
  const message = doc === null ? '' : textOf(doc.documentElement, 'Message')
  return new ApiError(status, code, message === '' ? `${code} (HTTP ${status})` : message)
}

export function parseXml(text: string): Document {
  return new DOMParser().parseFromString(text, 'application/xml')
}

/** The text of the first direct child element named `name`, or ''. */
export function textOf(parent: Element, name: string): string {
  for (const child of Array.from(parent.children)) {
    if (child.localName === name) return child.textContent ?? ''
  }
  return ''
}

/** Every direct child element named `name`. */
export function childrenNamed(parent: Element, name: string): Element[] {
  return Array.from(parent.children).filter((child) => child.localName === name)
}

type Child = Node | string | number | null | undefined | false
type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>

/** An element with attributes (`on<event>` ones are listeners; false and null are left out) and
 * children (strings become text, never markup). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue
    if (typeof value === 'function') element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
  return element
}

/** A table in its scrolling frame: an optional caption, column headings (those named in
 * `numeric` aligned as numbers) and the rows. */
export function dataTable(
  caption: string | null,
  headings: readonly string[],
  rows: Child[],
  numeric: readonly string[] = [],
): HTMLElement {
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      {},
      caption === null ? null : el('caption', { class: 'muted' }, caption),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          headings.map((text) =>
            el('th', { scope: 'col', class: numeric.includes(text) ? 'num' : null }, text),
          ),
        ),
      ),
      el('tbody', {}, rows),
    ),
  )
}

/** Replaces the page's content below its heading. */
export function render(...content: (Child | Child[])[]): void {
  const main = mainElement()
  const heading = main.querySelector('h1')
  main.replaceChildren(...(heading === null ? [] : [heading]))
  for (const child of content.flat()) {
    if (child === null || child === undefined || child === false) continue
    main.append(child instanceof Node ? child : String(child))
  }
}

/** The page's notice area (announced to screen readers): one message at a time. */
export function notify(message: string, kind: 'ok' | 'error' = 'ok'): void {
  let area = document.getElementById('notice')
  if (area === null) {
    area = el('p', { id: 'notice', role: 'status', 'aria-live': 'polite' })
    mainElement().querySelector('h1')?.after(area)
  }
  area.className = `notice ${kind}`
  area.textContent = message
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** Runs an action of a control, showing its failure as the page's notice. */
export async function attempt(action: () => Promise<void>): Promise<void> {
  try {
    await action()
  } catch (error) {
    notify(errorText(error), 'error')
  }
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']

export function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit += 1
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${UNITS[unit]}`
}

export function formatTime(iso: string | number): string {
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString()
}

export function canWrite(data: PageData): boolean {
  return data.role !== 'Reader'
}
