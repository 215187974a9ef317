import { readFile } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { packageRoot } from '../../common/paths'

/** The console's files, shipped as they are in the package's `ui/` folder (no build step). */
export const CONSOLE_ASSETS = {
  page: { file: 'index.html', type: 'text/html; charset=utf-8' },
  script: { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  style: { file: 'console.css', type: 'text/css; charset=utf-8' },
} as const

export type ConsoleAsset = keyof typeof CONSOLE_ASSETS

/**
 * The page loads its own script and style and talks to its own node only; nothing inline
 * runs, nothing can frame it, no form posts anywhere. `data:` images: its empty icon, so the
 * browser does not ask the node for a /favicon.ico it does not have.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const cache = new Map<ConsoleAsset, Promise<Buffer>>()

/** The `ui/` folder beside dist/ or lib/ (the repository, or the installed package). */
export function consoleDir(): string {
  return join(packageRoot(), 'ui')
}

function load(asset: ConsoleAsset): Promise<Buffer> {
  let body = cache.get(asset)
  if (!body) {
    body = readFile(join(consoleDir(), CONSOLE_ASSETS[asset].file)).catch((err: unknown) => {
      cache.delete(asset)
      // The public message names no path; the cause keeps it for the log.
      throw new StoreError('RO_INTERNAL', 'the console files are missing from this installation', { cause: err })
    })
    cache.set(asset, body)
  }
  return body
}

export async function sendAsset(asset: ConsoleAsset, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await load(asset)
  res.writeHead(200, {
    'Content-Type': CONSOLE_ASSETS[asset].type,
    'Content-Length': body.length,
    // Revalidated each time: a node upgraded in place serves its new page at once.
    'Cache-Control': 'no-cache',
    'Content-Security-Policy': CONSOLE_CSP,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
  })
  res.end(req.method === 'HEAD' ? undefined : body)
}
