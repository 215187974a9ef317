import type Redis from 'ioredis'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import type { BuildOptions } from '../../../builder/build-options'
import { buildSide, diffSides } from '../../../client/dump/diff'
import { dumpBuild } from '../../../client/dump/dump'
import { columnsFor, createOutput } from '../../../client/dump/dump-output'
import { parseCluster } from '../../../cluster/cluster'
import { nativeFunctions } from '../../../common/native'
import { codecByName } from '../../../formats/store/chunk/codec'
import { DICTIONARY_FILE, zstdDecoder } from '../../../formats/store/chunk/dictionary-file'
import { readManifest } from '../../../formats/store/layout/manifest-io'
import { openStore } from '../../../formats/store/read/store-reader'
import { startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { writeInput } from '../../../testkit/stores/input-files'
import { realisticRecords, valueShapes } from '../../../testkit/stores/realistic-values'
import { makeTmp } from '../../../testkit/stores/tmp'
import { connectIoredis } from '../../../testkit/net/redis-cli'

/**
 * Every codec carries every value shape (empty, 1 byte, incompressible, 64 KiB, 4 MiB)
 * through the build, the reader, HTTP (plain and stored), RESP, and a dump rebuilt into
 * the same files, which diff finds equal to the original. One node serves a store per codec.
 */
jest.setTimeout(180_000)
const TOKEN = 'codec-round-trip-admin-token-0123456789'
const native = nativeFunctions() !== undefined

interface Variant {
  readonly store: string
  readonly build: Partial<BuildOptions>
}

const VARIANTS: readonly Variant[] = [
  { store: 'none', build: { compression: 'none' } },
  { store: 'gzip', build: { compression: 'gzip' } },
  { store: 'snappy', build: { compression: 'snappy' } },
  // zstd compresses through the addon only (readers fall back to JavaScript).
  ...(native
    ? [
        { store: 'zstd-dict', build: { compression: 'zstd' as const } },
        { store: 'zstd-plain', build: { compression: 'zstd' as const, dictionary: false } },
      ]
    : []),
]

describe('every codec, every value shape, every way in and out', () => {
  const tmp = makeTmp('rostore-codecs-')
  const shapes = valueShapes()
  const recs = [...realisticRecords(31, 1500, 'r-'), ...shapes]
  // The layout of startSingleNode's cluster file: node 0 holding partitions 0 and 1.
  const cluster = parseCluster({ name: 'test-cluster', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0, 1] }] })
  const input = join(tmp.dir, 'in.tsv')
  const opts = (store: string, output: string, o: Partial<BuildOptions>): BuildOptions => ({
    inputs: [input],
    format: 'tsv',
    cluster,
    store,
    output,
    version: 2,
    chunks: 2,
    workers: 1,
    memoryMb: 64,
    ...o,
  })
  let node: NodeProcess
  let redis: Redis

  beforeAll(async () => {
    await writeInput(input, 'tsv', recs)
    node = await startSingleNode({ dir: tmp.dir, token: TOKEN, workers: 1, extraArgs: ['--resp-port', '0'] })
    for (const v of VARIANTS) {
      const out = join(tmp.dir, `out-${v.store}`)
      await buildStore(opts(v.store, out, v.build))
      await node.install(v.store, out, { swap: true })
    }
    redis = await connectIoredis(node.respPort!)
  })
  afterAll(async () => {
    redis?.disconnect()
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test.each(VARIANTS.map((v) => [v.store, v] as const))('%s', async (_name, v) => {
    const out = join(tmp.dir, `out-${v.store}`)
    const m = await readManifest(out)
    const dictionary = await node.request(`/stores/${v.store}/dictionary`)
    const decoder =
      m.compression === 'zstd' ? await zstdDecoder(dictionary.status === 200 ? dictionary.body : undefined) : codecByName(m.compression)
    expect(dictionary.status).toBe(m.dictionary === undefined ? 404 : 200)
    const reader = await openStore(out)
    try {
      for (const [k, value] of [...shapes, ...recs.slice(0, 20)]) {
        const want = Buffer.from(value)
        expect({ k, reader: reader.get(k)?.equals(want) }).toEqual({ k, reader: true })
        const http = await node.request(`/stores/${v.store}/keys/${k}`)
        expect({ k, http: http.status === 200 && http.body.equals(want) }).toEqual({ k, http: true })
        const stored = await node.request(`/stores/${v.store}/keys/${k}?values=stored`)
        expect({ k, stored: decoder.decode(stored.body).equals(want) }).toEqual({ k, stored: true })
        const resp = await redis.getBuffer(`${v.store}:${k}`)
        expect({ k, resp: resp?.equals(want) }).toEqual({ k, resp: true })
      }
    } finally {
      reader.close()
    }

    // Dump, rebuild from the dump (with the version's own dictionary), same files; diff equal.
    const dumped = join(tmp.dir, `dump-${v.store}.arrow`)
    const sink = await createOutput(dumped, 'arrow', columnsFor('string', 'string', false))
    await dumpBuild({ dir: out }, () => Promise.resolve(sink))
    await sink.commit()
    const rebuilt = join(tmp.dir, `rebuilt-${v.store}`)
    const again = { ...v.build, ...(m.dictionary ? { zstdDictionary: join(out, DICTIONARY_FILE) } : {}) }
    await buildStore(opts(v.store, rebuilt, { ...again, inputs: [dumped], format: 'arrow' }))
    expect((await readManifest(rebuilt)).partitionFiles).toEqual(m.partitionFiles)
    expect(await diffSides(buildSide(out), buildSide(rebuilt))).toEqual({ added: 0, removed: 0, changed: 0, unchanged: recs.length })
  })
})
