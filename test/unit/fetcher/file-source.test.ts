import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { FileSource } from '../../../fetcher/sources/file'

async function readAll(src: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const b of src) parts.push(b)
  return Buffer.concat(parts)
}

describe('FileSource', () => {
  let root: string
  const data = randomBytes(3 << 20)
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'rostore-fsrc-'))
    await mkdir(join(root, 'node-0'))
    await writeFile(join(root, 'node-0', '0.data'), data)
  })
  afterAll(async () => {
    await rm(root, { recursive: true, force: true })
  })

  test('reads a whole file and reports its size', async () => {
    const src = new FileSource(root)
    const res = await src.read('node-0/0.data', { start: 0, signal: new AbortController().signal })
    expect(res.start).toBe(0)
    expect(res.size).toBe(data.length)
    expect((await readAll(res.stream)).equals(data)).toBe(true)
  })

  test('reads from an offset (resume) and accepts file:// roots', async () => {
    const src = new FileSource(pathToFileURL(root).toString())
    expect(src.describe()).toBe(root)
    const res = await src.read('node-0/0.data', { start: 1234567, signal: new AbortController().signal })
    expect(res.start).toBe(1234567)
    expect((await readAll(res.stream)).equals(data.subarray(1234567))).toBe(true)
  })

  test('a missing file is a permanent RO_FETCH_FAILED naming the path', async () => {
    const src = new FileSource(root)
    await expect(src.read('node-0/9.index', { start: 0, signal: new AbortController().signal })).rejects.toMatchObject({
      code: 'RO_FETCH_FAILED',
      message: expect.stringContaining(join(root, 'node-0', '9.index')),
    })
  })

  test('an abort stops the stream', async () => {
    const src = new FileSource(root)
    const ac = new AbortController()
    const res = await src.read('node-0/0.data', { start: 0, signal: ac.signal })
    const run = async (): Promise<void> => {
      for await (const b of res.stream) {
        void b
        ac.abort()
      }
    }
    await expect(run()).rejects.toMatchObject({ name: 'AbortError' })
  })
})
