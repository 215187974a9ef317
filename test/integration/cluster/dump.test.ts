import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readdir, readFile, readlink } from 'node:fs/promises'
import { Agent, request as httpRequest } from 'node:http'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { buildStore } from '../../../builder/engines/local/build-job'
import { buildSide, clusterSide, diffSides } from '../../../client/dump/diff'
import { dumpCluster, type DumpSummary } from '../../../client/dump/dump'
import { columnsFor, createOutput, type DumpOutputFormat, type OutputSink } from '../../../client/dump/dump-output'
import { openNodeDump } from '../../../client/dump/dump-stream'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'
import { cliPath } from '../../../common/paths'
import type { InputFormat } from '../../../formats/input/types'
import type { Compression } from '../../../formats/store/layout/metadata'
import { binaryRecords, differentChunkFiles, textRecords, writeBinaryInput, writeTextInput } from '../../../testkit/stores/dump-fixtures'
import {
  json,
  startClusterFromFile,
  startSingleNode,
  writeClusterFile,
  type NodeProcess,
  type TestCluster,
} from '../../../testkit/cluster/node-process'
import { waitUntil } from '../../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../../testkit/stores/tmp'

jest.setTimeout(300_000)
const tmp = makeTmp()
const token = 'dump-test-token-0123456789'
let tc: TestCluster
let cluster: Cluster
let single: NodeProcess
let nextVersion = 1

interface BuildSpec {
  readonly input: string
  readonly format: InputFormat
  readonly version: number
  readonly compression: Compression
}

async function build(spec: BuildSpec, output: string, on: Cluster = cluster): Promise<void> {
  await buildStore({
    inputs: [spec.input],
    format: spec.format,
    cluster: on,
    store: 'st',
    output,
    version: spec.version,
    replication: 2,
    chunks: 3,
    compression: spec.compression,
    workers: 1,
    // Installed node directory by node directory, and compared chunk file by chunk file: format 1
    // (format 2's dumps: partitioned-tools.test.ts).
    layout: 'nodes',
  })
}

/** Install a build on every running node of the cluster and make it live. */
async function installEverywhere(dir: string): Promise<void> {
  for (const n of tc.nodes.filter((x) => x.running)) await n.install('st', join(dir, `node-${n.opts.nodeId}`), { swap: true })
}

async function dumpTo(format: DumpOutputFormat, output: string, opts: { version?: number } = {}): Promise<DumpSummary> {
  let sink: OutputSink | undefined
  try {
    const summary = await dumpCluster({ cluster, store: 'st', token, tmpDir: tmp.dir, ...opts }, async (info) => {
      sink = await createOutput(output, format, columnsFor(info.keySerializer, info.valueSerializer, false))
      return sink
    })
    await sink?.commit()
    return summary
  } catch (err) {
    await sink?.abort()
    throw err
  }
}

beforeAll(async () => {
  const { path } = await writeClusterFile(tmp.dir, { nodes: 3, partitionsPerNode: 3 })
  cluster = await loadCluster(path)
  tc = await startClusterFromFile(path, {
    dataDir: (id) => join(tmp.dir, `data-${id}`),
    token,
    keepVersions: 1,
    extraArgs: ['--workers', '2', '--stream-max-bytes-per-sec', '0'],
  })
  single = await startSingleNode({ dir: join(tmp.dir, 'single'), token, workers: 1, keepVersions: 1 })
})

afterAll(async () => {
  await tc?.killAll()
  if (single?.running) await single.kill9()
  tmp.cleanup()
})

