import { buildRing } from '../../../../cluster/routing'
import { openVersion, walkBatches, walkPartitions } from '../../../../formats/store/partition-walk'
import { makeNodeDir } from '../../../../testkit/make-store'
import { makeTmp } from '../../../../testkit/tmp'

const tmp = makeTmp()
afterAll(() => tmp.cleanup())

/** A batch is a bounded burst of work: at most 64 KiB of keys and values, but for its last record. */
test('walk batches stop at 64 KiB of records, and together hold every record once', async () => {
  const records: [string, string][] = Array.from({ length: 20_000 }, (_, i) => [`key-${i}`, 'v'.repeat(50 + (i % 200))])
  const meta = await makeNodeDir(tmp.dir, records, { chunks: 2 })
  const v = await openVersion(tmp.dir, meta)
  try {
    const partitionCount = buildRing(meta.layout).partitionCount
    let walked = 0
    let batches = 0
    for await (const b of walkBatches(v, { partitionCount })) {
      batches++
      let bytes = 0
      for (let i = 0; i < b.count; i++) {
        const recordBytes = (b.keyLen[i] as number) + (b.valueLen[i] as number)
        // Below the bound before the last record is added.
        expect(bytes).toBeLessThan(64 << 10)
        bytes += recordBytes
      }
      walked += b.count
    }
    expect(walked).toBe(records.length)
    // ~3.2 MB of records: far more batches than 4,096-record batches would make.
    expect(batches).toBeGreaterThan(40)
    const seen = new Map<string, string>()
    for await (const item of walkPartitions(v, { partitionCount })) {
      if (item.key) seen.set(item.key.toString(), item.value.toString())
    }
    expect(seen).toEqual(new Map(records))
  } finally {
    await v.close()
  }
})
