import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

/** Every file below `dir`, by relative path. */
export function fileTree(dir: string): Map<string, Buffer> {
  const m = new Map<string, Buffer>()
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else m.set(relative(dir, p), readFileSync(p))
    }
  }
  walk(dir)
  return m
}

/** The same files with the same bytes under both directories (for byte-identical builds). */
export function expectSameTree(a: string, b: string): void {
  const x = fileTree(a)
  const y = fileTree(b)
  expect([...y.keys()]).toEqual([...x.keys()])
  for (const [name, bytes] of x) if (!y.get(name)!.equals(bytes)) throw new Error(`${name} differs between ${a} and ${b}`)
}