describe('round trip: dump a live store, rebuild from the dump, same chunk files', () => {
  const cases: [string, InputFormat, 'text' | 'binary', DumpOutputFormat, Compression][] = [
    ['tsv input, dumped as tsv', 'tsv', 'text', 'tsv', 'none'],
    ['csv input, dumped as jsonl', 'csv', 'text', 'jsonl', 'gzip'],
    ['jsonl input, dumped as arrow', 'jsonl', 'text', 'arrow', 'snappy'],
    ['parquet input (text), dumped as parquet', 'parquet', 'text', 'parquet', 'none'],
    ['arrow input (text), dumped as jsonl', 'arrow', 'text', 'jsonl', 'none'],
    ['parquet input (binary), dumped as arrow', 'parquet', 'binary', 'arrow', 'gzip'],
    ['arrow input (binary), dumped as parquet', 'arrow', 'binary', 'parquet', 'none'],
  ]
  test.each(cases)('%s', async (name, format, kind, out, compression) => {
    const dir = join(tmp.dir, `rt-${format}-${kind}`)
    const input = `${dir}.${format}`
    if (kind === 'text') await writeTextInput(input, format, textRecords(3000))
    else await writeBinaryInput(input, format as 'arrow' | 'parquet', binaryRecords(3000))
    const spec: BuildSpec = { input, format, version: nextVersion++, compression }
    await build(spec, `${dir}-orig`)
    await installEverywhere(`${dir}-orig`)
    const output = `${dir}-dump.${out}`
    const summary = await dumpTo(out, output)
    expect(summary.version).toBe(spec.version)
    expect(summary.records).toBe(kind === 'text' ? 3002 : 3001)
    await build({ ...spec, input: output, format: out }, `${dir}-rebuilt`)
    expect(await differentChunkFiles(`${dir}-orig`, `${dir}-rebuilt`)).toEqual([])
    void name
  })

  test('a format that cannot hold the data is refused, and no output is left', async () => {
    // The live store is the last round trip's: binary keys and values.
    const output = join(tmp.dir, 'refused.jsonl')
    await expect(dumpTo('jsonl', output)).rejects.toThrow(/cannot hold record 1: its key is not UTF-8 text; use --format parquet or arrow/)
    expect(existsSync(output)).toBe(false)
    expect((await readdir(tmp.dir)).filter((f) => f.startsWith('.refused') || f.startsWith('.rostore-dump-'))).toEqual([])
  })

  test('the CLI: rostore dump --format tsv, then --from-build of the same version', async () => {
    const input = join(tmp.dir, 'cli.tsv')
    await writeTextInput(input, 'tsv', textRecords(500))
    const v = nextVersion++
    await build({ input, format: 'tsv', version: v, compression: 'none' }, join(tmp.dir, 'cli-orig'))
    await installEverywhere(join(tmp.dir, 'cli-orig'))
    const run = promisify(execFile)
    const env = { ...process.env, ROSTORE_ADMIN_TOKEN: token }
    const a = await run(
      process.execPath,
      [cliPath(), 'dump', '--cluster', tc.clusterFile, '--store', 'st', '--format', 'tsv', '--output', join(tmp.dir, 'cli.out.tsv')],
      { env },
    )
    expect(a.stdout).toContain(`dumped 502 records of version ${v}`)
    const b = await run(process.execPath, [
      cliPath(),
      'dump',
      '--from-build',
      join(tmp.dir, 'cli-orig'),
      '--format',
      'tsv',
      '--output',
      join(tmp.dir, 'cli.build.tsv'),
    ])
    expect(b.stdout).toContain(`dumped 502 records of version ${v}`)
    for (const f of ['cli.out.tsv', 'cli.build.tsv']) {
      await build({ input: join(tmp.dir, f), format: 'tsv', version: v, compression: 'none' }, join(tmp.dir, `${f}-rebuilt`))
      expect(await differentChunkFiles(join(tmp.dir, 'cli-orig'), join(tmp.dir, `${f}-rebuilt`))).toEqual([])
    }
  })
})

/** Every `version-*` directory file the process has open. */
async function openVersionFiles(pid: number): Promise<string[]> {
  const out: string[] = []
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')
    if (/\/version-\d+\/\d+\.(index|data)/.test(target)) out.push(target)
  }
  return out
}

