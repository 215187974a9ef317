import { randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { readdirSync, readlinkSync, realpathSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
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
  const never = (): AbortSignal => new AbortController().signal

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

  test('symlinks leading outside the root are refused, with the path as given; symlinks inside are followed', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'rostore-fsrc-out-'))
    try {
      await writeFile(join(outside, 'secret'), 'secret-canary-bytes')
      await mkdir(join(outside, 'node-0'))
      await writeFile(join(outside, 'node-0', '0.data'), 'secret-canary-bytes')
      const src = join(root, 'links')
      await mkdir(join(src, 'node-1'), { recursive: true })
      await symlink(join(outside, 'node-0'), join(src, 'node-0')) // a node directory leading out
      await symlink(join(outside, 'secret'), join(src, 'node-1', '0.data')) // one file leading out
      await symlink('../../node-0/0.data', join(src, 'node-1', '1.data')) // leads out of this root too
      await mkdir(join(src, 'real'))
      await writeFile(join(src, 'real', '0.data'), 'inside')
      await symlink('real', join(src, 'node-2')) // stays inside the root
      const s = new FileSource(src)
      for (const name of ['node-0/0.data', 'node-1/0.data', 'node-1/1.data']) {
        const err = await s.read(name, { start: 0, signal: never() }).catch((e: unknown) => e)
        expect(err).toMatchObject({ code: 'RO_BAD_REQUEST', message: expect.stringContaining(join(src, name)) })
        expect(String((err as Error).message)).not.toContain(outside)
      }
      const ok = await s.read('node-2/0.data', { start: 0, signal: never() })
      expect((await readAll(ok.stream)).toString()).toBe('inside')
    } finally {
      await rm(outside, { recursive: true, force: true })
    }
  })

  test('a FIFO or a directory is refused at once, without blocking on the FIFO', async () => {
    await mkdir(join(root, 'node-3', 'x.data'), { recursive: true })
    execFileSync('mkfifo', [join(root, 'node-3', 'metadata.json')])
    const s = new FileSource(root)
    await expect(s.read('node-3/metadata.json', { start: 0, signal: never() })).rejects.toMatchObject({
      code: 'RO_FETCH_FAILED',
      message: expect.stringContaining('not a regular file'),
    })
    await expect(s.read('node-3/x.data', { start: 0, signal: never() })).rejects.toMatchObject({ code: 'RO_FETCH_FAILED' })
  })

  test('the file is closed when its stream is abandoned unread: by abort, or by return()', async () => {
    // Count only descriptors open on this file: the process-wide count moves with whatever
    // else the test runner opens or closes meanwhile.
    const file = realpathSync(join(root, 'node-0', '0.data'))
    const fds = (): number =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(join('/proc/self/fd', fd)) === file
        } catch {
          return false
        }
      }).length
    const before = fds()
    const src = new FileSource(root)
    const ac = new AbortController()
    await src.read('node-0/0.data', { start: 0, signal: ac.signal })
    const res = await src.read('node-0/0.data', { start: 0, signal: new AbortController().signal })
    expect(fds()).toBe(before + 2)
    ac.abort()
    await res.stream[Symbol.asyncIterator]().return?.()
    // The closes run in the background: wait for them (bounded), then check.
    for (let i = 0; i < 2000 && fds() > before; i++) await new Promise((r) => setTimeout(r, 5))
    expect(fds()).toBe(before)
  })
})
