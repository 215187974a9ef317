import { execFile } from 'node:child_process'
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { crc32 } from 'node:zlib'
import { tableFromIPC } from 'apache-arrow'
import { pushStore } from '../../../client/push/push-store'
import { dumpBuild, dumpCluster, type DumpInfo } from '../../../client/dump/dump'
import { NodeClient } from '../../../client/node-client'
import { DecompressingReads, ValueDecoders } from '../../../client/stored-reads'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StoreClient } from '../../../client/store-client'
import { loadCluster, type Cluster } from '../../../cluster/cluster'
import { isStoreError } from '../../../common/errors'
import { nativeFunctions } from '../../../common/native'
import { cliPath } from '../../../common/paths'
import { xxh64Hex } from '../../../formats/store/chunk/checksum'
import { zstdDecoder } from '../../../formats/store/chunk/dictionary-file'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { openStore } from '../../../formats/store/read/store-reader'
import { parquetMetadata } from '../../../formats/input/parquet/hyparquet'
import { decodeValues, encodeKeys } from '../../../formats/wire/multiget'
import { buildVersion } from '../../../testkit/cluster/build-version'
import { json, startCluster, type TestCluster } from '../../../testkit/cluster/node-process'
import { realisticRecords, valueShapes } from '../../../testkit/stores/realistic-values'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * Values sent as the version stores them (`?values=stored`, docs/API.md "Compressed
 * values"): a zstd version with a trained dictionary on two nodes (replication 2). The
 * nodes answer the stored frames with the codec and the dictionary's checksum; the
 * routing client with `decompress: 'client'` fetches the dictionary once and decompresses
 * every value shape itself; a frame damaged on one node is corrupt there and read from the
 * other; dumps carry the stored values and the dictionary.
 */
jest.setTimeout(180_000)
const TOKEN = 'stored-values-admin-token-0123456789'
const describeNative = nativeFunctions() ? describe : describe.skip

describeNative('stored values of a zstd version', () => {
  const tmp = makeTmp('rostore-stored-values-')
  // Every value shape: empty, one byte, incompressible, 64 KiB, 4 MiB.
  const recs = [...realisticRecords(23, 3000, 'key-'), ...valueShapes()]
  const want = new Map(recs)
  let nodes: TestCluster
  let cluster: Cluster
  let out: string

  beforeAll(async () => {
    nodes = await startCluster({ dir: tmp.dir, nodes: 2, partitionsPerNode: 2, token: TOKEN })
    cluster = await loadCluster(nodes.clusterFile)
    out = await buildVersion({ dir: tmp.dir, cluster, version: 1, records: recs, compression: 'zstd', output: join(tmp.dir, 'out') })
    expect((await pushStore({ cluster, store: 'st', from: out, adminToken: TOKEN })).status).toBe('live')
  })
  afterAll(async () => {
    await nodes?.killAll()
    tmp.cleanup()
  })

  /** The dictionary checksum the build wrote into the version's metadata. */
  async function builtChecksum(): Promise<string> {
    const checksum = (await readManifest(out)).dictionary?.checksum
    expect(checksum).toMatch(/^[0-9a-f]{16}$/)
    return checksum as string
  }

  test('a get with ?values=stored answers the stored frame, its codec and dictionary; the dictionary route serves the bytes', async () => {
    const checksum = await builtChecksum()
    const node = nodes.nodes[0]!
    const dict = await node.request('/stores/st/dictionary')
    expect(dict.status).toBe(200)
    expect(dict.headers['x-rostore-dictionary']).toBe(checksum)
    expect(await xxh64Hex(dict.body)).toBe(checksum)
    const codec = await zstdDecoder(dict.body)
    const reader = await openStore(out)
    try {
      for (const [k, v] of [...recs.slice(0, 40), ...recs.slice(-5)]) {
        const r = await node.request(`/stores/st/keys/${encodeURIComponent(k)}?values=stored`)
        expect(r.status).toBe(200)
        expect(r.headers['x-rostore-compression']).toBe('zstd')
        expect(r.headers['x-rostore-dictionary']).toBe(checksum)
        // The bytes of the build's own record, not a second compression.
        expect(r.body.equals(reader.getStored(k)!)).toBe(true)
        expect(codec.decode(r.body).toString()).toBe(v)
        const plain = await node.request(`/stores/st/keys/${encodeURIComponent(k)}?values=plain`)
        expect(plain.body.toString()).toBe(v)
        expect(plain.headers['x-rostore-compression']).toBeUndefined()
      }
    } finally {
      reader.close()
    }
    expect((await node.request('/stores/st/keys/absent?values=stored')).status).toBe(404)
    for (const bad of ['values=gzip', 'values=stored&values=plain', 'values=']) {
      const r = await node.request(`/stores/st/keys/key-1?${bad}`)
      expect(r.status).toBe(400)
      expect(json<{ error: { code: string } }>(r).error.code).toBe('RO_BAD_REQUEST')
    }
  })

  test('a multi-get with ?values=stored answers stored frames in the windowed path too', async () => {
    const dict = await nodes.nodes[1]!.request('/stores/st/dictionary')
    const codec = await zstdDecoder(dict.body)
    // 600 keys: more than one batch of the node's windowed path, with an absent one in the middle.
    const keys = [...recs.slice(0, 300).map(([k]) => k), 'absent', ...recs.slice(-300).map(([k]) => k)]
    const r = await nodes.nodes[1]!.request('/stores/st/multi-get?values=stored', { method: 'POST', body: encodeKeys(keys) })
    expect(r.status).toBe(200)
    expect(r.headers['x-rostore-dictionary']).toBe(await builtChecksum())
    const values = decodeValues(r.body, keys.length)
    expect(values.map((v, i) => (v === undefined ? undefined : codec.decode(v).toString()) === want.get(keys[i]!))).toEqual(
      keys.map(() => true),
    )
    expect(values[300]).toBeUndefined()
  })

  test('the dump dictionary route wants the admin token, validates its query and names no path', async () => {
    const node = nodes.nodes[0]!
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } }
    expect((await node.request('/admin/stores/st/dump/dictionary')).status).toBe(401)
    expect((await node.request('/admin/stores/st/dump/dictionary', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401)
    const ok = await node.request('/admin/stores/st/dump/dictionary?version=1', auth)
    expect(ok.status).toBe(200)
    expect(await xxh64Hex(ok.body)).toBe(await builtChecksum())
    for (const [query, status] of [
      ['?version=99', 404],
      ['?version=..%2F..%2Fetc', 400],
      ['?version=-1', 400],
      ['?file=zstd.dict', 400],
    ] as const) {
      const r = await node.request(`/admin/stores/st/dump/dictionary${query}`, auth)
      expect([query, r.status]).toEqual([query, status])
      expect(r.body.toString()).not.toContain(tmp.dir)
    }
    expect((await node.request('/admin/stores/nope/dump/dictionary', auth)).status).toBe(404)
    // A store this node does not serve: the read routes' 421, as for a key of it.
    expect((await node.request('/stores/nope/dictionary')).status).toBe((await node.request('/stores/nope/keys/k')).status)
  })

  test("the routing client with decompress 'client' reads every value shape, by get and getMany", async () => {
    await expect(StoreClient.connect({ cluster, store: 'st', decompress: 'client', transport: 'resp' })).rejects.toMatchObject({
      code: 'RO_BAD_OPTION',
    })
    const client = await StoreClient.connect({ cluster, store: 'st', decompress: 'client' })
    try {
      expect(client.transport).toBe('http')
      const keys = recs.map(([k]) => k)
      const many = await client.getMany(keys)
      expect(keys.filter((k, i) => many[i]?.toString() !== want.get(k))).toEqual([])
      for (const [k, v] of recs.slice(-5)) expect((await client.get(k))?.toString()).toBe(v)
      expect(await client.get('absent')).toBeUndefined()
      expect(client.stats().failovers).toBe(0)
    } finally {
      client.close()
    }
  })

  test("an uncompressed store: stored values are the values, no dictionary, and decompress 'client' reads them", async () => {
    const few = recs.slice(0, 200)
    const plainOut = await buildVersion({ dir: tmp.dir, cluster, version: 1, records: few, store: 'pl', output: join(tmp.dir, 'out-pl') })
    expect((await pushStore({ cluster, store: 'pl', from: plainOut, adminToken: TOKEN })).status).toBe('live')
    const node = nodes.nodes[0]!
    const none = await node.request('/stores/pl/dictionary')
    expect([none.status, json<{ error: { code: string } }>(none).error.code]).toEqual([404, 'RO_NOT_FOUND'])
    const r = await node.request(`/stores/pl/keys/${few[0]![0]}?values=stored`)
    expect([r.headers['x-rostore-compression'], r.headers['x-rostore-dictionary'], r.body.toString()]).toEqual([
      'none',
      undefined,
      few[0]![1],
    ])
    const client = await StoreClient.connect({ cluster, store: 'pl', decompress: 'client' })
    try {
      const got = await client.getMany(few.map(([k]) => k))
      expect(few.filter(([, v], i) => got[i]?.toString() !== v)).toEqual([])
    } finally {
      client.close()
    }
  })

  test('dumps carry the stored values and the dictionary, from the cluster and from the build', async () => {
    const checksum = await builtChecksum()
    const collect = async (run: (prepare: (i: DumpInfo) => Promise<{ write: (k: Buffer, v?: Buffer) => void }>) => Promise<unknown>) => {
      const got = new Map<string, Buffer>()
      let info: DumpInfo | undefined
      await run(async (i) => {
        info = i
        return { write: (k, v) => void got.set(k.toString(), Buffer.from(v!)) }
      })
      return { got, info: info! }
    }
    const fromCluster = await collect((p) => dumpCluster({ cluster, store: 'st', token: TOKEN, tmpDir: tmp.dir, storedValues: true }, p))
    const fromBuild = await collect((p) => dumpBuild({ dir: out, storedValues: true }, p))
    for (const { got, info } of [fromCluster, fromBuild]) {
      expect(info.stored?.compression).toBe('zstd')
      expect(info.stored?.dictionary?.checksum).toBe(checksum)
      const codec = await zstdDecoder(info.stored!.dictionary!.bytes)
      expect(got.size).toBe(recs.length)
      expect(recs.filter(([k, v]) => codec.decode(got.get(k)!).toString() !== v).map(([k]) => k)).toEqual([])
    }
    // Stored, so smaller than the values they decompress to.
    const storedBytes = [...fromCluster.got.values()].reduce((s, v) => s + v.length, 0)
    expect(storedBytes).toBeLessThan(recs.reduce((s, [, v]) => s + v.length, 0))
  })

  test('rostore dump --stored-values writes the stored values, names the codec in the file and puts the dictionary beside it', async () => {
    const run = promisify(execFile)
    const base = ['dump', '--cluster', nodes.clusterFile, '--store', 'st', '--admin-token', TOKEN, '--stored-values']
    const arrow = join(tmp.dir, 'stored.arrow')
    await run(process.execPath, [cliPath(), ...base, '--format', 'arrow', '--output', arrow])
    const dictBytes = readFileSync(`${arrow}.zstd.dict`)
    expect(await xxh64Hex(dictBytes)).toBe(await builtChecksum())
    const table = tableFromIPC(readFileSync(arrow))
    expect(table.schema.metadata.get('rostore.compression')).toBe('zstd')
    expect(table.schema.metadata.get('rostore.dictionary')).toBe(await builtChecksum())
    expect(table.schema.metadata.get('rostore.dictionary-file')).toBe('stored.arrow.zstd.dict')
    const codec = await zstdDecoder(dictBytes)
    const keys = table.getChild('key')!.toArray() as string[]
    const values = table.getChild('value')!.toArray() as Uint8Array[]
    expect(keys.length).toBe(recs.length)
    expect(keys.filter((k, i) => codec.decode(values[i]!).toString() !== want.get(k))).toEqual([])

    const parquet = join(tmp.dir, 'stored.parquet')
    await run(process.execPath, [cliPath(), ...base, '--format', 'parquet', '--output', parquet])
    const bytes = readFileSync(parquet)
    const meta = parquetMetadata(new Uint8Array(bytes))
    expect(meta.key_value_metadata).toEqual(expect.arrayContaining([{ key: 'rostore.compression', value: 'zstd' }]))
    expect(existsSync(`${parquet}.zstd.dict`)).toBe(true)

    const refused = await run(process.execPath, [cliPath(), ...base, '--format', 'jsonl', '--output', join(tmp.dir, 'x.jsonl')]).catch(
      (err: { stderr: string }) => err,
    )
    expect((refused as { stderr: string }).stderr).toMatch(/--stored-values writes compressed bytes: use --format arrow or parquet/)
    expect(existsSync(join(tmp.dir, 'x.jsonl'))).toBe(false)
  })

  test('a dictionary damaged on its way to the client is refused by its checksum (RO_CORRUPT), never used', async () => {
    // A relay in front of node 0 that flips one byte of every dictionary it passes on.
    const target = nodes.nodes[0]!
    const relay = createServer((req, res) => {
      void target.request(req.url ?? '/').then((r) => {
        const body = Buffer.from(r.body)
        if ((req.url ?? '').endsWith('/dictionary') && body.length > 0) body[body.length >> 1] = (body[body.length >> 1] as number) ^ 0xff
        const headers = Object.fromEntries(Object.entries(r.headers).filter(([k]) => k.startsWith('x-rostore-') || k === 'content-type'))
        res.writeHead(r.status, headers)
        res.end(body)
      })
    })
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
    const port = (relay.address() as AddressInfo).port
    const node = new NodeClient({ id: 0, host: '127.0.0.1', port, partitions: [0, 1] })
    try {
      await expect(node.dictionary('st')).rejects.toMatchObject({ code: 'RO_CORRUPT' })
      const reads = new DecompressingReads(node, new ValueDecoders())
      await expect(reads.get('st', 'key-1')).rejects.toMatchObject({ code: 'RO_CORRUPT' })
    } finally {
      node.close()
      relay.close()
    }
  })

  test("a frame damaged on one node (its record CRC rewritten to match) is corrupt there; decompress 'client' reads it from the other", async () => {
    const client = await StoreClient.connect({ cluster, store: 'st', decompress: 'client' })
    try {
      const key = recs.map(([k]) => k).find((k) => k.startsWith('key-') && client.replicasOf(k)[0] === 0)!
      expect(damageFrame(join(tmp.dir, 'data-0', 'st', 'version-1'), key)).toBe(true)
      // The node itself cannot decompress it either.
      const plain = await nodes.nodes[0]!.request(`/stores/st/keys/${key}`)
      expect(plain.status).toBe(422)
      expect(plain.body.toString()).not.toContain(tmp.dir)
      // A reader names the file and the value's offset, for the operator.
      const dir = join(tmp.dir, 'data-0', 'st', 'version-1')
      for (const access of ['mmap', 'pread'] as const) {
        const r = await openStore(dir, { access })
        try {
          expect(() => r.get(key)).toThrow(/p\d+-c\d+\.data: the zstd value at offset \d+ does not decompress/)
        } finally {
          r.close()
        }
      }
      expect((await client.get(key))?.toString()).toBe(want.get(key))
      expect((await client.getMany([key, 'key-1']))[0]?.toString()).toBe(want.get(key))
      expect(client.stats().corruptByNode).toEqual({ 0: 2 })
      // Without another replica the answer is the corruption, never a wrong value.
      const only = new NodeClient(cluster.nodes.find((n) => n.id === 0)!)
      const direct = await only.getStored('st', key)
      only.close()
      const codec = await zstdDecoder((await nodes.nodes[0]!.request('/stores/st/dictionary')).body)
      let err: unknown
      try {
        codec.decode(direct.value!)
      } catch (e) {
        err = e
      }
      expect(isStoreError(err, 'RO_CORRUPT')).toBe(true)
    } finally {
      client.close()
    }
  })
})

/**
 * Sets the reserved bit of the frame header of `key`'s stored value in the data files of
 * `dir` and rewrites the record's CRC to match: a frame that libzstd refuses, behind a
 * record that passes its checksum (what a bad writer would leave). Whether it was found.
 */
function damageFrame(dir: string, key: string): boolean {
  const want = Buffer.from(key)
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.data'))) {
    const bytes = readFileSync(join(dir, name))
    for (let at = 64; at + 12 <= bytes.length;) {
      const kl = bytes.readUInt32LE(at)
      const vl = bytes.readUInt32LE(at + 4)
      const k = bytes.subarray(at + 12, at + 12 + kl)
      if (k.equals(want) && vl > 0) {
        const value = Buffer.from(bytes.subarray(at + 12 + kl, at + 12 + kl + vl))
        value[0] = (value[0] as number) | 0x08
        const crc = Buffer.alloc(4)
        crc.writeUInt32LE(crc32(value, crc32(k)))
        const fd = openSync(join(dir, name), 'r+')
        try {
          writeSync(fd, crc, 0, 4, at + 8)
          writeSync(fd, value, 0, 1, at + 12 + kl)
        } finally {
          closeSync(fd)
        }
        return true
      }
      at += 12 + kl + vl
    }
  }
  return false
}
