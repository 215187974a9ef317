import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseCluster } from '../../../../../cluster/cluster'
import { makeJobSpec } from '../../../../../builder/engines/hadoop/job-spec'
import { runMapTask } from '../../../../../builder/engines/hadoop/mapper'
import { rangeLines } from '../../../../../builder/engines/hadoop/range-lines'
import { makeTmp } from '../../../../../testkit/stores/tmp'

const tmp = makeTmp()
afterAll(tmp.cleanup)

/** Lines of every shape a range can cut: empty, CRLF, longer than a read window, and a last one without '\n'. */
const TEXT = [
  'a\t1',
  '',
  'bb\t2\r',
  `long\t${'x'.repeat(150_000)}`,
  'c\t3',
  ...Array.from({ length: 200 }, (_, i) => `k${i}\t${'v'.repeat(i % 13)}`),
  'last\tno newline',
].join('\n')

/** The lines and offsets Hadoop's TextInputFormat gives: split at '\n', the '\r' kept. */
function expected(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = []
  let at = 0
  for (const line of text.split('\n')) {
    if (at < Buffer.byteLength(text)) out.push([at, line])
    at += Buffer.byteLength(line) + 1
  }
  return out
}

async function linesOf(path: string, size: number, cut: number): Promise<Array<[number, string]>> {
  const out: Array<[number, string]> = []
  for (let start = 0; start < size; start += cut) {
    for await (const l of rangeLines(path, start, Math.min(size, start + cut))) out.push([l.offset, l.buf.toString('utf8', l.start, l.end)])
  }
  return out
}

// Tiny ranges over the text without its long line: each range inside a line reads up to the line's end.
test.each([
  [1, false],
  [7, false],
  [4096, true],
  [65_537, true],
  [1 << 20, true],
] as const)('ranges of %d bytes read every line exactly once, with its offset (long line: %s)', async (cut, long) => {
  const text = long ? TEXT : TEXT.replace(/\nlong\t[^\n]*/, '')
  const path = join(tmp.dir, `lines-${cut}.tsv`)
  writeFileSync(path, text)
  expect(await linesOf(path, Buffer.byteLength(text), cut)).toEqual(expected(text))
})

test('a range past the end, an empty range and a bad range', async () => {
  const path = join(tmp.dir, 'short.tsv')
  writeFileSync(path, 'a\t1\nb\t2\n')
  const all = async (s: number, e: number) => {
    const out: number[] = []
    for await (const l of rangeLines(path, s, e)) out.push(l.offset)
    return out
  }
  expect(await all(0, 100)).toEqual([0, 4])
  expect(await all(4, 4)).toEqual([])
  expect(await all(8, 20)).toEqual([])
  await expect(all(5, 3)).rejects.toThrow(RangeError)
})

test('the mapper with --range reads its range itself and emits what it emits for the same lines on stdin', async () => {
  const input = join(tmp.dir, 'in.tsv')
  const text = Array.from({ length: 500 }, (_, i) => `key-${i % 170}\tvalue-${i}`).join('\n') + '\n'
  writeFileSync(input, text)
  const job = makeJobSpec({
    store: 's',
    version: 1,
    format: 'tsv',
    cluster: parseCluster({ name: 'c', nodes: [{ id: 0, host: 'h', port: 1, partitions: [0, 1] }] }),
    replication: 1,
    chunks: 2,
    compression: 'none',
    keyHash: 'md5',
    onDuplicate: 'last',
    inputs: [input],
    output: join(tmp.dir, 'out'),
    reducers: 1,
  })
  const env = { mapreduce_task_attempt_id: 'attempt_x_m_000000_0', mapreduce_task_id: 'task_x_m_000000', mapreduce_map_input_file: input }
  const run = async (stdin: string, range?: { start: number; end: number }): Promise<string> => {
    const inFile = join(tmp.dir, 'map.in')
    const outFile = join(tmp.dir, 'map.out')
    writeFileSync(inFile, stdin)
    const inFd = openSync(inFile, 'r')
    const outFd = openSync(outFile, 'w')
    try {
      await runMapTask({ job, env: { ...env, stream_map_input_ignoreKey: 'false' }, input: inFd, output: outFd, range })
    } finally {
      closeSync(inFd)
      closeSync(outFd)
    }
    return readFileSync(outFile, 'utf8')
  }
  const size = Buffer.byteLength(text)
  const cut = Math.floor(size / 3) + 5 // lands inside a line
  for (const [start, end] of [
    [0, cut],
    [cut, size],
  ] as const) {
    const viaStdin = expected(text)
      .filter(([o, l]) => o >= start && o < end && l !== '')
      .map(([o, l]) => `${o}\t${l}\n`)
      .join('')
    const direct = await run('', { start, end })
    expect(direct.split('\n').length).toBeGreaterThan(100)
    expect(direct).toBe(await run(viaStdin))
  }
})
