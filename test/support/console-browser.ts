/** @module A real browser on the web console: headless Chromium (Debian's `chromium`, installed by
 * .ci/test-deps) driven by playwright-core through `executablePath`, one browser per suite, a
 * fresh context (cookies) per user. Every request the browser makes to another origin than the
 * node's is recorded and aborted, so a suite can check that the console fetches nothing from
 * elsewhere. CI requires Chromium; elsewhere, without it, a suite says so and does not run. */
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import * as assert from 'uvu/assert'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { skipCase } from './skip.js'

/** Bounds every wait of a browser step: far above what a step takes on a loaded machine. */
export const BROWSER_TIMEOUT_MS = 30_000

/** Debian's chromium on PATH (.ci/test-deps installs it as /usr/bin/chromium). */
export function findChromium(): string | undefined {
  const folders = (process.env['PATH'] ?? '').split(delimiter).filter((folder) => folder !== '')
  const candidates = [...folders.map((folder) => join(folder, 'chromium')), '/usr/bin/chromium']
  return candidates.find((candidate) => existsSync(candidate))
}

/** Says that the running case cannot run here, which CI must never say (it installs Chromium). */
export function skipWithoutChromium(): void {
  assert.is(process.env['CI'], undefined, 'CI installs chromium (.ci/test-deps)')
  skipCase('chromium is not installed here (bash .ci/test-deps installs it)')
}

export async function launchBrowser(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    // Root in a container: Chromium's sandbox needs user namespaces that are not there.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
    timeout: BROWSER_TIMEOUT_MS,
  })
}

/** Playwright stops the Chromium it launched (by its process id); bounded, like every wait. */
export async function closeBrowser(browser: Browser): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const limit = new Promise((resolve) => (timer = setTimeout(resolve, BROWSER_TIMEOUT_MS)))
  await Promise.race([browser.close(), limit])
  clearTimeout(timer)
}

export interface ConsoleUser {
  context: BrowserContext
  page: Page
  /** URLs of requests the browser tried to send anywhere but the node (each was aborted). */
  offsite: string[]
  /** Errors the pages' scripts threw. */
  pageErrors: string[]
}

/** A browser context of its own (its own cookies) on `origin`, not yet signed in. */
export async function newConsoleUser(
  browser: Browser,
  origin: string,
  viewport = { width: 1280, height: 800 },
): Promise<ConsoleUser> {
  const context = await browser.newContext({ viewport, acceptDownloads: true })
  context.setDefaultTimeout(BROWSER_TIMEOUT_MS)
  const offsite: string[] = []
  await context.route('**/*', async (route) => {
    const url = route.request().url()
    if (url.startsWith(origin + '/') || url.startsWith('data:') || url.startsWith('blob:')) {
      return route.continue()
    }
    offsite.push(url)
    return route.abort()
  })
  const page = await context.newPage()
  const pageErrors: string[] = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  return { context, page, offsite, pageErrors }
}

/** Signs in through the form, as a person would. Resolves once the form was answered. */
export async function signIn(
  user: ConsoleUser,
  origin: string,
  username: string,
  password: string,
): Promise<void> {
  const { page } = user
  await page.goto(`${origin}/console/`)
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(password)
  await Promise.all([
    page.waitForLoadState('domcontentloaded'),
    page.getByRole('button', { name: 'Sign in' }).click(),
  ])
}

/** Signs in and waits for the Buckets page, as a user whose password is right. */
export async function signedIn(
  browser: Browser,
  origin: string,
  username: string,
  password: string,
): Promise<ConsoleUser> {
  const user = await newConsoleUser(browser, origin)
  await signIn(user, origin, username, password)
  await user.page.waitForURL(`${origin}/console/buckets`)
  return user
}
