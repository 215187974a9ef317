/**
 * Child of the 2c cold rows (compression-cold.ts): started inside its own memory cgroup
 * (v1 or v2; the shell that execs it joined the cgroup first, so every page it reads is charged
 * there), with the store's pages evicted. It opens the store, caps the cgroup at its own
 * memory plus the page cache the job allows, and runs the one-thread synchronous get loop
 * twice: right after the eviction, and after one sequential read of the data files filled
 * the page cache as far as the cap lets (the steady state of uniform reads).
 *
 *   node --expose-gc dist/bench/cold/compression-cold-child.js '<json ColdJob>'
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openStore } from '../../formats/store/read/store-reader'
import type { StoreReader } from '../../formats/store/read/store-reader-api'
import { keyOf, uniformIds } from '../kit/data'

export interface ColdJob {
  readonly dir: string
  readonly records: number
  readonly count: number
  readonly seconds: number
  readonly seed: number
  /** The cgroup directory this process runs in, and whether it is cgroup v2's (else v1's memory controller). */
  readonly cgroup: string
  readonly v2: boolean
  /** Page cache allowed beside the process's own memory. */
  readonly cacheBytes: number
}

export interface ColdPhase {
  readonly gets: number
  readonly secs: number
  readonly perSec: number
  /** The reader's own page-cache hit ratio (1 - coldReads / reads of its residency map). */
  readonly hitRatio: number | undefined
  /** Device bytes read per get (/proc/self/io read_bytes). */
  readonly bytesPerGet: number
  /** Page cache charged to the cgroup at the phase's end. */
  readonly cacheBytes: number
}

export interface ColdResult {
  readonly ownBytes: number
  readonly limitBytes: number
  readonly cold: ColdPhase
  readonly warm: ColdPhase
}

const cg = (job: ColdJob, file: string): string => readFileSync(join(job.cgroup, file), 'utf8')
const readBytes = (): number => Number(/^read_bytes: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? NaN)
const cgroupCache = (job: ColdJob): number => Number((job.v2 ? /^file (\d+)$/m : /^cache (\d+)$/m).exec(cg(job, 'memory.stat'))?.[1] ?? NaN)

async function phase(job: ColdJob, r: StoreReader, keys: readonly string[]): Promise<ColdPhase> {
  const s0 = r.residency()
  const b0 = readBytes()
  const t0 = performance.now()
  const end = t0 + job.seconds * 1000
  let n = 0
  let found = 0
  while (n < keys.length && performance.now() < end) {
    for (const stop = Math.min(keys.length, n + 1000); n < stop; n++) if (r.get(keys[n] as string) !== undefined) found++
    // Let the residency map's refresh timer run, as it does between a server's reads.
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  const secs = (performance.now() - t0) / 1000
  const s1 = r.residency()
  if (found !== n) throw new Error(`${n - found} present keys answered absent`)
  const reads = (s1?.reads ?? 0) - (s0?.reads ?? 0)
  const cold = (s1?.coldReads ?? 0) - (s0?.coldReads ?? 0)
  return {
    gets: n,
    secs,
    perSec: n / secs,
    hitRatio: reads > 0 ? 1 - cold / reads : undefined,
    bytesPerGet: (readBytes() - b0) / n,
    cacheBytes: cgroupCache(job),
  }
}

/** Reads every data file once, front to back, through the page cache. */
function readDataFiles(dir: string): void {
  const buf = Buffer.allocUnsafe(1 << 20)
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.data'))) {
    const fd = openSync(join(dir, f), 'r')
    try {
      while (readSync(fd, buf, 0, buf.length, null) > 0);
    } finally {
      closeSync(fd)
    }
  }
}

async function main(): Promise<ColdResult> {
  const job = JSON.parse(process.argv[2] as string) as ColdJob
  const keysOf = (seed: number): string[] => {
    const keys: string[] = []
    for (const id of uniformIds(job.records, job.count * 2, seed)) if (id < job.records && keys.length < job.count) keys.push(keyOf(id))
    return keys
  }
  const coldKeys = keysOf(job.seed)
  // Other keys for the second phase: the first phase's records are in the cache already.
  const warmKeys = keysOf(job.seed + 1)
  let r = await openStore(job.dir)
  ;(globalThis as { gc?: () => void }).gc?.()
  const ownBytes = Number(cg(job, job.v2 ? 'memory.current' : 'memory.usage_in_bytes'))
  const limitBytes = ownBytes + job.cacheBytes
  writeFileSync(join(job.cgroup, job.v2 ? 'memory.max' : 'memory.limit_in_bytes'), String(limitBytes))
  try {
    const cold = await phase(job, r, coldKeys)
    readDataFiles(job.dir)
    // A fresh reader fills its residency map from the kernel when it opens.
    r.close()
    r = await openStore(job.dir)
    const warm = await phase(job, r, warmKeys)
    return { ownBytes, limitBytes, cold, warm }
  } finally {
    r.close()
  }
}

main().then(
  (res) => process.stdout.write(`${JSON.stringify(res)}\n`),
  (err: unknown) => {
    process.stderr.write(`compression-cold-child: ${err instanceof Error ? err.stack : String(err)}\n`)
    process.exit(1)
  },
)
