/**
 * Child process of value-lifetime.test.ts, run with --expose-gc: reads values, closes the
 * reader, deletes the store's files, forces collections, and reports whether the values
 * kept their bytes and whether the mapping went away once nothing referenced it.
 */
import { readFileSync, rmSync } from 'node:fs'
import { setImmediate as tick } from 'node:timers/promises'
import { openStore } from '../../../../formats/store/read/store-reader'

const gc = (globalThis as { gc?: () => void }).gc

function mapped(file: string): boolean {
  return readFileSync('/proc/self/maps', 'utf8').includes(file)
}

async function collect(until: () => boolean): Promise<number> {
  for (let round = 1; round <= 20; round++) {
    gc?.()
    await tick()
    await tick()
    if (until()) return round
  }
  return -1
}

async function main(): Promise<void> {
  const [dir, keyCount] = process.argv.slice(2) as [string, string]
  const dataFile = `${dir}/0.data`
  const reader = await openStore(dir)
  // Held in an object so dropping them is a plain property write.
  const held: { values?: (Buffer | undefined)[] } = { values: Array.from({ length: Number(keyCount) }, (_, i) => reader.get(`k${i}`)) }
  const copies = held.values!.map((v) => (v ? Buffer.from(v) : undefined))
  const mappedAtFirst = mapped(dataFile)
  reader.close()
  rmSync(dir, { recursive: true, force: true })
  await collect(() => false)
  const intact = held.values!.every((v, i) => (v === undefined ? copies[i] === undefined : v.equals(copies[i] as Buffer)))
  const mappedWhileHeld = mapped(dataFile)
  held.values = undefined
  const rounds = await collect(() => !mapped(dataFile))
  process.stdout.write(
    `${JSON.stringify({ accessMode: reader.accessMode, gc: gc !== undefined, mappedAtFirst, intact, mappedWhileHeld, unmappedAfterRounds: rounds })}\n`,
  )
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
