/**
 * Child of reader-memory.test.ts (run with --expose-gc): the JS heap and ArrayBuffer memory
 * a reader adds when it opens a store, as JSON on stdout.
 */
import { openStore } from '../../../../formats/store/read/store-reader'

async function main(): Promise<void> {
  const [dir, small, access] = process.argv.slice(2) as [string, string, 'mmap' | 'pread']
  const gc = (globalThis as { gc?: () => void }).gc
  const sample = (): number => {
    gc?.()
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  // Load what any first open loads (modules, the hash-wasm instance) with a small store,
  // kept open: nothing is freed while the big one is measured.
  const warm = await openStore(small, { access })
  const before = sample()
  const reader = await openStore(dir, { access })
  const grown = sample() - before
  process.stdout.write(`${JSON.stringify({ accessMode: reader.accessMode, grown, probe: reader.get('k1')?.length })}\n`)
  reader.close()
  warm.close()
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
