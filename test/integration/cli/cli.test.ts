import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { cliPath } from '../../../common/paths'
import { writeInput } from '../../../testkit/stores/input-files'
import { startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

jest.setTimeout(120_000)
const tmp = makeTmp()
const token = 'cli-test-token-abcdefghij'
let nodes: TestCluster | undefined

function cli(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cliPath(), ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

afterAll(async () => {
  await nodes?.killAll()
  tmp.cleanup()
})

test('the quick start runs end to end, prints each step and exits 0 leaving nothing running', () => {
  const r = cli(['demo'])
  expect(r.stderr).not.toMatch(/internal error/)
  expect(r.code).toBe(0)
  expect(r.stdout).toMatch(/version 1 live on every node/)
  expect(r.stdout).toMatch(/every node back on version 1/)
  expect(r.stdout).toMatch(/all nodes drained and exited 0/)
})

test('build, push, get, versions and rollback through the CLI', async () => {
  nodes = await startCluster({ dir: tmp.dir, nodes: 3, partitionsPerNode: 2, token })
  const cluster = nodes.clusterFile
  for (const v of [1, 2]) {
    const input = join(tmp.dir, `v${v}.jsonl`)
    await writeInput(input, 'jsonl', [
      ['alpha', `a${v}`],
      ['beta', `b${v}`],
    ])
    const b = cli([
      'build',
      '--input',
      input,
      '--format',
      'jsonl',
      '--cluster',
      cluster,
      '--store',
      'cli',
      '--output',
      join(tmp.dir, `out${v}`),
      '--replication',
      '2',
      '--version',
      String(v),
    ])
    expect(b.code).toBe(0)
    expect(b.stdout).toMatch(/2 input records/)
    const verified = cli(['verify', join(tmp.dir, `out${v}`)])
    expect(verified.code).toBe(0)
    expect(verified.stdout).toMatch(new RegExp(`^ok .*: store cli version ${v} build output \\(every partition\\), 2 records, `, 'm'))
    const p = cli(['push', '--cluster', cluster, '--store', 'cli', '--from', join(tmp.dir, `out${v}`)], { ROSTORE_ADMIN_TOKEN: token })
    expect(p.stdout).toMatch(new RegExp(`version ${v}: live`))
    expect(p.code).toBe(0)
  }
  const one = cli(['get', '--cluster', cluster, '--store', 'cli', 'alpha'])
  expect(one.code).toBe(0)
  expect(one.stdout).toBe('a2')
  const missing = cli(['get', '--cluster', cluster, '--store', 'cli', 'gamma'])
  expect(missing.code).toBe(1)
  expect(missing.stderr).toMatch(/not found/)
  const keysFile = join(tmp.dir, 'keys.txt')
  writeFileSync(keysFile, 'alpha\ngamma\nbeta\n')
  const json = cli(['get', '--cluster', cluster, '--store', 'cli', '--json', '--keys-file', keysFile])
  expect(json.code).toBe(0)
  expect(
    json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
  ).toEqual([
    { key: 'alpha', found: true, value: 'a2' },
    { key: 'gamma', found: false },
    { key: 'beta', found: true, value: 'b2' },
  ])
  const versions = cli(['versions', '--cluster', cluster, '--store', 'cli', '--json'], { ROSTORE_ADMIN_TOKEN: token })
  expect(JSON.parse(versions.stdout).nodes.map((n: { live: number }) => n.live)).toEqual([2, 2, 2])
  const rb = cli(['rollback', '--cluster', cluster, '--store', 'cli', '--admin-token', token])
  expect(rb.code).toBe(0)
  expect(cli(['get', '--cluster', cluster, '--store', 'cli', 'beta']).stdout).toBe('b1')
  const noToken = cli(['rollback', '--cluster', cluster, '--store', 'cli'], { ROSTORE_ADMIN_TOKEN: '' })
  expect(noToken.code).toBe(1)
  expect(noToken.stderr).toMatch(/RO_UNAUTHORIZED|RO_UNAVAILABLE/)
})

test('bad input on the command line: the error names file and line, exit 1, no output', async () => {
  const input = join(tmp.dir, 'bad.tsv')
  writeFileSync(input, 'a\t1\nbroken line\n')
  const cluster = join(tmp.dir, 'c1.json')
  writeFileSync(cluster, JSON.stringify({ name: 'c', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0] }] }))
  const r = cli(['build', '--input', input, '--format', 'tsv', '--cluster', cluster, '--store', 's', '--output', join(tmp.dir, 'bad-out')])
  expect(r.code).toBe(1)
  expect(r.stderr).toMatch(new RegExp(`${input}:2: .*\\[RO_BAD_INPUT\\]`))
})

