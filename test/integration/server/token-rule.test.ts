import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath } from '../../../common/paths'
import { writeClusterFile, NodeProcess } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A token with whitespace could never authenticate (a Bearer header
 * carries one word), and the node started without a word. The rule (server/auth.ts
 * checkToken, for the admin token and any other configured token): visible ASCII, no
 * whitespace, at most 4096 characters. A node given anything else refuses to start, saying
 * why and where, never echoing the token. --admin-token-file trims its first line's ends.
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-token-rule-')
let clusterFile: string

beforeAll(async () => {
  clusterFile = (await writeClusterFile(tmp.dir, { nodes: 1 })).path
})
afterAll(() => tmp.cleanup())

/** Runs `rostore serve` expecting it to refuse to start; resolves with its exit code and output. */
function refusedStart(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(
    process.execPath,
    [cliPath(), 'serve', '--cluster', clusterFile, '--node-id', '0', '--port', '0', '--data-dir', join(tmp.dir, 'data'), ...args],
    { env: { ...process.env, ROSTORE_ADMIN_TOKEN: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })))
}

test.each([
  ['a space inside', 'zqxyw secret-0123456789', 'whitespace at character 6'],
  ['a leading space', ' zqxyw-secret-0123456789', 'whitespace at character 1'],
  ['a tab', 'zqxyw\tsecret-0123456789', 'whitespace at character 6'],
  ['a non-ASCII letter', 'zqxyw-s\u00e9cret-0123456789', 'a non-ASCII character at character 8'],
  ['a control character', 'zqxyw-secret\u0001-0123456789', 'a control character at character 13'],
])('an admin token with %s: the node refuses to start, naming the place, not the token', async (_what, token, says) => {
  const { code, output } = await refusedStart([], { ROSTORE_ADMIN_TOKEN: token })
  expect(code).toBe(1)
  const failed = output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((e) => e['event'] === 'start-failed')
  expect(failed).toMatchObject({ code: 'RO_BAD_OPTION', error: expect.stringContaining(says) })
  expect(output).not.toContain('listening')
  for (const part of token.split(/[^\x21-\x7e]/)) if (part.length > 4) expect(output).not.toContain(part)
})

test('--admin-token-file: a line with a space inside is refused; surrounding whitespace is trimmed and works', async () => {
  const bad = join(tmp.dir, 'bad-token')
  writeFileSync(bad, 'two words-0123456789abcdef\n')
  const refused = await refusedStart(['--admin-token-file', bad], {})
  expect(refused.code).toBe(1)
  expect(refused.output).toContain('whitespace at character 4')

  const good = join(tmp.dir, 'good-token')
  writeFileSync(good, '  file-token-0123456789abcdef \r\nsecond line ignored\n')
  const node = await NodeProcess.start({
    clusterFile,
    nodeId: 0,
    dataDir: join(tmp.dir, 'data'),
    port: 0,
    extraArgs: ['--admin-token-file', good],
  })
  try {
    const auth = (t: string): Promise<number> =>
      node.request('/admin/jobs', { headers: { authorization: `Bearer ${t}` } }).then((r) => r.status)
    expect(await auth('file-token-0123456789abcdef')).toBe(200)
    expect(await auth('wrong-token-0123456789abcde')).toBe(401)
  } finally {
    await node.kill9()
  }
})
