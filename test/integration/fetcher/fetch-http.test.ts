import { mkdir, mkdtemp, rm, stat, truncate, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetchVersion, type FetchOptions } from '../../../fetcher/fetch-job'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { corruptByte, makeBuildOutput, type Fixture } from '../../../testkit/stores/fetch-fixture'
import { Nginx } from '../../../testkit/peers/nginx'

const MiB = 1 << 20

// One nginx serves a directory of build outputs; each test gets its own tree under it.
describe('fetchVersion over HTTP from nginx', () => {
  let tmp: string
  let nginx: Nginx
  let n = 0
  const dest = (): string => join(tmp, 'live', `v${++n}`)
  const tree = async (name: string, chunks = 3): Promise<Fixture> =>
    makeBuildOutput(join(tmp, 'serve', name), {
      store: name,
      chunks: Array.from({ length: chunks }, () => ({ dataBytes: 3 * MiB, indexBytes: 200_000 })),
    })
  const gone = async (dir: string): Promise<void> => {
    await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' })
  }
  const fast: Partial<FetchOptions> = { retries: 2, retryBaseDelayMs: 20 }

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'rostore-http-'))
    await mkdir(join(tmp, 'serve'))
    await mkdir(join(tmp, 'live'))
    nginx = await Nginx.launch({ root: join(tmp, 'serve') })
  })
  afterAll(async () => {
    await nginx?.dispose()
    await rm(tmp, { recursive: true, force: true })
  })

  test('downloads a verified copy, data files requested before index files', async () => {
    const fx = await tree('ordered', 4)
    const destDir = dest()
    const meta = await fetchVersion({ source: `${nginx.url}ordered`, nodeId: 0, destDir, concurrency: 2 })
    expect(meta.store).toBe('ordered')
    for (const f of fx.metadata.files) expect(await checksumFile(join(destDir, f.name))).toBe(f.checksum)
    const log = (await nginx.accessLog()).filter((e) => e.uri.startsWith('/ordered/'))
    expect(log.every((e) => e.status === 200)).toBe(true)
    const starts = (suffix: string): number[] => log.filter((e) => e.uri.endsWith(suffix)).map((e) => e.start)
    expect(starts('.data')).toHaveLength(4)
    expect(starts('.index')).toHaveLength(4)
    // $msec - $request_time has millisecond resolution.
    expect(Math.max(...starts('.data'))).toBeLessThanOrEqual(Math.min(...starts('.index')) + 0.002)
    expect(log[0]?.uri).toBe('/ordered/node-0/metadata.json')
  })

  test('a 404 fails with RO_FETCH_FAILED naming the file, leaving nothing', async () => {
    const fx = await tree('missing', 2)
    await unlink(join(fx.nodeDir, '1.index'))
    const destDir = dest()
    const err = await fetchVersion({ source: `${nginx.url}missing`, nodeId: 0, destDir, ...fast }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'RO_FETCH_FAILED', message: expect.stringContaining(`${nginx.url}missing/node-0/1.index`) })
    expect((err as Error).message).toContain('404')
    await gone(destDir)
    // No retries for a 404.
    const log = (await nginx.accessLog()).filter((e) => e.uri === '/missing/node-0/1.index')
    expect(log).toHaveLength(1)
  })

  test('a missing node directory fails on its metadata.json', async () => {
    await tree('nonode', 1)
    const destDir = dest()
    await expect(fetchVersion({ source: `${nginx.url}nonode`, nodeId: 5, destDir, ...fast })).rejects.toMatchObject({
      code: 'RO_FETCH_FAILED',
      message: expect.stringContaining('node-5/metadata.json'),
    })
    await gone(destDir)
  })

  test('one corrupted byte fails with RO_CHECKSUM_MISMATCH after the retries, leaving nothing', async () => {
    const fx = await tree('corrupt', 2)
    await corruptByte(join(fx.nodeDir, '1.data'), 2 * MiB + 5)
    const destDir = dest()
    const err = await fetchVersion({ source: `${nginx.url}corrupt`, nodeId: 0, destDir, ...fast }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'RO_CHECKSUM_MISMATCH', message: expect.stringContaining('1.data') })
    await gone(destDir)
    // First try plus two retries, each from scratch (no Range).
    const log = (await nginx.accessLog()).filter((e) => e.uri === '/corrupt/node-0/1.data')
    expect(log.length).toBe(3)
    expect(log.every((e) => e.range === '')).toBe(true)
  })

  test('a truncated file fails with RO_CHECKSUM_MISMATCH, leaving nothing', async () => {
    const fx = await tree('truncated', 2)
    await truncate(join(fx.nodeDir, '0.data'), MiB)
    const destDir = dest()
    const err = await fetchVersion({ source: `${nginx.url}truncated`, nodeId: 0, destDir, ...fast }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'RO_CHECKSUM_MISMATCH', message: expect.stringContaining('0.data') })
    await gone(destDir)
  })

  test('not enough disk space: RO_NO_SPACE with what is needed and what is there', async () => {
    await tree('space', 2)
    const destDir = dest()
    const err = await fetchVersion({ source: `${nginx.url}space`, nodeId: 0, destDir, freeBytes: async () => 5 * MiB }).catch(
      (e: unknown) => e,
    )
    expect(err).toMatchObject({ code: 'RO_NO_SPACE', message: expect.stringMatching(/need 70\.\d MiB .* have 5\.0 MiB/) })
    await gone(destDir)
  })

  test('abort mid-fetch: RO_ABORTED quickly, leaving nothing', async () => {
    await tree('abort', 3)
    const destDir = dest()
    const ac = new AbortController()
    let sawBytes = false
    const started = performance.now()
    const p = fetchVersion({
      source: `${nginx.url}abort`,
      nodeId: 0,
      destDir,
      maxBytesPerSec: 2 * MiB,
      signal: ac.signal,
      onProgress: (pr) => {
        if (pr.bytesDone > MiB && !sawBytes) {
          sawBytes = true
          ac.abort()
        }
      },
    })
    await expect(p).rejects.toMatchObject({ code: 'RO_ABORTED' })
    expect(sawBytes).toBe(true)
    expect(performance.now() - started).toBeLessThan(3000)
    await gone(destDir)
  })

  test('a source outside the allow-list is refused before any request', async () => {
    const destDir = dest()
    const before = (await nginx.accessLog()).length
    await expect(
      fetchVersion({ source: `${nginx.url}ordered`, nodeId: 0, destDir, allowedSources: [`${nginx.url}builds`] }),
    ).rejects.toMatchObject({
      code: 'RO_BAD_REQUEST',
    })
    expect((await nginx.accessLog()).length).toBe(before)
    await gone(destDir)
  })
})
