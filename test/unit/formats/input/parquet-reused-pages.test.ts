import { join } from 'node:path'
import { ScratchBuffer } from '../../../../common/working-memory'
import { ColumnCursor } from '../../../../formats/input/parquet/column-cursor'
import { openParquet } from '../../../../formats/input/parquet/file'
import { PageReader } from '../../../../formats/input/parquet/pages'
import { isSupportedCodec } from '../../../../formats/input/parquet/codecs'
import { tempDir } from './helpers'
import { writeParquet } from './write-parquet'

/**
 * The build's batch reader reads a column's pages into one reused window and decompresses
 * them into one reused buffer. A cursor over reused buffers must give every row exactly as
 * a cursor over fresh memory does: the dictionary, which outlives its page, included.
 * Small windows make every column chunk span many of them.
 */
const dir = tempDir()

async function columnValues(
  path: string,
  column: string,
  reuse: boolean,
  windowBytes: number,
): Promise<{ values: string[]; pages: number }> {
  const file = (await openParquet(path))!
  // One window and one page buffer for every row group, as the batch reader keeps them.
  const window = new ScratchBuffer()
  const page = new ScratchBuffer()
  try {
    const values: string[] = []
    let pages = 0
    for (const group of file.metadata.row_groups) {
      const meta = group.columns.find((c) => c.meta_data?.path_in_schema.join('.') === column)!.meta_data!
      expect(isSupportedCodec(meta.codec)).toBe(true)
      const dict =
        meta.dictionary_page_offset !== undefined && meta.dictionary_page_offset > 0n ? Number(meta.dictionary_page_offset) : undefined
      const start = dict !== undefined && dict < Number(meta.data_page_offset) ? dict : Number(meta.data_page_offset)
      const element = file.schema.children.find((f) => f.element.name === column)!.element
      const reader = new PageReader(file.handle, start, Number(meta.total_compressed_size), reuse ? window : undefined, windowBytes)
      const cursor = new ColumnCursor(reader, element, meta, meta.codec as never, reuse ? page : undefined)
      const rows = Number(group.num_rows)
      for (let row = 0; row < rows; row++) {
        while (cursor.available <= row) {
          expect(await cursor.advance()).toBe(true)
          pages++
        }
        // Copied before the cursor moves on, as the batch reader does.
        values.push(cursor.isNull(row) ? '<null>' : Buffer.from(cursor.raw(row) as Buffer).toString('latin1'))
      }
    }
    return { values, pages }
  } finally {
    await file.handle.close()
  }
}

const rows = Array.from({ length: 40_000 }, (_, i) => ({
  key: `k${i}`,
  // 3,000 distinct values: DuckDB writes a dictionary page and dictionary-encoded data pages.
  label: `label-${i % 3000}-${'L'.repeat(60)}`,
  // Distinct values: PLAIN pages.
  value: i % 13 === 0 ? null : `v${i}-${'x'.repeat(i % 150)}`,
}))

describe.each(['uncompressed', 'zstd', 'snappy'] as const)('%s: a cursor over reused windows and page buffers', (codec) => {
  let path: string
  beforeAll(async () => {
    path = await writeParquet(join(dir, `${codec}.parquet`), { key: 'VARCHAR', label: 'VARCHAR', value: 'VARCHAR' }, rows, {
      codec,
      rowGroupSize: 20_000,
    })
  })

  test.each(['label', 'value', 'key'])('column %s: every row as over fresh memory', async (column) => {
    const fresh = await columnValues(path, column, false, 1 << 20)
    expect(fresh.values).toHaveLength(rows.length)
    expect(fresh.values[1]).toBe(column === 'label' ? rows[1]!.label : column === 'value' ? rows[1]!.value : rows[1]!.key)
    const reused = await columnValues(path, column, true, 4096)
    expect(reused.pages).toBe(fresh.pages)
    expect(reused.values).toEqual(fresh.values)
  })
})

test('ScratchBuffer: one memory, grown only when a take does not fit', () => {
  const s = new ScratchBuffer()
  const a = s.take(1000)
  a.fill(7)
  const b = s.take(500)
  expect(b.buffer).toBe(a.buffer)
  expect(b[499]).toBe(7)
  const c = s.take(5 << 20)
  expect(c.length).toBe(5 << 20)
  expect(c.buffer).not.toBe(a.buffer)
  expect(s.take(4 << 20).buffer).toBe(c.buffer)
})
