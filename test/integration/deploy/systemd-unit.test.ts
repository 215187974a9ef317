import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cliPath, packageRoot } from '../../../common/paths'
import { NodeProcess, writeClusterFile } from '../../../testkit/cluster/node-process'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * deploy/systemd/rostore.service: `systemd-analyze verify` passes with no warning, it is
 * hardened, it runs `serve --config`, and it gives the node's SIGTERM drain the time it
 * needs; the example config it names starts a real node that drains on SIGTERM and exits 0.
 *
 * verify checks that ExecStart's program exists, and /usr/local/bin/rostore (where
 * `npm install -g` puts it) is not on a test machine: the unit is verified as a copy in a
 * temp dir whose only change is that program, replaced by this checkout's node + CLI.
 */
jest.setTimeout(60_000)
const DEPLOY = join(packageRoot(__dirname), 'deploy', 'systemd')
const UNIT = readFileSync(join(DEPLOY, 'rostore.service'), 'utf8')
const INSTALLED = '/usr/local/bin/rostore'
const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze'
const tmp = makeTmp('rostore-systemd-')
let node: NodeProcess | undefined

afterAll(async () => {
  if (node?.running) await node.kill9()
  tmp.cleanup()
})

/** The [Service] and [Unit] settings, last value wins as in systemd (empty values kept). */
function directives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim())
    if (m) out.set(m[1] as string, [...(out.get(m[1] as string) ?? []), m[2] as string])
  }
  return out
}

test('systemd-analyze verify passes on the unit (ExecStart pointed at this checkout), with no warning', () => {
  expect(existsSync(SYSTEMD_ANALYZE)).toBe(true)
  const copy = UNIT.replace(`ExecStart=${INSTALLED} `, `ExecStart=${process.execPath} ${cliPath()} `)
  const changed = copy.split('\n').filter((l, i) => l !== UNIT.split('\n')[i])
  expect(changed).toEqual([`ExecStart=${process.execPath} ${cliPath()} serve --config /etc/rostore/node.json`])
  const file = join(tmp.fresh(), 'rostore.service')
  writeFileSync(file, copy)
  const r = spawnSync(SYSTEMD_ANALYZE, ['verify', file], { encoding: 'utf8', timeout: 30_000 })
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
})

test('systemd-analyze verify reports a broken copy (the check can fail)', () => {
  const file = join(tmp.fresh(), 'rostore.service')
  writeFileSync(file, UNIT.replace('NoNewPrivileges=yes', 'NoNewPrivileges=perhaps'))
  const r = spawnSync(SYSTEMD_ANALYZE, ['verify', file], { encoding: 'utf8', timeout: 30_000 })
  expect(r.stderr).toMatch(/Failed to parse boolean value.*perhaps/)
})

