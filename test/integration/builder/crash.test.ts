import { spawn } from 'node:child_process'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../../common/paths'
import { makeTmp } from '../../../testkit/tmp'

const tmp = makeTmp()
afterAll(tmp.cleanup)

function run(args: string[]): { done: Promise<number | null>; kill: () => void } {
  const child = spawn(process.execPath, [cliPath(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const done = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { done, kill: () => child.kill('SIGKILL') }
}

test('kill -9 in the middle of a build leaves no output; the next build cleans up and succeeds', async () => {
  const input = join(tmp.dir, 'in.tsv')
  const lines: string[] = []
  for (let i = 0; i < 400_000; i++) lines.push(`key-${i}\t${'v'.repeat(40)}${i}`)
  writeFileSync(input, lines.join('\n') + '\n')
  const cluster = join(tmp.dir, 'cluster.json')
  writeFileSync(cluster, JSON.stringify({ name: 'c', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 1] }] }))
  const out = join(tmp.dir, 'out')
  const args = [
    'build',
    '--input',
    input,
    '--format',
    'tsv',
    '--cluster',
    cluster,
    '--store',
    's',
    '--output',
    out,
    '--version',
    '1',
    '--memory-mb',
    '16',
  ]

  for (const delay of [300, 900]) {
    const b = run(args)
    await new Promise((r) => setTimeout(r, delay))
    b.kill()
    expect(await b.done).toBeNull()
    expect(existsSync(out)).toBe(false)
  }
  // The killed builds' hidden temp outputs are still there, until the next build.
  const ok = run(args)
  expect(await ok.done).toBe(0)
  expect(existsSync(join(out, 'node-0', 'metadata.json'))).toBe(true)
  expect(readdirSync(tmp.dir).filter((n) => n.includes('rostore-tmp'))).toEqual([])
})
