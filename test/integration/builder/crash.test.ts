import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../../common/paths'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(tmp.cleanup)

function run(args: string[]): { done: Promise<number | null>; kill: () => void; running: () => boolean } {
  const child = spawn(process.execPath, [cliPath(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let exited = false
  const done = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      exited = true
      resolve(code)
    }),
  )
  return { done, kill: () => child.kill('SIGKILL'), running: () => !exited }
}

/** Files below `dir` (recursively), or [] when it does not exist. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
}

/** Polls (progress, not time) until `reached()` holds; fails if the build ends first. */
async function until(build: { running: () => boolean }, reached: () => boolean, what: string): Promise<void> {
  while (!reached()) {
    if (!build.running()) throw new Error(`the build ended before ${what}: make the input larger`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

test('kill -9 in the middle of a build leaves no output; the next build cleans up and succeeds', async () => {
  const input = join(tmp.dir, 'in.tsv')
  const lines: string[] = []
  for (let i = 0; i < 400_000; i++) lines.push(`key-${i}\t${'v'.repeat(40)}${i}`)
  writeFileSync(input, lines.join('\n') + '\n')
  const cluster = join(tmp.dir, 'cluster.json')
  writeFileSync(cluster, JSON.stringify({ name: 'c', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 1] }] }))
  const out = join(tmp.dir, 'out')
  const runs = join(tmp.dir, 'runs')
  mkdirSync(runs)
  const args = ['build', '--input', input, '--format', 'tsv', '--cluster', cluster, '--store', 's', '--output', out]
  args.push('--version', '1', '--memory-mb', '16', '--tmpdir', runs)
  const hiddenOutputs = (): string[] => readdirSync(tmp.dir).filter((n) => n.includes('rostore-tmp'))

  // Killed in the map phase (once a sorted run was spilled), then in the reduce phase (once
  // chunk files are being written into the hidden output).
  const spilled = (): boolean => filesUnder(runs).length > 0
  const writingChunks = (): boolean => hiddenOutputs().some((d) => filesUnder(join(tmp.dir, d)).some((f) => /\.(data|index)$/.test(f)))
  for (const [stage, reached] of [
    ['a run was spilled', spilled],
    ['chunk files were written', writingChunks],
  ] as const) {
    const b = run(args)
    await until(b, reached, stage)
    b.kill()
    expect(await b.done).toBeNull()
    expect(existsSync(out)).toBe(false)
  }
  // Each build removes the leftovers of dead builds as it starts (the second removed the
  // first's); the second killed build's hidden output is still there, until the next build.
  expect(hiddenOutputs()).toHaveLength(1)
  expect(filesUnder(join(tmp.dir, hiddenOutputs()[0]!)).length).toBeGreaterThan(0)
  const ok = run(args)
  expect(await ok.done).toBe(0)
  expect(existsSync(join(out, 'metadata.json'))).toBe(true)
  expect(hiddenOutputs()).toEqual([])
})
