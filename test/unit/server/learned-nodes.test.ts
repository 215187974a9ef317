import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isHostName, MAX_ADDRESSES } from '../../../cluster/address-book'
import type { Cluster } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'
import { LEARNED_NODES_FILE, NodeLearning, openAddressBook } from '../../../server/peers/learned-nodes'
import { makeTmp } from '../../../testkit/stores/tmp'

const tmp = makeTmp('rostore-learned-')
afterAll(() => tmp.cleanup())

const FILE: Cluster = {
  name: 'c',
  nodes: [
    { id: 0, host: 'a', port: 7000, partitions: [0] },
    { id: 1, host: 'b', port: 7000, respPort: 7001, partitions: [1] },
  ],
}
let n = 0
const freshDir = (): string => join(tmp.dir, `d${n++}`)

test('hostnames and IP literals pass, anything else does not', () => {
  for (const h of ['localhost', 'node-1.example.com', 'example.com.', '127.0.0.1', '::1', 'fe80::1', `${'a'.repeat(63)}.b`]) {
    expect({ h, ok: isHostName(h) }).toEqual({ h, ok: true })
  }
  for (const h of ['', '-a', 'a-', 'a..b', 'a b', 'a/b', 'a:1', '[::1]', `${'a'.repeat(64)}.b`, 'é.example', `${'a.'.repeat(127)}a`]) {
    expect({ h, ok: isHostName(h) }).toEqual({ h, ok: false })
  }
})

test('learned nodes are written whole, survive a reopen, and the cluster file wins for an id it lists', async () => {
  const dir = freshDir()
  const learning = new NodeLearning(await openAddressBook(FILE, dir), dir)
  const seen: number[][] = []
  learning.onLearned(async (book) => void seen.push(book.nodes.map((x) => x.id)))
  expect(
    (
      await learning.learn([
        { id: 3, host: 'd', port: 7000 },
        { id: 0, host: 'a', port: 7000 },
      ])
    ).map((a) => a.id),
  ).toEqual([3])
  expect(await learning.learn([{ id: 3, host: 'd', port: 7000 }])).toEqual([])
  expect(seen).toEqual([[0, 1, 3]])
  expect((await readdir(dir)).sort()).toEqual([LEARNED_NODES_FILE])
  expect(JSON.parse(await readFile(join(dir, LEARNED_NODES_FILE), 'utf8'))).toEqual({ nodes: [{ id: 3, host: 'd', port: 7000 }] })

  const again = await openAddressBook(FILE, dir)
  expect(again.nodes).toEqual([...FILE.nodes, { id: 3, host: 'd', port: 7000, partitions: [] }])
  // A later cluster file lists node 3 at another address: the file's address is used.
  const moved: Cluster = { name: 'c', nodes: [...FILE.nodes, { id: 3, host: 'e', port: 7000, partitions: [] }] }
  expect((await openAddressBook(moved, dir)).nodes.find((x) => x.id === 3)?.host).toBe('e')
})

test('another address for a known id is refused whole: nothing written, nothing learned', async () => {
  const dir = freshDir()
  const learning = new NodeLearning(await openAddressBook(FILE, dir), dir)
  const err = await learning
    .learn([
      { id: 5, host: 'f', port: 1 },
      { id: 1, host: 'b', port: 7000 },
    ])
    .catch((e: unknown) => e)
  expect(isStoreError(err, 'RO_CONFLICT')).toBe(true)
  expect((err as Error).message).toBe(
    'node 1 is known at b:7000 (RESP 7001), not b:7000: a known node keeps its address (change it in the cluster files and restart)',
  )
  expect(learning.book.nodes.map((x) => x.id)).toEqual([0, 1])
  await expect(readdir(dir)).rejects.toThrow(/ENOENT/)
})

test('a broken cluster-nodes.json stops the node with RO_BAD_CLUSTER naming the file', async () => {
  const dir = freshDir()
  await new NodeLearning(await openAddressBook(FILE, dir), dir).learn([{ id: 2, host: 'c', port: 1 }])
  const path = join(dir, LEARNED_NODES_FILE)
  await writeFile(path, '{"nodes": [')
  const err = await openAddressBook(FILE, dir).catch((e: unknown) => e)
  expect(isStoreError(err, 'RO_BAD_CLUSTER')).toBe(true)
  expect((err as Error).message).toMatch(new RegExp(`^${path}: not valid JSON`))
  await writeFile(path, '{"nodes": [{"id": 2, "host": "c", "port": 99999}]}')
  const bad = await openAddressBook(FILE, dir).catch((e: unknown) => e)
  expect((bad as Error).message).toContain('node 2: bad port 99999')
})

test('the learned set is bounded: requests that would take it past the limit are refused whole', async () => {
  const dir = freshDir()
  const learning = new NodeLearning(await openAddressBook(FILE, dir), dir)
  const batch = (from: number, count: number): { id: number; host: string; port: number }[] =>
    Array.from({ length: count }, (_, i) => ({ id: from + i, host: `h${from + i}`, port: 7000 }))
  expect(await learning.learn(batch(10, MAX_ADDRESSES - 1))).toHaveLength(MAX_ADDRESSES - 1)
  const err = await learning.learn(batch(10_000, 2)).catch((e: unknown) => e)
  expect(isStoreError(err, 'RO_TOO_LARGE')).toBe(true)
  expect(learning.book.learned()).toHaveLength(MAX_ADDRESSES - 1)
  expect(await learning.learn(batch(20_000, 1))).toHaveLength(1)
  // The file written at the limit still opens.
  expect((await openAddressBook(FILE, dir)).learned()).toHaveLength(MAX_ADDRESSES)
})
