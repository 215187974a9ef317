import { execFileSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { loadCluster } from '../../../cluster/cluster'
import { rollbackCluster } from '../../../client/push/rollback'
import { NodeProcess, request, writeClusterFile } from '../../../testkit/cluster/node-process'
import { keyName, makeVersionDir, versionValue } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * A rollback on a node whose disk is full: the LIVE pointer cannot be written, so nothing
 * changes, and the error says why (RO_NO_SPACE), not that something conflicts. The data
 * directory is a real 4 MiB tmpfs filled to the last byte; mounting one needs root, so
 * elsewhere the test says so and checks nothing.
 */
jest.setTimeout(60_000)
const tmp = makeTmp('rostore-rollback-space-')
const TOKEN = 'rollback-space-admin-token-1'
const mnt = join(tmp.dir, 'mnt')
let mounted = false
let node: NodeProcess | undefined

beforeAll(() => {
  mkdirSync(mnt)
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { stdio: 'ignore' })
    mounted = true
  } catch {
    console.warn('rollback-no-space: cannot mount a tmpfs here (needs root); not run')
  }
})

afterAll(async () => {
  if (node?.running) {
    node.child.kill('SIGTERM')
    await node.exited
  }
  if (mounted) execFileSync('umount', [mnt])
  tmp.cleanup()
})

/** Writes zeros into `path` until the file system refuses: ENOSPC. */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w')
  const block = Buffer.alloc(64 << 10)
  try {
    for (let i = 0; i < 1000; i++) writeSync(fd, block)
    throw new Error('the 4 MiB file system took 64 MiB')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    closeSync(fd)
  }
}

test('a rollback that cannot write LIVE on a full disk is RO_NO_SPACE, changes nothing, and works once space is freed', async () => {
  if (!mounted) return
  const dataDir = join(mnt, 'data')
  for (const v of [1, 2]) await makeVersionDir(join(dataDir, 'users', `version-${v}`), { store: 'users', version: v, keys: 50 })
  writeFileSync(join(dataDir, 'users', 'LIVE'), '2\n')
  const { path } = await writeClusterFile(tmp.dir, { nodes: 1 })
  node = await NodeProcess.start({ clusterFile: path, nodeId: 0, dataDir, token: TOKEN, workers: 1 })
  const cluster = await loadCluster(path)
  const read = async (): Promise<string> => (await request(`${node!.url}/stores/users/keys/${keyName(3)}`)).body.toString()
  expect(await read()).toBe(versionValue(2, 3))

  const filler = join(mnt, 'filler')
  fillDisk(filler)
  const err = await rollbackCluster({ cluster, store: 'users', adminToken: TOKEN }).catch((e: unknown) => e)
  expect(err).toMatchObject({ code: 'RO_NO_SPACE' })
  expect(readFileSync(join(dataDir, 'users', 'LIVE'), 'utf8')).toBe('2\n')
  expect(await read()).toBe(versionValue(2, 3))

  rmSync(filler)
  const done = await rollbackCluster({ cluster, store: 'users', adminToken: TOKEN })
  expect(done.to).toBe(1)
  expect(await read()).toBe(versionValue(1, 3))
})