test('an integer option given text: the error names the option and echoes what was typed, exit 1, no output', () => {
  const input = join(tmp.dir, 'ok.tsv')
  writeFileSync(input, 'a\t1\n')
  const cluster = join(tmp.dir, 'c2.json')
  writeFileSync(cluster, JSON.stringify({ name: 'c', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0] }] }))
  const out = join(tmp.dir, 'int-out')
  const base = ['build', '--input', input, '--format', 'tsv', '--cluster', cluster, '--store', 's', '--output', out]
  for (const [option, given] of [
    ['--version', 'same'],
    ['--chunks', '1e3'],
    ['--workers', ''],
    ['--memory-mb', '12abc'],
  ] as const) {
    const r = cli([...base, option, given])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain(`rostore: ${option} must be an integer, got ${JSON.stringify(given)} [RO_BAD_OPTION]`)
    expect(existsSync(out)).toBe(false)
  }
  const twice = cli([...base, '--version', '3', '--version', '4'])
  expect(twice.stderr).toContain('--version was given 2 times; give it once [RO_BAD_OPTION]')
  // Serve's options are parsed the same way.
  const serve = cli(['serve', '--cluster', cluster, '--node-id', 'zero', '--data-dir', join(tmp.dir, 'd')])
  expect(serve.code).toBe(1)
  expect(serve.stderr).toContain('--node-id must be an integer, got "zero" [RO_BAD_OPTION]')
})

test('serve refuses HTTP timeouts out of range: exit 1, the option named', () => {
  const cluster = join(tmp.dir, 'c3.json')
  writeFileSync(cluster, JSON.stringify({ name: 'c', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0] }] }))
  const base = ['serve', '--cluster', cluster, '--node-id', '0', '--data-dir', join(tmp.dir, 'd3')]
  for (const [args, message] of [
    [['--keep-alive-timeout-ms', '0'], '--keep-alive-timeout-ms must be a positive integer, got 0'],
    [['--headers-timeout-ms', '-5'], '--headers-timeout-ms must be a positive integer, got -5'],
    [['--request-timeout-ms', '5000'], '--headers-timeout-ms (10000) must not exceed --request-timeout-ms (5000)'],
  ] as const) {
    const r = cli([...base, ...args])
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 1, stderr: expect.stringContaining(`rostore: ${message} [RO_BAD_OPTION]`) })
  }
  expect(existsSync(join(tmp.dir, 'd3'))).toBe(false)
})

test('a run loads only the command it names; help lists every command and a misspelt one gets a suggestion', () => {
  const commands = readdirSync(join(dirname(cliPath()), 'commands'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => f.slice(0, -3))
  expect(commands.length).toBeGreaterThan(10)
  const help = cli(['--help'])
  expect(help.code).toBe(0)
  for (const c of commands) expect(help.stdout).toMatch(new RegExp(`rostore ${c}\\b`))
  const typo = cli(['bulid'])
  expect(typo.code).toBe(2)
  expect(typo.stderr).toMatch(/Did you mean build\?/)
  // NODE_DEBUG=module names every module file loaded: a get loads no other command.
  const get = cli(['get', '--help'], { NODE_DEBUG: 'module' })
  expect(get.code).toBe(0)
  expect(get.stdout).toMatch(/rostore get/)
  const loaded = new Set([...get.stderr.matchAll(/[\\/]commands[\\/]([a-z]+)\.js/g)].map((m) => m[1]))
  expect([...loaded]).toEqual(['get'])
})
