import { existsSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { launch, type Browser, type Page } from 'puppeteer-core'

/** Debian's Chromium (tools/ensure-peers.js installs it); ROSTORE_CHROMIUM points elsewhere. */
export const CHROMIUM_BIN = process.env['ROSTORE_CHROMIUM'] ?? '/usr/bin/chromium'

/** Where browser tests save their screenshots (kept after the run, for people to look at). */
export const SCREENSHOT_DIR = process.env['ROSTORE_SCREENSHOTS'] ?? join(tmpdir(), 'rostore-console-screenshots')

/**
 * A real headless Chromium driven by puppeteer-core. A missing browser fails the test with
 * the command that installs it: a browser test that skips silently tests nothing.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_BIN)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_BIN}: run "apt-get install -y chromium" (npm test's pretest does)`)
  }
  return launch({
    executablePath: CHROMIUM_BIN,
    headless: true,
    // Root in a container: no user namespaces for the sandbox; /dev/shm may be tiny.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--disable-extensions'],
  })
}

/** Every URL a page asks for, in order (the page's own navigation included). */
export function recordRequests(page: Page): string[] {
  const urls: string[] = []
  page.on('request', (r) => void urls.push(r.url()))
  return urls
}

/** Saves a full-page PNG as `<SCREENSHOT_DIR>/<name>.png`; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  const path = join(SCREENSHOT_DIR, `${name}.png`)
  await page.screenshot({ path: path as `${string}.png`, fullPage: true })
  return path
}
