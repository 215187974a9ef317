import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { masterPartition } from '../../../../cluster/routing'
import { packageRoot } from '../../../../common/paths'
import { dumpRecords } from '../../../../formats/store/scan/dump'
import { readMetadata } from '../../../../formats/store/layout/metadata-io'
import { verifyStore } from '../../../../formats/store/scan/verify'
import { openIn, READER_MODES } from './reader-modes'

/**
 * A node upgraded in place keeps serving its old-layout versions: the committed format-1
 * node directory (test/fixtures/format1-node, written by the format-1 builder) is read by
 * every reader and tool of today.
 */
const fixture = join(packageRoot(), 'test', 'fixtures', 'format1-node')
const dir = join(fixture, 'node-0')
const input = readFileSync(join(fixture, 'input.tsv'), 'utf8')
  .trimEnd()
  .split('\n')
  .map((l) => l.split('\t') as [string, string])
const onNode0 = ([k]: [string, string]): boolean => [0, 2].includes(masterPartition(createHash('md5').update(k).digest(), 4))

test('the fixture is format 1 as built: 152 of 300 records on node 0, in 2 chunks', async () => {
  const meta = await readMetadata(dir)
  expect([meta.formatMajor, meta.held, meta.dataVersion, meta.chunks, meta.records]).toEqual([1, undefined, undefined, 2, 152])
  expect(meta.files.map((f) => f.name)).toEqual(['0.index', '0.data', '1.index', '1.data'])
  expect(input.filter(onNode0).length).toBe(152)
})

describe.each(READER_MODES)('%s reader', (mode) => {
  test("serves every key of node 0 and none of node 1's", async () => {
    const r = await openIn(mode, dir)
    try {
      expect(r.getMany(input.map(([k]) => k)).map((v) => v?.toString())).toEqual(input.map((rec) => (onNode0(rec) ? rec[1] : undefined)))
    } finally {
      r.close()
    }
  })
})

test('verify and dump read it as before', async () => {
  const report = await verifyStore(dir)
  expect([report.nodeId, report.records, report.files]).toEqual([0, 152, 4])
  const dumped = [...dumpRecords(dir, await readMetadata(dir))]
  expect(new Map(dumped.map((d) => [d.key, d.value]))).toEqual(new Map(input.filter(onNode0)))
})
