/**
 * Child process of value-lifetime.test.ts, run WITHOUT --expose-gc: V8 does not count
 * mapped windows as memory, so only the collection a reader's close() asks for (shortly
 * after) unmaps a retired version soon. Reads, closes, deletes the files, then waits (a bounded number of
 * timer turns, while allocating as a serving process would) for the mapping to go.
 */
import { readFileSync, rmSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { openStore } from '../../../../formats/store/read/store-reader'

function mapped(file: string): boolean {
  return readFileSync('/proc/self/maps', 'utf8').includes(file)
}

async function main(): Promise<void> {
  const [dir] = process.argv.slice(2) as [string]
  const dataFile = `${dir}/0.data`
  // The closed reader itself stays reachable to the end: close() must let go of the windows.
  const reader = await openStore(dir)
  let hits = 0
  for (let i = 0; i < 100; i++) if (reader.get(`k${i}`)) hits++
  // A serving process's readers live long enough to be in V8's old generation, which
  // only a full collection sweeps: survive a few young-generation collections first.
  let churn = 0
  for (let i = 0; i < 200_000; i++) churn += new Array<number>(16).fill(i).length
  const accessMode = reader.accessMode
  const mappedAtFirst = mapped(dataFile)
  reader.close()
  rmSync(dir, { recursive: true, force: true })
  let turns = -1
  // RELEASE_DELAY_MS is 2 s: wait up to 15 s for the collection it asks for.
  for (let turn = 1; turn <= 1500; turn++) {
    await sleep(10)
    if (!mapped(dataFile)) {
      turns = turn
      break
    }
  }
  process.stdout.write(`${JSON.stringify({ accessMode, hits: churn > 0 ? hits : -1, mappedAtFirst, unmappedAfterTurns: turns })}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