test('the unit runs serve --config as its own user, hardened, writing only the data directory', () => {
  const d = directives(UNIT)
  const one = (k: string): string | undefined => d.get(k)?.at(-1)
  expect(one('ExecStart')).toBe(`${INSTALLED} serve --config /etc/rostore/node.json`)
  expect({ user: one('User'), group: one('Group') }).toEqual({ user: 'rostore', group: 'rostore' })
  const example = JSON.parse(readFileSync(join(DEPLOY, 'node.json'), 'utf8')) as Record<string, unknown>
  expect(one('ReadWritePaths')).toBe(example['data-dir'])
  expect(one('StateDirectory')).toBe('rostore')
  for (const [k, v] of [
    ['NoNewPrivileges', 'yes'],
    ['ProtectSystem', 'strict'],
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['PrivateDevices', 'yes'],
    ['RestrictSUIDSGID', 'yes'],
    ['CapabilityBoundingSet', ''],
  ])
    expect({ [k as string]: one(k as string) }).toEqual({ [k as string]: v })
  expect(one('RestrictAddressFamilies')?.split(' ').sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_UNIX'])
})

test('SIGTERM reaches the supervisor only, with more time than the drain needs', () => {
  const d = directives(UNIT)
  expect(d.get('KillSignal')?.at(-1)).toBe('SIGTERM')
  expect(d.get('KillMode')?.at(-1)).toBe('mixed')
  const example = JSON.parse(readFileSync(join(DEPLOY, 'node.json'), 'utf8')) as Record<string, unknown>
  const drainMs = Number(example['drain-timeout-ms'] ?? 30_000)
  const stopSec = Number(/^(\d+)s?$/.exec(d.get('TimeoutStopSec')?.at(-1) ?? '')?.[1])
  expect(stopSec * 1000).toBeGreaterThan(drainMs + 5_000)
})

test('the example config starts a real node that drains on SIGTERM and exits 0', async () => {
  const dir = tmp.fresh()
  const { path: clusterFile } = await writeClusterFile(dir, { nodes: 1 })
  const token = 'systemd-test-admin-token-0123456789'
  writeFileSync(join(dir, 'admin-token'), `${token}\n`)
  const example = JSON.parse(readFileSync(join(DEPLOY, 'node.json'), 'utf8')) as Record<string, unknown>
  const config = join(dir, 'node.json')
  // The example's paths moved into the temp dir; every other setting as shipped.
  writeFileSync(
    config,
    JSON.stringify({ ...example, cluster: clusterFile, 'data-dir': join(dir, 'data'), 'admin-token-file': 'admin-token', workers: 2 }),
  )
  node = await NodeProcess.start({ clusterFile, nodeId: 0, dataDir: '', configFile: config, token })
  expect((await node.admin('GET', '/status')).status).toBe(200)
  const exit = await node.sigterm()
  expect(exit).toEqual({ code: 0, signal: null })
  expect(node.events().find((e) => e['event'] === 'signal')).toMatchObject({ signal: 'SIGTERM' })
  expect(node.events().find((e) => e['event'] === 'shutdown-complete')).toMatchObject({ drained: true })
})

/** Every system call a group of `systemd-analyze syscall-filter` allows, groups expanded. */
function allowedSyscalls(filters: readonly string[]): Set<string> {
  const listing = spawnSync(SYSTEMD_ANALYZE, ['syscall-filter'], { encoding: 'utf8', timeout: 30_000 }).stdout
  const groups = new Map<string, string[]>()
  let current: string[] | undefined
  for (const line of listing.split('\n')) {
    if (line.startsWith('@')) groups.set(line.split(/\s/)[0] as string, (current = []))
    else if (current && line.trim() !== '' && !line.trim().startsWith('#')) current.push(line.trim())
  }
  const out = new Set<string>()
  const add = (name: string): void => {
    if (!name.startsWith('@')) return void out.add(name)
    for (const n of groups.get(name) ?? []) add(n)
  }
  for (const f of filters) for (const n of f.split(/\s+/)) if (n !== '') add(n)
  return out
}

test('the system call filter allows every system call the native addon makes', () => {
  const filters = directives(UNIT).get('SystemCallFilter') ?? []
  expect(filters.some((f) => f.startsWith('~'))).toBe(false)
  const allowed = allowedSyscalls(filters)
  expect(allowed.has('read')).toBe(true)
  // Every C source of the addon, in its folders (hash/, lookup/, memory/, io/).
  const source = readdirSync(join(packageRoot(__dirname), 'native'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.c') || f.endsWith('.cc'))
    .map((f) => readFileSync(join(packageRoot(__dirname), 'native', f), 'utf8'))
    .join('\n')
  // libc name -> the kernel's (x86-64).
  const calls: Record<string, string> = {
    mincore: 'mincore',
    mlock: 'mlock',
    madvise: 'madvise',
    posix_fadvise: 'fadvise64',
    sync_file_range: 'sync_file_range',
    mmap: 'mmap',
    munmap: 'munmap',
    fdatasync: 'fdatasync',
    fsync: 'fsync',
    send: 'sendto',
  }
  const used = Object.keys(calls).filter((c) => new RegExp(`\\b${c}\\s*\\(`).test(source))
  expect(used).toContain('mincore')
  expect(used.filter((c) => !allowed.has(calls[c] as string))).toEqual([])
  // Raw system calls by number (the io_uring cold reads: no liburing), and eventfd.
  const raw = [...source.matchAll(/__NR_(\w+)/g)].map((m) => m[1] as string)
  expect(raw).toEqual(expect.arrayContaining(['io_uring_setup', 'io_uring_enter', 'io_uring_register']))
  if (/\beventfd\s*\(/.test(source)) raw.push('eventfd2')
  expect(raw.filter((c) => !allowed.has(c))).toEqual([])
})
