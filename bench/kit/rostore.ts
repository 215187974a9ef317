/**
 * The rostore side of the comparisons: `rostore build` run as a child process exactly as
 * a user runs it, a one-node cluster for single-node benchmarks, and the built artifacts
 * (rostore stores, LMDB and SQLite files) that the lookup and serving benchmarks reuse.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../common/paths'
import type { InputFormat } from '../../formats/input/types'
import type { Compression } from '../../formats/store/layout/metadata'
import { openServingStore, type OpenOptions } from '../../formats/store/read/store-reader'
import type { SearchStrategy } from '../../formats/store/chunk/search'
import { datasetId, ensureDir, workRoot, type Dataset } from './data'
import type { Getter } from '../peers/getter'
import { log, runTimed, type TimedResult } from './system'

export const STORE = 'bench'

/** cluster.json of one node on loopback holding partition 0 (the build never connects to it). */
export function benchCluster(dir: string, port = 6999): string {
  ensureDir(dir)
  const path = join(dir, 'cluster.json')
  writeFileSync(path, `${JSON.stringify({ name: 'bench', nodes: [{ id: 0, host: '127.0.0.1', port, partitions: [0] }] }, null, 2)}\n`)
  return path
}

export interface RostoreBuildOptions {
  readonly workers?: number
  readonly chunks?: number
  readonly compression?: Compression
  readonly memoryMb?: number
  readonly version?: number
  /** Another cluster file (default: the one-node benchCluster). */
  readonly cluster?: string
  readonly replication?: number
  /** `--layout` (default: the CLI's). */
  readonly layout?: 'nodes' | 'partitions'
  /** Build from this file instead of the data set's TSV (the same records in another format). */
  readonly input?: { readonly path: string; readonly format: InputFormat }
}

/** `rostore build` of a data set into `output` (which must not exist), timed from here. */
export async function rostoreBuild(ds: Dataset, output: string, o: RostoreBuildOptions = {}): Promise<TimedResult> {
  const tmp = ensureDir(join(workRoot(), 'tmp'))
  const args = [
    cliPath(),
    'build',
    '--input',
    o.input?.path ?? ds.tsv,
    '--format',
    o.input?.format ?? 'tsv',
    '--cluster',
    o.cluster ?? benchCluster(tmp),
    '--store',
    STORE,
    '--output',
    output,
    '--version',
    String(o.version ?? 1),
    '--tmpdir',
    tmp,
    '--compression',
    o.compression ?? 'none',
  ]
  if (o.workers !== undefined) args.push('--workers', String(o.workers))
  if (o.chunks !== undefined) args.push('--chunks', String(o.chunks))
  if (o.memoryMb !== undefined) args.push('--memory-mb', String(o.memoryMb))
  if (o.replication !== undefined) args.push('--replication', String(o.replication))
  if (o.layout !== undefined) args.push('--layout', o.layout)
  return runTimed(process.execPath, args, { timeoutMs: 4 * 3_600_000 })
}

export async function openRostoreGetter(nodeDir: string, search: SearchStrategy, opts: OpenOptions = {}): Promise<Getter> {
  const reader = await openServingStore(nodeDir, { ...opts, search })
  return {
    get: (key: string) => reader.get(key),
    probes: () => reader.lastProbes,
    close: () => reader.close(),
  }
}

// ---------------------------------------------------------------------------------------
// artifacts reused across benchmarks

/**
 * 'rostore-served': the plain store in format 1 (`--layout nodes`), whose `node-0` a
 * serving benchmark links into a data directory as a version (a format-2 build output is
 * installed by a node, not linked).
 */
export type ArtifactKind = 'rostore-none' | 'rostore-snappy' | 'rostore-served' | 'lmdb' | 'sqlite'

export function artifactDir(ds: Dataset, kind: ArtifactKind): string {
  return join(workRoot(), 'stores', datasetId(ds.shape, ds.seed), kind)
}

/**
 * The directory a reader opens inside a rostore artifact: a format-1 build's `node-0`, or
 * a format-2 build's root (its manifest and partition files; openStore and a node's install
 * both take it).
 */
export function rostoreNodeDir(ds: Dataset, kind: 'rostore-none' | 'rostore-snappy'): string {
  const out = join(artifactDir(ds, kind), 'out')
  return existsSync(join(out, 'node-0')) ? join(out, 'node-0') : out
}

/**
 * Makes sure an artifact exists (built untimed, one chunk per node for rostore: "1M keys
 * per chunk" at 1M records). `runChild` loads the LMDB and SQLite ones in a child process.
 */
export async function ensureArtifact(
  ds: Dataset,
  kind: ArtifactKind,
  loadPeer: (engine: 'lmdb' | 'sqlite', outDir: string) => Promise<unknown>,
): Promise<string> {
  const dir = artifactDir(ds, kind)
  if (existsSync(join(dir, '.done'))) return dir
  log(`preparing ${kind} for ${ds.shape.name}`)
  rmSync(dir, { recursive: true, force: true })
  const tmp = `${dir}.tmp`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  if (kind === 'rostore-served') {
    await rostoreBuild(ds, join(tmp, 'out'), { chunks: 1, compression: 'none', layout: 'nodes' })
  } else if (kind === 'rostore-none' || kind === 'rostore-snappy') {
    await rostoreBuild(ds, join(tmp, 'out'), { chunks: 1, compression: kind === 'rostore-none' ? 'none' : 'snappy' })
  } else {
    await loadPeer(kind, tmp)
  }
  writeFileSync(join(tmp, '.done'), new Date().toISOString())
  renameSync(tmp, dir)
  return dir
}
