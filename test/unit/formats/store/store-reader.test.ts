import { readFileSync, writeFileSync, renameSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { isStoreError } from '../../../../common/errors'
import { SEARCH_STRATEGIES } from '../../../../formats/store/chunk/search'
import { verifyStore } from '../../../../formats/store/scan/verify'
import { makeNodeDir, writableCompressions } from '../../../../testkit/stores/make-store'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { openIn, READER_MODES } from './reader-modes'

const tmp = makeTmp()
afterAll(tmp.cleanup)
let seq = 0
const newDir = () => join(tmp.dir, `s${seq++}`)

function sampleRecords(n: number): [string, string][] {
  return Array.from({ length: n }, (_, i) => [`key-${i}`, i % 17 === 0 ? '' : `value-${i}-${'x'.repeat(i % 300)}`])
}

describe.each(READER_MODES)('%s reader', (mode) => {
  describe.each(writableCompressions().flatMap((c) => SEARCH_STRATEGIES.map((s) => [c, s] as const)))(
    'compression %s, %s search',
    (compression, search) => {
      test('every key reads back its exact value, absent keys are undefined, empty values stay empty', async () => {
        const dir = newDir()
        const records = sampleRecords(3000)
        await makeNodeDir(dir, records, { compression, chunks: 3 })
        const r = await openIn(mode, dir, { search })
        try {
          for (const [k, v] of records) expect(r.get(k)?.toString()).toBe(v)
          expect(r.get('key-0')).toEqual(Buffer.alloc(0))
          for (let i = 0; i < 500; i++) expect(r.get(`absent-${i}`)).toBeUndefined()
          expect(r.getMany(['key-1', 'nope', 'key-2']).map((b) => b?.toString())).toEqual([records[1]![1], undefined, records[2]![1]])
        } finally {
          r.close()
        }
      })
    },
  )

  test('binary keys and values, and a value larger than the read-ahead', async () => {
    const dir = newDir()
    const big = Buffer.alloc(100_000, 7)
    const bin = Buffer.from([0, 255, 10, 13, 9, 0])
    await makeNodeDir(dir, [
      [bin, big],
      ['k', bin],
    ])
    const r = await openIn(mode, dir)
    expect(r.get(bin)).toEqual(big)
    expect(r.get('k')).toEqual(bin)
    r.close()
  })

  test('an empty store opens and finds nothing; empty chunks are fine', async () => {
    const dir = newDir()
    await makeNodeDir(dir, [], { chunks: 4 })
    const r = await openIn(mode, dir)
    expect(r.get('anything')).toBeUndefined()
    expect(r.metadata.records).toBe(0)
    r.close()
    await expect(verifyStore(dir)).resolves.toMatchObject({ records: 0 })
  })

  test('hash prefix collisions are resolved by comparing keys, never returning a wrong value', async () => {
    const dir = newDir()
    const records = sampleRecords(400)
    // md5-collide-2 keeps 2 bits of the 8-byte prefix: ~100 keys share each prefix.
    await makeNodeDir(dir, records, { keyHash: 'md5-collide-2', chunks: 1 })
    for (const search of SEARCH_STRATEGIES) {
      const r = await openIn(mode, dir, { search })
      for (const [k, v] of records) expect(r.get(k)?.toString()).toBe(v)
      for (let i = 0; i < 100; i++) expect(r.get(`absent-${i}`)).toBeUndefined()
      // One batch of every key, absent ones and repeats interleaved: getMany looks keys up
      // in blocks (the addon's prefetching stages), each block holding many colliding keys.
      const batch = records.flatMap(([k], i) => (i % 3 === 0 ? [k, `absent-${i}`, records[(i * 7) % 400]![0]] : [k]))
      expect(r.getMany(batch).map((v) => v?.toString())).toEqual(batch.map((k) => r.get(k)?.toString()))
      expect(batch.filter((k) => k.startsWith('absent')).length).toBeGreaterThan(100)
      r.close()
    }
    await expect(verifyStore(dir)).resolves.toMatchObject({ records: 400 })
  })

  test('a reopened store reads the same (persistence)', async () => {
    const dir = newDir()
    const records = sampleRecords(200)
    await makeNodeDir(dir, records)
    for (let round = 0; round < 2; round++) {
      const r = await openIn(mode, dir)
      expect(r.get('key-123')?.toString()).toBe(records[123]![1])
      r.close()
    }
  })

  describe('corruption is refused, never served', () => {
    async function fresh(): Promise<string> {
      const dir = newDir()
      await makeNodeDir(dir, sampleRecords(500), { chunks: 2 })
      return dir
    }
    const codeOf = async (p: Promise<unknown>): Promise<string> => {
      try {
        await p
      } catch (err) {
        if (isStoreError(err)) return err.code
        throw err
      }
      return 'no error'
    }

    test('a flipped byte in a data value: verify fails, the reader errors on that key', async () => {
      const dir = await fresh()
      const file = join(dir, '0.data')
      const b = readFileSync(file)
      b[b.length - 3]! ^= 0x40
      writeFileSync(file, b)
      expect(await codeOf(verifyStore(dir))).toBe('RO_CHECKSUM_MISMATCH')
      const r = await openIn(mode, dir)
      let errors = 0
      for (const [k] of sampleRecords(500)) {
        try {
          r.get(k)
        } catch (err) {
          expect(isStoreError(err, 'RO_CORRUPT')).toBe(true)
          errors++
        }
      }
      expect(errors).toBe(1)
      r.close()
    })

    test('a flipped byte in an index: open refuses it (order check or checksum), verify too', async () => {
      const dir = await fresh()
      const file = join(dir, '1.index')
      const b = readFileSync(file)
      for (const at of [80, 64 + 16 * 7 + 7]) {
        b[at]! ^= 1
        writeFileSync(file, b)
        expect(['RO_CHECKSUM_MISMATCH', 'RO_CORRUPT']).toContain(await codeOf(openIn(mode, dir)))
        expect(await codeOf(verifyStore(dir))).toBe('RO_CHECKSUM_MISMATCH')
        b[at]! ^= 1
      }
      writeFileSync(file, b)
      await expect(verifyStore(dir)).resolves.toMatchObject({ records: 500 })
    })

    test('a truncated data file is refused at open', async () => {
      const dir = await fresh()
      truncateSync(join(dir, '0.data'), 100)
      expect(await codeOf(openIn(mode, dir))).toBe('RO_CORRUPT')
    })

    test('two chunk files swapped are refused (file ids)', async () => {
      const dir = await fresh()
      renameSync(join(dir, '0.data'), join(dir, 'tmp'))
      renameSync(join(dir, '1.data'), join(dir, '0.data'))
      renameSync(join(dir, 'tmp'), join(dir, '1.data'))
      expect(await codeOf(openIn(mode, dir, { verifyIndex: false }))).toBe('RO_CORRUPT')
    })

    test('bad magic and unknown major version are refused as RO_BAD_FORMAT', async () => {
      const dir = await fresh()
      const file = join(dir, '0.index')
      const b = readFileSync(file)
      b.write('NOTROSTO', 0, 'ascii')
      writeFileSync(file, b)
      expect(await codeOf(openIn(mode, dir, { verifyIndex: false }))).toBe('RO_BAD_FORMAT')
      const meta = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8'))
      writeFileSync(join(dir, 'metadata.json'), JSON.stringify({ ...meta, formatMajor: 9 }))
      expect(await codeOf(openIn(mode, dir))).toBe('RO_BAD_FORMAT')
    })

    test('metadata naming files outside the directory is refused', async () => {
      const dir = await fresh()
      const meta = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8'))
      meta.files[0].name = '../../etc/passwd'
      writeFileSync(join(dir, 'metadata.json'), JSON.stringify(meta))
      expect(await codeOf(openIn(mode, dir))).toBe('RO_CORRUPT')
    })

    test('changed record counts in the metadata are refused', async () => {
      const dir = await fresh()
      const meta = JSON.parse(readFileSync(join(dir, 'metadata.json'), 'utf8'))
      meta.chunkRecords = [meta.chunkRecords[0] + 1, meta.chunkRecords[1] - 1]
      writeFileSync(join(dir, 'metadata.json'), JSON.stringify(meta))
      expect(await codeOf(openIn(mode, dir))).toBe('RO_CORRUPT')
    })

    test('an extra file in the directory fails verify', async () => {
      const dir = await fresh()
      writeFileSync(join(dir, 'stray.txt'), 'x')
      expect(await codeOf(verifyStore(dir))).toBe('RO_CORRUPT')
    })
  })
})
