import { mulberry32 } from '../../common/prng'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodeValues, encodeKeys } from '../../formats/wire/multiget'
import { makeNodeDir } from '../stores/make-store'
import type { NodeProcess } from './node-process'

/**
 * Shared pieces of the reliability suite (test/reliability/**, docs/RELIABILITY.md):
 * a seeded random generator so a failing fault run can be replayed, a place to put the
 * figures of a run (never in the repository: os.tmpdir()), and versions whose every value
 * names its version, so a read from the wrong version or a mix of versions shows.
 */

/** Uniform in [0, 1) from mulberry32; the same seed gives the same picks. */
export function seededRandom(seed: number): () => number {
  const next = mulberry32(seed)
  return () => next() / 4294967296
}

/** The seed of a fault run: ROSTORE_FAULT_SEED when set (to replay or explore), else `fallback`. */
export function faultSeed(fallback: number): number {
  const env = process.env['ROSTORE_FAULT_SEED']
  const n = env === undefined ? NaN : Number(env)
  return Number.isSafeInteger(n) ? n : fallback
}

export function randomInt(rand: () => number, min: number, maxInclusive: number): number {
  return min + Math.floor(rand() * (maxInclusive - min + 1))
}

export function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)] as T
}

/** Where the figures of the last run go: `<os tmpdir>/rostore-reliability/<name>.json`. */
export const FIGURES_DIR = join(tmpdir(), 'rostore-reliability')

/** Writes a run's figures as JSON to FIGURES_DIR and prints them as one line. */
export function reportFigures(name: string, summary: string, figures: Record<string, unknown>): void {
  mkdirSync(FIGURES_DIR, { recursive: true })
  const file = join(FIGURES_DIR, `${name}.json`)
  writeFileSync(file, `${JSON.stringify({ name, summary, date: new Date().toISOString(), ...figures }, null, 2)}\n`)
  console.log(`${summary}\n(figures: ${file})`)
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** Polls `cond` until it holds or `timeoutMs` passed; returns its last answer. */
export async function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs = 5000, everyMs = 20): Promise<boolean> {
  const end = Date.now() + timeoutMs
  for (;;) {
    if (await cond()) return true
    if (Date.now() > end) return false
    await sleep(everyMs)
  }
}

// ---------------------------------------------------------------------------------------
// Versions whose values name their version.

export function keyName(i: number): string {
  return `key-${i}`
}

/** Versions from this number on are "big": 10 KB values, so that fetching one takes a while. */
export const BIG_VERSIONS = 100

/**
 * Value of key i in version v: `v<V>|key-<i>|` then padding: a few bytes, 5000 for every
 * 97th key (beyond the reader's 4 KiB read-ahead), 10,000 in big versions.
 */
export function versionValue(v: number, i: number): string {
  const pad = i % 97 === 0 ? 5000 : v >= BIG_VERSIONS ? 10_000 : i % 13
  return `v${v}|${keyName(i)}|${'p'.repeat(pad)}`
}

/** The version a value was written for, or undefined when it is no value of key i. */
export function versionOfValue(value: string, i: number): number | undefined {
  const m = /^v(\d+)\|/.exec(value)
  if (!m) return undefined
  const v = Number(m[1])
  return value === versionValue(v, i) ? v : undefined
}

export interface VersionSpec {
  readonly store: string
  readonly version: number
  readonly keys: number
  readonly nodeId?: number
  readonly chunks?: number
}

/** A complete single-node directory of one version (FORMAT.md), written without a build. */
export async function makeVersionDir(dir: string, spec: VersionSpec): Promise<string> {
  const recs: [string, string][] = []
  for (let i = 0; i < spec.keys; i++) recs.push([keyName(i), versionValue(spec.version, i)])
  await makeNodeDir(dir, recs, { store: spec.store, version: spec.version, nodeId: spec.nodeId ?? 0, chunks: spec.chunks ?? 3 })
  return dir
}

/**
 * Every key read in one multi-get: all present, all of one version, the version the
 * response names. Returns that version; throws with the reason otherwise.
 */
export async function readEveryKey(node: NodeProcess, store: string, keys: number): Promise<number> {
  const names = Array.from({ length: keys }, (_, i) => keyName(i))
  const r = await node.request(`/stores/${store}/multi-get`, { method: 'POST', body: encodeKeys(names), timeoutMs: 10_000 })
  if (r.status !== 200) throw new Error(`multi-get answered ${r.status}: ${r.body.toString().slice(0, 300)}`)
  const header = Number(r.headers['x-rostore-version'])
  const values = decodeValues(r.body, keys)
  values.forEach((v, i) => {
    if (v === undefined) throw new Error(`key ${keyName(i)} is absent from version ${header}`)
    const got = versionOfValue(v.toString(), i)
    if (got !== header) throw new Error(`key ${keyName(i)}: value of version ${got} in a response of version ${header}`)
  })
  return header
}

/** `.tmp-*` and `.trash-*` entries of a store directory. */
export function leftoversOf(storeDir: string): string[] {
  try {
    return readdirSync(storeDir).filter((n) => n.startsWith('.tmp-') || n.startsWith('.trash-'))
  } catch {
    return []
  }
}

/** Version numbers of the complete-looking `version-<V>` directories of a store directory. */
export function versionDirsOf(storeDir: string): number[] {
  try {
    return readdirSync(storeDir)
      .map((n) => /^version-(\d+)$/.exec(n)?.[1])
      .filter((v): v is string => v !== undefined)
      .map(Number)
      .sort((a, b) => a - b)
  } catch {
    return []
  }
}
