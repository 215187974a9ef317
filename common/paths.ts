import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'

/**
 * The folder holding package.json. Compiled code lives in dist/ (or another outDir),
 * so files that ship beside the sources (samples, fixtures) are found from here.
 */
export function packageRoot(from: string = __dirname): string {
  let dir = from
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'tsconfig.json'))) return dir
    const up = dirname(dir)
    if (up === dir) throw new Error(`no package root above ${from}`)
    dir = up
  }
}

/** The compiled CLI entry point, for tests and tools that spawn it. */
export function cliPath(): string {
  return join(__dirname, '..', 'bin', 'cli.js')
}
