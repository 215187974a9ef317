import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildRing } from '../../../../cluster/routing'
import { StoreError } from '../../../../common/errors'
import { dataFileName } from '../../../../formats/store/layout/layout'
import { openVersion, walkBatches, walkPartitions } from '../../../../formats/store/scan/partition-walk'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(() => tmp.cleanup())

/** A batch is a bounded burst of work: at most 64 KiB (or batchBytes) of keys and values, but for its last record. */
test.each([
  [undefined, 64 << 10, 40],
  [16 << 10, 16 << 10, 160],
])('walk batches (batchBytes %p) stop at %i bytes of records, and together hold every record once', async (batchBytes, bound, atLeast) => {
  const records: [string, string][] = Array.from({ length: 20_000 }, (_, i) => [`key-${i}`, 'v'.repeat(50 + (i % 200))])
  const dir = tmp.fresh()
  const meta = await makeNodeDir(dir, records, { chunks: 2 })
  const v = await openVersion(dir, meta)
  try {
    const partitionCount = buildRing(meta.layout).partitionCount
    let walked = 0
    let batches = 0
    for await (const b of walkBatches(v, { partitionCount, ...(batchBytes === undefined ? {} : { batchBytes }) })) {
      batches++
      let bytes = 0
      for (let i = 0; i < b.count; i++) {
        const recordBytes = (b.keyLen[i] as number) + (b.valueLen[i] as number)
        // Below the bound before the last record is added.
        expect(bytes).toBeLessThan(bound)
        bytes += recordBytes
      }
      walked += b.count
    }
    expect(walked).toBe(records.length)
    // ~3.2 MB of records: far more batches than 4,096-record batches would make.
    expect(batches).toBeGreaterThan(atLeast)
    const seen = new Map<string, string>()
    for await (const item of walkPartitions(v, { partitionCount })) {
      if (item.key) seen.set(item.key.toString(), item.value.toString())
    }
    expect(seen).toEqual(new Map(records))
  } finally {
    await v.close()
  }
})

/** The CRCs of a batch are checked in one call: one rotten byte still stops the walk, naming its record. */
test('a record whose bytes changed on disk ends the walk with RO_CORRUPT naming its offset', async () => {
  const dir = join(tmp.dir, 'rotten')
  const records: [string, string][] = Array.from({ length: 3_000 }, (_, i) => [`key-${i}`, `value-${i}-${'w'.repeat(i % 90)}`])
  const meta = await makeNodeDir(dir, records, { chunks: 1 })
  const data = join(dir, dataFileName(0))
  const bytes = readFileSync(data)
  // A byte in the middle of the file: inside some record's key or value, past the header.
  const at = Math.floor(bytes.length / 2)
  bytes[at] = (bytes[at] as number) ^ 0x20
  writeFileSync(data, bytes)
  const v = await openVersion(dir, meta)
  try {
    let walked = 0
    const walk = async (): Promise<void> => {
      for await (const b of walkBatches(v, { partitionCount: buildRing(meta.layout).partitionCount })) walked += b.count
    }
    const err = (await walk().catch((e: unknown) => e)) as StoreError
    expect(err).toBeInstanceOf(StoreError)
    expect(err.code).toBe('RO_CORRUPT')
    const offset = Number(/record at (\d+) fails its checksum/.exec(err.message)?.[1])
    expect(offset).toBeLessThanOrEqual(at)
    expect(offset).toBeGreaterThan(at - 200)
    // Records of the batches before the damaged one were walked; not all of them.
    expect(walked).toBeLessThan(records.length)
  } finally {
    await v.close()
  }
})
