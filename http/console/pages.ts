/** @module The console's HTML: the sign-in page and the shell of every other page (header,
 * navigation, sign-out), written on the server with hono/html, which escapes every value. A page's
 * content is drawn by its own script (console/, built into dist/console/) from the admin and S3
 * APIs; the shell hands it what it needs in data attributes of <main> and the session's CSRF token
 * in a <meta>. No inline script or style: the Content Security Policy allows neither. */
import { html, raw } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { Role } from '../../protocol/identity.js'

export type Markup = HtmlEscapedString | Promise<HtmlEscapedString>

/** The policy of every console page: nothing but the node's own scripts, styles and
 * connections, no framing, forms only to the node. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

export const PAGES = ['buckets', 'objects', 'users', 'cluster', 'actors'] as const
export type PageName = (typeof PAGES)[number]

/** The navigation's links: objects belong to Buckets. */
const NAV: readonly { label: string; page: PageName }[] = [
  { label: 'Buckets', page: 'buckets' },
  { label: 'Users', page: 'users' },
  { label: 'Cluster', page: 'cluster' },
  { label: 'Actors', page: 'actors' },
]

const TITLES: Record<PageName, string> = {
  buckets: 'Buckets',
  objects: 'Objects',
  users: 'Users',
  cluster: 'Cluster',
  actors: 'Actors',
}

function scriptTag(name: string): Markup {
  return html`<script type="module" src="/console/assets/${name}.js"></script>`
}

function head(title: string, script: string | null, csrf: string | null): Markup {
  return html`<head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} · svc console</title>
    <link rel="stylesheet" href="/console/assets/console.css" />
    <link rel="icon" href="data:," />
    ${csrf === null ? '' : html`<meta name="csrf-token" content="${csrf}" />`}
    ${script === null ? '' : scriptTag(script)}
  </head>`
}

export interface LoginView {
  error: string | null
  username: string
}

export function loginPage(view: LoginView): Markup {
  return html`<!doctype html>
    <html lang="en">
      ${head('Sign in', null, null)}
      <body class="login">
        <main id="main">
          <h1>svc object store</h1>
          <form method="post" action="/console/login" class="card">
            ${view.error === null ? '' : html`<p class="error" role="alert">${view.error}</p>`}
            <label for="username">Username</label>
            <input
              id="username"
              name="username"
              autocomplete="username"
              required
              value="${view.username}"
              ${view.username === '' ? raw('autofocus') : ''}
            />
            <label for="password">Password</label>
            <input
              id="password"
              name="password"
              type="password"
              autocomplete="current-password"
              required
              ${view.username === '' ? '' : raw('autofocus')}
            />
            <button type="submit">Sign in</button>
          </form>
        </main>
      </body>
    </html>`
}

export interface ShellView {
  page: PageName
  username: string
  role: Role
  csrf: string
  /** More data attributes of <main> for the page's script (`data-<name>`). */
  data: Record<string, string>
}

export function shellPage(view: ShellView): Markup {
  const current = view.page === 'objects' ? 'buckets' : view.page
  const attributes = Object.entries({ page: view.page, role: view.role, ...view.data }).map(
    ([name, value]) => html` data-${raw(name)}="${value}"`,
  )
  return html`<!doctype html>
    <html lang="en">
      ${head(TITLES[view.page], view.page, view.csrf)}
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <span class="brand">svc</span>
          <nav aria-label="Main">
            ${NAV.map(
              (link) =>
                html`<a
                  href="/console/${link.page}"
                  ${link.page === current ? raw('aria-current="page"') : ''}
                  >${link.label}</a
                >`,
            )}
          </nav>
          <span class="who">${view.username} <span class="role">${view.role}</span></span>
          <form method="post" action="/console/logout">
            <input type="hidden" name="csrf" value="${view.csrf}" />
            <button type="submit" class="quiet">Sign out</button>
          </form>
        </header>
        <main id="main" tabindex="-1" ${attributes}>
          <h1>${TITLES[view.page]}</h1>
          <p class="loading">Loading…</p>
        </main>
      </body>
    </html>`
}
