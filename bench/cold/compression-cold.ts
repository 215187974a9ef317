/**
 * The cold rows of 2c: in-process gets (one thread, synchronous `get`, uniform keys) on the
 * uncompressed and the zstd + dictionary build of the realistic values, each in a child
 * process (compression-cold-child.ts) inside a memory cgroup whose page cache is a third
 * of the uncompressed store, its files evicted first. Right after the eviction, and in the
 * steady state after the cache was filled as far as the cgroup lets it.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { evictTree } from '../../testkit/stores/page-cache'
import type { BenchContext } from '../kit/report'
import { fmt, fmtRatio, mdTable } from '../kit/stats'
import { log, runTimed } from '../kit/system'
import type { CompressionExtra, KeptStore } from '../lookup/compression-bench'
import type { ColdJob, ColdPhase, ColdResult } from './compression-cold-child'

const ROOT = '/sys/fs/cgroup'
/** V8's young generation grows to 3 × 16 MiB under the gets' garbage by default: inside the cap, that growth would take the page cache's share. */
const SEMI_SPACE_MB = 1

const hasMemory = (file: string): boolean => existsSync(file) && readFileSync(file, 'utf8').split(/\s+/).includes('memory')

/** A fresh cgroup for one child (the v1 memory controller, else v2), or why none can be made here. */
function makeCgroup(name: string): { readonly dir: string; readonly v2: boolean } | { readonly why: string } {
  const v1 = existsSync(join(ROOT, 'memory', 'memory.limit_in_bytes'))
  if (!v1 && !(hasMemory(join(ROOT, 'cgroup.controllers')) && hasMemory(join(ROOT, 'cgroup.subtree_control'))))
    return { why: 'no cgroup memory controller (v1 at /sys/fs/cgroup/memory, or v2 with memory in /sys/fs/cgroup/cgroup.subtree_control)' }
  const dir = v1 ? join(ROOT, 'memory', name) : join(ROOT, name)
  try {
    if (existsSync(dir)) rmdirSync(dir)
    mkdirSync(dir)
    return { dir, v2: !v1 }
  } catch (err) {
    return { why: `cannot make ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }
  }
}

function removeCgroup(dir: string, v2: boolean): void {
  try {
    // Uncharges the page cache left behind, so the directory can go (v2 moves it to the parent).
    if (!v2) writeFileSync(join(dir, 'memory.force_empty'), '0')
    rmdirSync(dir)
  } catch {
    // left for the next run's makeCgroup
  }
}

async function runChild(ctx: BenchContext, s: KeptStore, cacheBytes: number): Promise<ColdResult | string> {
  const cgroup = makeCgroup(`rostore-bench-compression-cold-${s.id}`)
  if ('why' in cgroup) return cgroup.why
  try {
    evictTree(s.dir)
    const job: ColdJob = {
      dir: s.dir,
      records: s.records,
      count: ctx.quick ? 20_000 : 60_000,
      seconds: ctx.quick ? 10 : 20,
      seed: ctx.seed,
      cgroup: cgroup.dir,
      v2: cgroup.v2,
      cacheBytes,
    }
    // The shell joins the cgroup and then becomes node: everything node reads is charged there.
    const child = join(__dirname, 'compression-cold-child.js')
    const script = `echo $$ > ${join(cgroup.dir, 'cgroup.procs')} && exec "$0" "$@"`
    const t = await runTimed(
      'sh',
      ['-c', script, process.execPath, '--expose-gc', `--max-semi-space-size=${SEMI_SPACE_MB}`, child, JSON.stringify(job)],
      { timeoutMs: 600_000 },
    )
    return JSON.parse(t.stdout.trim().split('\n').pop() as string) as ColdResult
  } finally {
    removeCgroup(cgroup.dir, cgroup.v2)
  }
}

const pct = (x: number | undefined): string => (x === undefined ? '–' : `${(100 * x).toFixed(1)}%`)
const mib = (x: number): string => fmt(x / 2 ** 20)

export const compressionColdRows: CompressionExtra = async (ctx, stores) => {
  const cacheBytes = Math.round(stores.none.bytes / 3)
  const results: [KeptStore, ColdResult][] = []
  for (const s of [stores.none, stores.zstdDict]) {
    const r = await runChild(ctx, s, cacheBytes)
    if (typeof r === 'string') {
      log(`compression cold rows not run: ${r}`)
      return { markdown: `Cold rows not run: ${r}.`, goals: [] }
    }
    results.push([s, r])
  }
  const line = (s: KeptStore, when: string, p: ColdPhase): string[] => [
    `${s.label}, ${when}`,
    mib(s.bytes),
    fmt(p.gets, 0),
    fmt(p.secs),
    Math.round(p.perSec).toLocaleString('en-US'),
    pct(p.hitRatio),
    fmt(p.bytesPerGet, 0),
    mib(p.cacheBytes),
  ]
  const rows = results.flatMap(([s, r]) => [line(s, 'after eviction', r.cold), line(s, 'cache filled', r.warm)])
  const [none, zd] = results.map(([, r]) => r) as [ColdResult, ColdResult]
  return {
    markdown: [
      '#### Cold gets, store 3× the page cache (realistic values)',
      '',
      mdTable(
        ['store / phase', 'store MiB', 'gets', 's', 'gets/s', 'reader hit ratio', 'device B per get', 'cgroup cache MiB at end'],
        rows,
      ),
      '',
      `One thread, synchronous \`get\`, uniformly drawn present keys (at most ${fmt(ctx.quick ? 20_000 : 60_000, 0)} gets or ${ctx.quick ? 10 : 20} s per phase), in a child process in a memory cgroup capped at the process's own memory once the store is open (${mib(none.ownBytes)} / ${mib(zd.ownBytes)} MiB) plus ${mib(cacheBytes)} MiB of page cache, a third of the uncompressed store (node with \`--max-semi-space-size=${SEMI_SPACE_MB}\`, so its young generation does not grow into that share); the store's files evicted before each child. "Cache filled": after one sequential read of the data files, other keys. Hit ratio: the reader's residency map (1 − cold reads ÷ lookups). zstd + dictionary ÷ uncompressed, gets/s: ${fmtRatio(zd.cold.perSec, none.cold.perSec)} after eviction, ${fmtRatio(zd.warm.perSec, none.warm.perSec)} with the cache filled.`,
    ].join('\n'),
    goals: [],
  }
}
