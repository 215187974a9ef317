import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStore } from '../../../builder/engines/local/build-job'
import { parseCluster } from '../../../cluster/cluster'
import { planSplits } from '../../../formats/input/splits'
import { openStore } from '../../../formats/store/read/store-reader'
import { verifyStore } from '../../../formats/store/scan/verify'
import { PARQUET_CODECS, trickyRows, writeTrickyParquet } from '../../../testkit/stores/parquet-fixtures'
import { writeWithPyarrow } from '../../../testkit/stores/pyarrow-fixtures'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * Stores built from Parquet and Arrow as independent writers produce them: DuckDB in every
 * codec and page version, pyarrow Parquet with v2 data pages and Arrow IPC files. Every
 * key is read back from the store with its exact value, and the files are byte-identical
 * whatever the split size and worker count.
 */
jest.setTimeout(300_000)
const tmp = makeTmp('rostore-columnar-')
afterAll(tmp.cleanup)
const cluster = parseCluster({ name: 'one', nodes: [{ id: 0, host: '127.0.0.1', port: 7000, partitions: [0, 1, 2] }] })
const rows = trickyRows(4000)
let seq = 0

async function build(input: string, format: 'parquet' | 'arrow', workers = 2, memoryMb?: number): Promise<string> {
  const output = join(tmp.dir, `out-${seq++}`)
  await buildStore({ inputs: [input], format, cluster, store: 'st', output, version: 1, replication: 1, chunks: 3, workers, memoryMb })
  return output
}

async function expectEveryValue(output: string): Promise<void> {
  // One node at R=1: the whole (format-2) build output is its store.
  const node = output
  const reader = await openStore(node)
  try {
    expect(reader.metadata.records).toBe(rows.length)
    expect(reader.metadata.valueSerializer).toBe('string')
    for (const r of rows) {
      const got = reader.get(r.key)
      if (got?.toString('utf8') !== (r.value ?? ''))
        throw new Error(`key ${JSON.stringify(r.key)}: ${JSON.stringify(got?.toString())} in the store`)
    }
    expect(reader.get('absent')).toBeUndefined()
  } finally {
    reader.close()
  }
  await verifyStore(node)
}

function files(output: string): Map<string, Buffer> {
  const dir = output
  return new Map(
    readdirSync(dir)
      .sort()
      .map((f) => [f, readFileSync(join(dir, f))]),
  )
}

describe.each(PARQUET_CODECS.flatMap((codec) => (['v1', 'v2'] as const).map((version) => [codec, version] as const)))(
  'a store from DuckDB Parquet, %s, %s',
  (codec, version) => {
    it('holds every value exactly', async () => {
      const input = await writeTrickyParquet(join(tmp.dir, `in-${codec}-${version}.parquet`), rows, { codec, version, rowGroupSize: 2048 })
      await expectEveryValue(await build(input, 'parquet'))
    })
  },
)

it('a store from pyarrow Parquet with data pages v2 (ZSTD) holds every value exactly', async () => {
  const input = writeWithPyarrow(join(tmp.dir, 'in-pa.parquet'), rows, {
    kind: 'parquet',
    codec: 'zstd',
    dataPageVersion: '2.0',
    rowGroupSize: 500,
  })
  await expectEveryValue(await build(input, 'parquet'))
})

it('a store from a pyarrow Arrow IPC file (dictionary, large strings) holds every value exactly', async () => {
  const input = writeWithPyarrow(join(tmp.dir, 'in-pa.arrow'), rows, { kind: 'arrow-file', dictionary: true, large: true, batchRows: 500 })
  await expectEveryValue(await build(input, 'arrow'))
})

it.each(['parquet', 'arrow'] as const)('%s: byte-identical files whatever the splits and workers', async (format) => {
  // Large enough (> 8 MiB, the smallest split) to be read as several splits.
  const many = trickyRows(300_000)
  const input =
    format === 'parquet'
      ? await writeTrickyParquet(join(tmp.dir, 'split.parquet'), many, { rowGroupSize: 4096, codec: 'uncompressed' })
      : writeWithPyarrow(join(tmp.dir, 'split.arrow'), many, { kind: 'arrow-file', batchRows: 4096 })
  expect((await planSplits([input], format, 8 << 20)).length).toBeGreaterThan(1)
  // One worker reads every split in turn; two share them and spill runs (1 MiB budget).
  const a = files(await build(input, format, 1))
  const b = files(await build(input, format, 2, 1))
  expect([...b.keys()]).toEqual([...a.keys()])
  for (const [name, bytes] of a) expect(b.get(name)!.equals(bytes)).toBe(true)
})
