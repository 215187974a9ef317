/**
 * 4h. Hardening: what clients that never finish a request can hold of a serving process's
 * memory (docs/RELIABILITY.md §6), and what the index check on misses costs
 * (docs/RELIABILITY.md §2: a lookup that finds no entry re-checks the index blocks its
 * search read, so a damaged index is never read as "absent").
 *
 *   node dist/bench/serve/hardening-bench.js [--quick]
 *
 * Each hostile load runs in its own process (hostile-load.js, one serving process with
 * --workers 1); the lookups run in this one, over a store made in memory. Markdown on
 * stdout (kit/external.ts embeds it), progress on stderr.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { openStore } from '../../formats/store/read/store-reader'
import { makeNodeDir } from '../../testkit/stores/make-store'
import { makeTmp } from '../../testkit/stores/tmp'
import { fmt, mdTable } from '../kit/stats'

interface HoldResult {
  readonly scenario: string
  readonly before: number
  readonly after: number
  readonly perConnection?: number
  readonly perRequest?: number
}

const SCENARIOS = [
  ['resp-unauth', '60 RESP connections, no AUTH, each starting *260 MGET of 250 × 65,000 bytes', 60],
  ['resp-auth', 'the same 60 connections after AUTH', 60],
  ['http', '40 multi-get bodies of 16 MiB, all but the last byte sent', 40],
] as const

function log(line: string): void {
  process.stderr.write(`[hardening] ${line}\n`)
}

function hold(scenario: string): HoldResult {
  const out = execFileSync(process.execPath, [join(__dirname, 'hostile-load.js'), scenario], { encoding: 'utf8', timeout: 180_000 })
  const line = out.split('\n').find((l) => l.startsWith(`{"scenario"`))
  if (!line) throw new Error(`hostile-load ${scenario} printed no result: ${out.slice(0, 300)}`)
  return JSON.parse(line) as HoldResult
}

/** ns per get over `keys`, best of `rounds` passes (the others warm the reader and the JIT). */
function nsPerGet(get: (k: string) => unknown, keys: readonly string[], rounds: number): number {
  let best = Infinity
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now()
    for (const k of keys) get(k)
    best = Math.min(best, ((performance.now() - t0) * 1e6) / keys.length)
  }
  return best
}

async function missCost(records: number): Promise<{ hit: number; miss: number; records: number }> {
  const tmp = makeTmp('rostore-hardening-')
  try {
    const dir = join(tmp.dir, 'store')
    log(`making a store of ${records} records`)
    await makeNodeDir(
      dir,
      (function* () {
        for (let i = 0; i < records; i++) yield [`key-${i}`, `value-${i}-${'v'.repeat(90)}`] as [string, string]
      })(),
      { chunks: 4 },
    )
    const reader = await openStore(dir)
    try {
      const present = Array.from({ length: Math.min(records, 200_000) }, (_, i) => `key-${(i * 7919) % records}`)
      const absent = present.map((_, i) => `absent-${i}`)
      for (const k of present.slice(0, 100)) if (reader.get(k) === undefined) throw new Error(`${k} missing`)
      for (const k of absent.slice(0, 100)) if (reader.get(k) !== undefined) throw new Error(`${k} found`)
      // Interleaved, so both see the same machine.
      let hit = Infinity
      let miss = Infinity
      for (let round = 0; round < 5; round++) {
        hit = Math.min(
          hit,
          nsPerGet((k) => reader.get(k), present, 1),
        )
        miss = Math.min(
          miss,
          nsPerGet((k) => reader.get(k), absent, 1),
        )
      }
      return { hit, miss, records }
    } finally {
      reader.close()
    }
  } finally {
    tmp.cleanup()
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick')
  const rows: string[][] = []
  for (const [scenario, what, clients] of SCENARIOS) {
    log(`hostile load ${scenario}`)
    try {
      const r = hold(scenario)
      const per = r.perConnection ?? r.perRequest ?? (r.after - r.before) / clients
      rows.push([what, fmt(r.before), fmt(r.after), fmt(r.after - r.before), fmt(per, 2)])
    } catch (err) {
      rows.push([what, 'not run', (err as Error).message.split('\n')[0]!.slice(0, 200), '', ''])
    }
  }
  const cost = await missCost(quick ? 200_000 : 1_000_000)
  const out = [
    'One serving process (`--workers 1`, default limits: `--max-buffered-request-bytes` 64 MiB), its RSS from /proc before the clients connect and once they have sent all they will send. A client that has not authenticated may send at most 10 arguments of 16 KiB; past the budget, a request that grows gets `RO_BUSY`.',
    '',
    mdTable(['clients that never finish', 'RSS before (MiB)', 'RSS after (MiB)', 'held (MiB)', 'per client (MiB)'], rows, [
      'l',
      'r',
      'r',
      'r',
      'r',
    ]),
    '',
    `In-process gets on one store of ${fmt(cost.records)} records × ~100 B (4 chunks, mmap when the addon loads), 200,000 present and 200,000 absent keys, interleaved, best of 5 passes: a miss re-checks the CRC-32 of the index blocks its search read.`,
    '',
    mdTable(
      ['lookup', 'ns per get', 'vs a hit'],
      [
        ['present key (hit)', fmt(cost.hit, 0), '1.00×'],
        ['absent key (miss, index blocks re-checked)', fmt(cost.miss, 0), `${fmt(cost.miss / cost.hit, 2)}×`],
      ],
      ['l', 'r', 'r'],
    ),
  ]
  process.stdout.write(`${out.join('\n')}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
