import { join } from 'node:path'
import { readParquet } from '../../../../formats/input/parquet'
import { planSplits } from '../../../../formats/input/splits'
import type { InputRecord } from '../../../../formats/input/types'
import { PARQUET_CODECS, trickyRowJson, trickyRows, writeTrickyParquet } from '../../../../testkit/stores/parquet-fixtures'
import { collect, tempDir } from './helpers'

/**
 * Parquet written by DuckDB in every codec, with data pages v1 and v2, several row
 * groups, dictionary and plain pages, NULLs: every value read back exactly.
 */
jest.setTimeout(120_000)
const dir = tempDir()
const rows = trickyRows(5000)

const hex = (b: Buffer): string => b.toString('hex')

describe.each(PARQUET_CODECS.flatMap((codec) => (['v1', 'v2'] as const).map((version) => [codec, version] as const)))(
  'DuckDB Parquet, %s, pages %s',
  (codec, version) => {
    let path: string
    beforeAll(async () => {
      path = await writeTrickyParquet(join(dir, `${codec}-${version}.parquet`), rows, { codec, version, rowGroupSize: 2048 })
    })

    it('text key and value columns: exact bytes, NULL values as empty', async () => {
      const recs = await collect(readParquet(path))
      expect(recs.length).toBe(rows.length)
      recs.forEach((rec, i) => {
        const r = rows[i]!
        if (rec.key.toString('utf8') !== r.key || rec.value.toString('utf8') !== (r.value ?? '')) {
          throw new Error(
            `row ${i}: read ${JSON.stringify([rec.key.toString(), rec.value.toString()])}, written ${JSON.stringify([r.key, r.value])}`,
          )
        }
        expect([rec.source.row, rec.order, rec.keyKind, rec.valueKind]).toEqual([i, i, 'string', 'string'])
      })
    })

    it('binary, dictionary-encoded and INT64 columns', async () => {
      const bins = await collect(readParquet(path, { valueField: 'bin' }))
      expect(bins.map((r) => [hex(r.value), r.valueKind])).toEqual(rows.map((r) => [r.bin === null ? '' : hex(r.bin), 'bytes']))
      const colors = await collect(readParquet(path, { keyField: 'n', valueField: 'color' }))
      expect(colors.map((r) => [r.key.toString(), r.value.toString()])).toEqual(rows.map((r) => [String(r.n), r.color ?? '']))
      const numbers = await collect(readParquet(path, { valueField: 'n' }))
      expect(numbers.map((r) => [r.value.toString(), r.valueKind])).toEqual(rows.map((r) => [String(r.n), 'json']))
    })

    it('the whole row as JSON when there is no value column', async () => {
      const whole = await writeTrickyParquet(
        join(dir, `${codec}-${version}-body.parquet`),
        rows,
        { codec, version, rowGroupSize: 2048 },
        'body',
      )
      const recs = await collect(readParquet(whole))
      expect(recs.map((r) => r.value.toString('utf8'))).toEqual(rows.map((r) => trickyRowJson(r, 'body')))
      expect(recs.every((r) => r.valueKind === 'json')).toBe(true)
    })

    it('row-group splits read exactly what one reader reads', async () => {
      const splits = await planSplits([path], 'parquet', 1)
      expect(splits.length).toBeGreaterThan(1)
      const parts: InputRecord[] = []
      for (const s of splits) parts.push(...(await collect(readParquet(s.path, { groupStart: s.groupStart, groupEnd: s.groupEnd }))))
      const whole = await collect(readParquet(path))
      expect(parts.map((r) => [hex(r.key), hex(r.value), r.order])).toEqual(whole.map((r) => [hex(r.key), hex(r.value), r.order]))
    })
  },
)
