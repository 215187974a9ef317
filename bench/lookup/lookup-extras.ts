/**
 * The parts of measurement 2 beyond gets/s: building blocks (lookup-micro.ts), 100-key
 * batches, the first second after a cold open (cold-open.ts) and reader memory
 * (reader-memory.ts). Each runs in child processes (bench/kit/child.ts) like the lookups.
 */
import { nativeFunctions, nativeUnavailableReason } from '../../common/native'
import { childScript } from '../build/build-bench'
import { COLD_ROWS, coldOpenMarkdown, type ColdOpenResult } from './cold-open'
import { ensureDataset } from '../kit/data'
import { microMarkdown, type BatchResult, type MicroResult } from './lookup-micro'
import { memoryMarkdown, prepareMemoryStores, type MemoryResult } from './reader-memory'
import type { BenchContext } from '../kit/report'
import { rostoreNodeDir } from '../kit/rostore'
import { log, runTimed } from '../kit/system'

async function child<T>(args: readonly string[], node: readonly string[] = []): Promise<T> {
  const t = await runTimed(process.execPath, [...node, childScript(), ...args], { timeoutMs: 3_600_000 })
  return JSON.parse(t.stdout.trim().split('\n').pop() ?? 'null') as T
}

const errorOf = (err: unknown): string => (err as Error).message.split('\n').slice(0, 3).join(' / ').slice(0, 300)

export async function readerExtras(ctx: BenchContext): Promise<string> {
  const parts: string[] = []
  const quick = ctx.quick ? '1' : '0'
  const first = ctx.shapes[0]
  const last = ctx.shapes[ctx.shapes.length - 1]

  log('lookup bench: CRC/MD5 building blocks, batches')
  let micro: MicroResult | string
  try {
    micro = await child<MicroResult>(['micro', quick])
  } catch (err) {
    micro = errorOf(err)
  }
  let batch: BatchResult | string = 'no data shape'
  if (first) {
    try {
      const dir = rostoreNodeDir(ensureDataset(first, ctx.seed), 'rostore-none')
      batch = await child<BatchResult>(['batch', dir, String(first.records), String(ctx.seed), quick])
    } catch (err) {
      batch = errorOf(err)
    }
  }
  parts.push(`### Building blocks and batches (${first?.name ?? 'n/a'})\n\n${microMarkdown(micro, batch)}`)

  if (last) {
    log('lookup bench: cold opens')
    const dir = rostoreNodeDir(ensureDataset(last, ctx.seed), 'rostore-none')
    const results: (ColdOpenResult | { job: (typeof COLD_ROWS)[number]; error: string })[] = []
    for (const row of COLD_ROWS) {
      if (!nativeFunctions()) {
        results.push({ job: row, error: `dropping pages needs the addon (${nativeUnavailableReason()})` })
        continue
      }
      try {
        results.push(await child<ColdOpenResult>(['cold', JSON.stringify({ ...row, dir, records: last.records, seed: ctx.seed })]))
      } catch (err) {
        results.push({ job: row, error: errorOf(err) })
      }
    }
    parts.push(`### Cold open, per preload mode\n\n${coldOpenMarkdown(last.name, results)}`)
  }

  log('lookup bench: reader memory')
  const rows: { shape: (typeof ctx.shapes)[number]; result?: MemoryResult; error?: string }[] = []
  try {
    for (const { shape, dir } of await prepareMemoryStores(ctx.quick, ctx.seed)) {
      for (const access of ['mmap', 'pread'] as const) {
        if (access === 'mmap' && !nativeFunctions()) {
          rows.push({ shape, error: `mmap needs the addon (${nativeUnavailableReason()})` })
          continue
        }
        try {
          rows.push({ shape, result: await child<MemoryResult>(['memory', dir, access, String(shape.records)], ['--expose-gc']) })
        } catch (err) {
          rows.push({ shape, error: errorOf(err) })
        }
      }
    }
  } catch (err) {
    parts.push(`### Reader memory\n\nNot run: ${errorOf(err)}`)
    return parts.join('\n\n')
  }
  parts.push(`### Reader memory\n\n${memoryMarkdown(rows)}`)
  return parts.join('\n\n')
}