describe.each([
  ['a 3-node cluster with --workers 2', () => tc.nodes[0] as NodeProcess],
  ['a single node with --workers 1', () => single],
])('the streaming endpoints on %s', (_name, nodeOf) => {
  beforeAll(async () => {
    if (nodeOf() !== single) return
    const { path } = { path: join(tmp.dir, 'single', 'cluster.json') }
    const input = join(tmp.dir, 'single.tsv')
    await writeTextInput(input, 'tsv', textRecords(2000))
    await buildStore({
      inputs: [input],
      format: 'tsv',
      cluster: await loadCluster(path),
      store: 'st',
      output: join(tmp.dir, 'single-b'),
      version: 1,
      workers: 1,
      layout: 'nodes',
    })
    await single.install('st', join(tmp.dir, 'single-b', 'node-0'), { swap: true })
  })

  test('no token, or a wrong one: 401', async () => {
    const none = await nodeOf().request('/admin/stores/st/dump/entries')
    expect(none.status).toBe(401)
    const wrong = await nodeOf().request('/admin/stores/st/dump/keys', { headers: { authorization: 'Bearer nope' } })
    expect(wrong.status).toBe(401)
    expect(json<{ error: { code: string } }>(wrong).error.code).toBe('RO_UNAUTHORIZED')
  })

  test('partitions the node does not hold are refused, naming them', async () => {
    const r = await nodeOf().request('/admin/stores/st/dump/entries?partitions=0,999', { headers: { authorization: `Bearer ${token}` } })
    expect(r.status).toBe(400)
    expect(json<{ error: { message: string } }>(r).error.message).toMatch(/does not hold partition 999 of store st version \d+; it holds /)
  })

  test('keys in JSON lines: every key once, an end frame that adds up', async () => {
    const node = nodeOf()
    const d = await openNodeDump(
      { id: 0, host: '127.0.0.1', port: node.port, partitions: [] },
      { store: 'st', keysOnly: true, framing: 'jsonl', token },
    )
    let keys = 0
    let end: unknown
    for (;;) {
      const r = await d.frames.next()
      if (r.done) {
        end = r.value
        break
      }
      if (r.value.type === 'key') keys++
      if (r.value.type === 'entry') throw new Error('a value in a keys-only stream')
    }
    expect(keys).toBeGreaterThan(0)
    expect(end).toMatchObject({ records: keys, store: 'st', version: d.head.version })
  })

  test('a client that disconnects midway frees the files it held', async () => {
    const node = nodeOf()
    const pid = node.child.pid as number
    // The live reader may hold its data files for its cold reads (opened at the first one,
    // closed with the reader): at most one descriptor per file. The streams of the tests
    // before may still be closing theirs: start once no file is open twice.
    const once = (files: string[]): boolean => new Set(files).size === files.length
    await waitUntil(async () => once(await openVersionFiles(pid)), 10_000)
    const held = (await openVersionFiles(pid)).sort()
    expect(once(held)).toBe(true)
    expect(held.every((f) => f.endsWith('.data'))).toBe(true)
    const req = httpRequest({
      host: '127.0.0.1',
      port: node.port,
      path: '/admin/stores/st/dump/entries?maxBytesPerSec=100000',
      headers: { authorization: `Bearer ${token}` },
    })
    const res = await new Promise<import('node:http').IncomingMessage>((resolve) => req.on('response', resolve).end())
    expect(res.statusCode).toBe(200)
    await new Promise((resolve) => res.once('data', resolve))
    // Mid-stream: the dump's own descriptors of the version's files are open where the route runs (the supervisor with workers).
    expect((await openVersionFiles(pid)).length).toBeGreaterThan(held.length)
    req.destroy()
    const same = async (): Promise<boolean> => JSON.stringify((await openVersionFiles(pid)).sort()) === JSON.stringify(held)
    for (let i = 0; !(await same()); i++) {
      if (i > 500) throw new Error(`files still open: ${(await openVersionFiles(pid)).join(', ')}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })
})

/** The inode of the server side of a loopback TCP connection (/proc/net/tcp), by the client's port. */
async function serverSocketInode(serverPort: number, clientPort: number): Promise<string | undefined> {
  const hex = (n: number): string => n.toString(16).toUpperCase().padStart(4, '0')
  const lines = (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)
  for (const line of lines) {
    const f = line.trim().split(/\s+/)
    if (f[1]?.endsWith(`:${hex(serverPort)}`) && f[2]?.endsWith(`:${hex(clientPort)}`)) return f[9]
  }
  return undefined
}

/** Pids among `pids` that hold the socket with this inode. */
async function holders(inode: string, pids: readonly number[]): Promise<number[]> {
  const out: number[] = []
  for (const pid of pids) {
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [])) {
      if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === `socket:[${inode}]`) out.push(pid)
    }
  }
  return out
}

describe('streams of a node with serving workers', () => {
  test("leave from the supervisor on the client's own connection, which closes after the stream", async () => {
    const node = tc.nodes[0] as NodeProcess
    const supervisor = node.child.pid as number
    const children = (await readFile(`/proc/${supervisor}/task/${supervisor}/children`, 'utf8')).trim().split(/\s+/).map(Number)
    expect(children.length).toBe(2)
    const agent = new Agent({ keepAlive: true })
    const req = httpRequest({
      host: '127.0.0.1',
      port: node.port,
      agent,
      path: '/admin/stores/st/dump/entries?maxBytesPerSec=1000000',
      headers: { authorization: `Bearer ${token}` },
    })
    const res = await new Promise<import('node:http').IncomingMessage>((resolve) => req.on('response', resolve).end())
    expect(res.statusCode).toBe(200)
    expect(res.headers.connection).toBe('close')
    await new Promise((resolve) => res.once('data', resolve))
    // Mid-stream, the server side of this very connection is held by the supervisor alone:
    // the worker that accepted it passed it on and relays nothing.
    const inode = await serverSocketInode(node.port, req.socket?.localPort as number)
    expect(inode).toBeDefined()
    expect(await holders(inode as string, [supervisor, ...children])).toEqual([supervisor])
    const closed = new Promise((resolve) => res.socket.once('close', resolve))
    let bytes = 0
    res.on('data', (c: Buffer) => (bytes += c.length))
    await new Promise((resolve) => res.once('end', resolve))
    await closed
    expect(bytes).toBeGreaterThan(0)
    // Reads and the admin API on the same agent carry on, on new connections to the workers.
    expect((await node.request('/status')).status).toBe(200)
    agent.destroy()
  })
})

describe('one version per dump while pushes and swaps happen', () => {
  test('a stream keeps reading its version after retention deleted it', async () => {
    const input = join(tmp.dir, 'pin.tsv')
    const big = Array.from({ length: 3000 }, (_, i) => [`p-${i}`, `v-old-${i}-${'y'.repeat(8000)}`] as [string, string])
    await writeTextInput(input, 'tsv', big)
    const old = nextVersion++
    await build({ input, format: 'tsv', version: old, compression: 'none' }, join(tmp.dir, 'pin-old'))
    await installEverywhere(join(tmp.dir, 'pin-old'))
    const node = tc.nodes[1] as NodeProcess
    const d = await openNodeDump({ id: 1, host: '127.0.0.1', port: node.port, partitions: [] }, { store: 'st', token })
    expect(d.head.version).toBe(old)
    await d.frames.next()
    // Two pushes: with --keep-versions 1 the second one deletes the version being streamed.
    for (let k = 0; k < 2; k++) {
      const v = nextVersion++
      await writeTextInput(`${input}.${v}`, 'tsv', [[`p-0`, `v-${v}`]])
      await build({ input: `${input}.${v}`, format: 'tsv', version: v, compression: 'none' }, join(tmp.dir, `pin-${v}`))
      await installEverywhere(join(tmp.dir, `pin-${v}`))
    }
    for (let i = 0; ; i++) {
      const listed = json<{ versions: { version: number }[] }>(await node.admin('GET', '/stores/st/versions'))
      if (!listed.versions.some((x) => x.version === old)) break
      if (i > 500) throw new Error('retention never deleted the old version')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(existsSync(join(tmp.dir, 'data-1', 'st', `version-${old}`))).toBe(false)
    let records = 0
    const receivedAtDeletion = d.received()
    for (;;) {
      const r = await d.frames.next()
      if (r.done) {
        expect(r.value.version).toBe(old)
        expect(r.value.records).toBe(records + 0)
        break
      }
      if (r.value.type === 'entry') {
        records++
        expect(r.value.value.toString('latin1')).toMatch(/^v-old-/)
      }
    }
    // The deletion happened mid-stream: most of the bytes came after it.
    expect(d.received()).toBeGreaterThan(receivedAtDeletion * 2)
  })

  test('a cluster dump during a push gives exactly one version, named by every end frame', async () => {
    const before = nextVersion - 1
    const v = nextVersion++
    const input = join(tmp.dir, 'during.tsv')
    await writeTextInput(
      input,
      'tsv',
      Array.from({ length: 2000 }, (_, i) => [`p-${i}`, `v-${v}-${i}`] as [string, string]),
    )
    await build({ input, format: 'tsv', version: v, compression: 'none' }, join(tmp.dir, 'during'))
    const values: string[] = []
    const collect = { write: (_k: Buffer, val: Buffer | undefined) => void values.push(val?.toString('latin1') ?? '') }
    const [summary] = await Promise.all([
      dumpCluster({ cluster, store: 'st', token, tmpDir: tmp.dir }, () => Promise.resolve(collect)),
      installEverywhere(join(tmp.dir, 'during')),
    ])
    expect([before, v]).toContain(summary.version)
    const prefix = summary.version === v ? `v-${v}-` : 'v-'
    expect(values.every((x) => x.startsWith(prefix))).toBe(true)
    expect(values.length).toBe(summary.version === v ? 2000 : 1)
  })
})

describe('diff on the cluster', () => {
  test('live vs the retained version, and a new build vs live', async () => {
    const x = nextVersion++
    const y = nextVersion++
    const keys = (n: number, val: (i: number) => string) => Array.from({ length: n }, (_, i) => [`q-${i}`, val(i)] as [string, string])
    // x: q-0..q-1499; y: q-0..q-1999 with every 3rd of the first 1500 changed.
    const specs: [number, [string, string][]][] = [
      [x, keys(1500, (i) => `a${i}`)],
      [y, keys(2000, (i) => (i < 1500 && i % 3 === 0 ? `b${i}` : `a${i}`))],
    ]
    for (const [v, recs] of specs) {
      await writeTextInput(join(tmp.dir, `diff-${v}.tsv`), 'tsv', recs)
      await build({ input: join(tmp.dir, `diff-${v}.tsv`), format: 'tsv', version: v, compression: 'none' }, join(tmp.dir, `diff-${v}`))
      await installEverywhere(join(tmp.dir, `diff-${v}`))
    }
    const changed: string[] = []
    const counts = await diffSides(
      clusterSide({ cluster, store: 'st', version: x, token }),
      clusterSide({ cluster, store: 'st', token }),
      (kind, key) => {
        if (kind === 'changed') changed.push(key.toString())
      },
    )
    expect(counts).toEqual({ added: 500, removed: 0, changed: 500, unchanged: 1000 })
    expect(changed.every((k) => Number(k.slice(2)) % 3 === 0)).toBe(true)
    // The same through the CLI, with the keys listed.
    const cli = await promisify(execFile)(
      process.execPath,
      [cliPath(), 'diff', '--cluster', tc.clusterFile, '--store', 'st', '--old', String(x), '--new', 'live', '--keys', '--json'],
      { env: { ...process.env, ROSTORE_ADMIN_TOKEN: token }, maxBuffer: 16 << 20 },
    )
    const lines = cli.stdout.trim().split('\n')
    expect(JSON.parse(lines.pop() as string)).toEqual(counts)
    expect(lines.filter((l) => l.startsWith('~ ')).sort()).toEqual(changed.map((k) => `~ ${k}`).sort())
    expect(lines.filter((l) => l.startsWith('+ ')).length).toBe(500)
    // Tonight's build against what is live: only the build's changes show.
    const z = nextVersion++
    await writeTextInput(
      join(tmp.dir, 'diff-z.tsv'),
      'tsv',
      keys(1999, (i) => (i < 1500 && i % 3 === 0 ? `b${i}` : i === 7 ? 'c' : `a${i}`)),
    )
    await build({ input: join(tmp.dir, 'diff-z.tsv'), format: 'tsv', version: z, compression: 'none' }, join(tmp.dir, 'diff-z'))
    expect(await diffSides(clusterSide({ cluster, store: 'st', token }), buildSide(join(tmp.dir, 'diff-z')))).toEqual({
      added: 0,
      removed: 1,
      changed: 1,
      unchanged: 1998,
    })
  })
})

describe('a node down', () => {
  test('its partitions come from the replicas', async () => {
    const input = join(tmp.dir, 'down.tsv')
    const v = nextVersion++
    await writeTextInput(
      input,
      'tsv',
      Array.from({ length: 2000 }, (_, i) => [`d-${i}`, `${i}`] as [string, string]),
    )
    await build({ input, format: 'tsv', version: v, compression: 'none' }, join(tmp.dir, 'down'))
    await installEverywhere(join(tmp.dir, 'down'))
    await (tc.nodes[2] as NodeProcess).kill9()
    const keys = new Set<string>()
    const failovers: number[] = []
    const summary = await dumpCluster({ cluster, store: 'st', token, tmpDir: tmp.dir, onFailover: (e) => failovers.push(e.node) }, () =>
      Promise.resolve({ write: (k: Buffer) => void keys.add(k.toString()) }),
    )
    expect(summary.version).toBe(v)
    expect(keys.size).toBe(2000)
    expect(failovers).toEqual([2])
    const node2Partitions = cluster.nodes.find((n) => n.id === 2)?.partitions ?? []
    for (const p of node2Partitions) expect(summary.servedBy.get(p)).not.toBe(2)
  })

  test('with every replica of a partition down, the dump fails and writes nothing', async () => {
    await (tc.nodes[1] as NodeProcess).kill9()
    const err = await dumpTo('jsonl', join(tmp.dir, 'none.jsonl')).catch((e: unknown) => e)
    expect(isStoreError(err, 'RO_UNAVAILABLE')).toBe(true)
    expect(existsSync(join(tmp.dir, 'none.jsonl'))).toBe(false)
  })
})
