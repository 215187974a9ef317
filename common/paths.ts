import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/**
 * The folder holding rostore's package.json: the repository in development, the installed
 * package's folder in node_modules. Compiled code lives in dist/ or lib/, so files that
 * ship beside the sources (the sample data, the native addon) are found from here.
 */
export function packageRoot(from: string = __dirname): string {
  let dir = from
  for (;;) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && isRostore(manifest)) return dir
    const up = dirname(dir)
    if (up === dir) throw new Error(`no rostore package.json above ${from}`)
    dir = up
  }
}

function isRostore(manifest: string): boolean {
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'rostore'
  } catch {
    return false
  }
}

/** The compiled CLI entry point, for tests and tools that spawn it. */
export function cliPath(): string {
  return join(__dirname, '..', 'bin', 'cli.js')
}
