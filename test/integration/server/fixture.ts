import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { makeNodeDir } from '../../../testkit/stores/make-store'

/** Shared data of the server integration tests: versions whose values name their version. */
export const STORE = 'users'
export const KEY_COUNT = 400

export function keyOf(i: number): string {
  return `key-${i}`
}

/** Value of key i in version v; some values exceed one 4 KiB read-ahead. */
export function valueOf(v: number, i: number): string {
  const pad = i % 50 === 0 ? 'p'.repeat(6000) : 'p'.repeat(i % 13)
  return `v${v}|${keyOf(i)}|${pad}`
}

/** The version a value belongs to, or undefined if it is no value of ours. */
export function versionOfValue(value: string, i: number): number | undefined {
  const m = /^v(\d+)\|/.exec(value)
  if (!m) return undefined
  const v = Number(m[1])
  return value === valueOf(v, i) ? v : undefined
}

/** Node directories `<root>/src/<store>-v<V>` for each version (made once). */
export async function makeVersions(root: string, versions: readonly number[], store = STORE): Promise<Record<number, string>> {
  const out: Record<number, string> = {}
  for (const v of versions) {
    const dir = join(root, 'src', `${store}-v${v}`)
    if (!existsSync(dir)) {
      const recs: [string, string][] = []
      for (let i = 0; i < KEY_COUNT; i++) recs.push([keyOf(i), valueOf(v, i)])
      await makeNodeDir(dir, recs, { store, version: v, nodeId: 0, chunks: 3 })
    }
    out[v] = dir
  }
  return out
}

/** Entries of a store directory, sorted. */
export function storeEntries(dataDir: string, store = STORE): string[] {
  return readdirSync(join(dataDir, store)).sort()
}

/** Leftovers recovery must have removed. */
export function leftovers(dataDir: string, store = STORE): string[] {
  return storeEntries(dataDir, store).filter((n) => n.startsWith('.tmp-') || n.startsWith('.trash-'))
}
