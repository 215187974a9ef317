import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checksumStream } from '../../../fetcher/transfer/checksum-stream'
import { checksumFile, createFileHasher } from '../../../formats/store/chunk/checksum'

describe('checksumStream', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rostore-cs-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  test('passes bytes through unchanged and digests like checksumFile', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17)
    const file = join(dir, 'f')
    await writeFile(file, data)
    async function* src(): AsyncGenerator<Buffer> {
      for (let at = 0; at < data.length; at += 100_003) yield data.subarray(at, at + 100_003)
    }
    const hasher = await createFileHasher('xxh64')
    let counted = 0
    const out: Buffer[] = []
    for await (const b of checksumStream(src(), hasher, (n) => (counted += n))) out.push(b)
    expect(Buffer.concat(out).equals(data)).toBe(true)
    expect(counted).toBe(data.length)
    expect(hasher.digest()).toBe(await checksumFile(file))
  })

  test('a source error reaches the consumer', async () => {
    async function* src(): AsyncGenerator<Buffer> {
      yield Buffer.from('x')
      throw new Error('boom')
    }
    const run = async (): Promise<void> => {
      for await (const b of checksumStream(src(), await createFileHasher('xxh64'))) void b
    }
    await expect(run()).rejects.toThrow('boom')
  })
})
