import { join } from 'node:path'
import { nativeFunctions, type LookupChunkSpec, type LookupPartitions } from '../../../../common/native'
import { readMetadata } from '../../../../formats/store/layout/metadata-io'
import { chunkGeometry, slotFileNames } from '../../../../formats/store/layout/partition-files'
import { slotCount } from '../../../../formats/store/layout/slots'
import type { StoreOps } from '../../../../formats/store/read/store-ops'
import { jsStoreOps } from '../../../../testkit/js-twins/store-ops'
import { makeBuildOutput, makePartitionedNodeDir } from '../../../../testkit/stores/make-partitioned'
import { makeTmp } from '../../../../testkit/stores/tmp'

/** The addon's createLookup with a partition geometry (format 2) against its JavaScript twin. */
const tmp = makeTmp()
afterAll(tmp.cleanup)

const native = nativeFunctions()
const IMPLS: [string, StoreOps][] = [...(native ? [['native', native] as [string, StoreOps]] : []), ['js', jsStoreOps]]
const KEYS = Array.from({ length: 900 }, (_, i) => `key-${i}`)

let dir: string
beforeAll(async () => {
  const build = tmp.fresh()
  const manifest = await makeBuildOutput(
    build,
    KEYS.map((k, i) => [k, `value ${i}`]),
    { chunks: 3 },
  )
  dir = tmp.fresh()
  await makePartitionedNodeDir(build, manifest, 2, dir)
})

async function lookupOf(ops: StoreOps, partitions?: Partial<LookupPartitions>) {
  const meta = await readMetadata(dir)
  const g = chunkGeometry(meta)
  const chunks: LookupChunkSpec[] = []
  for (let s = 0; s < slotCount(meta); s++) {
    const names = slotFileNames(meta, s)
    const index = await ops.mapFile(join(dir, names.index), false, 65536)
    const data = await ops.mapFile(join(dir, names.data), true, 65536)
    chunks.push({
      index: index.windows,
      count: meta.chunkRecords[s] as number,
      data: data.windows,
      dataSize: data.size,
      radix: null,
      radixBits: 0,
      resident: null,
      indexCrcs: null,
    })
  }
  const spec = { count: g.partitionCount as number, slots: g.slots as Int32Array, chunks: g.chunks, ...partitions }
  return ops.createLookup({
    chunks,
    key: Buffer.alloc(256),
    out: new Float64Array(8),
    binary: false,
    checkCrc: true,
    collideBits: -1,
    partitions: spec,
  })
}

function batch(keys: readonly string[]): { bytes: Buffer; ends: Uint32Array } {
  let end = 0
  return { bytes: Buffer.from(keys.join('')), ends: Uint32Array.from(keys, (k) => (end += Buffer.byteLength(k))) }
}

test('native and JS answer a batch across partitions alike: status, slot, offset and length per key', async () => {
  const keys = [...KEYS].reverse().concat(['absent-1', 'absent-2', ''])
  const { bytes, ends } = batch(keys)
  const results = await Promise.all(
    IMPLS.map(async ([, ops]) => {
      const out = new Float64Array(4 * keys.length)
      ;(await lookupOf(ops)).getMany(bytes, ends, keys.length, out)
      return Array.from(out)
    }),
  )
  const statuses = Array.from({ length: keys.length }, (_, i) => results[0]![4 * i])
  const meta = await readMetadata(dir)
  expect(statuses.filter((s) => s === 1).length).toBe(meta.records)
  expect(statuses.filter((s) => s === 0).length).toBe(keys.length - meta.records)
  for (const r of results) expect(r).toEqual(results[0])
})

test.each(IMPLS)('%s: a malformed partition geometry is refused when the lookup is made', async (_name, ops) => {
  await expect(lookupOf(ops, { slots: Int32Array.from([0, 1, 2, 3, 4, 5]) })).rejects.toThrow(/bad spec/)
  await expect(lookupOf(ops, { count: 5 })).rejects.toThrow(/bad spec/)
  await expect(lookupOf(ops, { chunks: 5 })).rejects.toThrow(/bad spec/)
})
