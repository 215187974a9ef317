import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Registry } from 'prom-client'
import { registerFetchMetrics } from '../../../fetcher/fetch-metrics'
import { downloadOrder, fetchVersion, type FetchProgress } from '../../../fetcher/fetch-job'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { corruptByte, makeBuildOutput, writeManifest, type Fixture } from '../../../testkit/stores/fetch-fixture'

// fetchVersion end to end against a local directory: everything but HTTP.
describe('fetchVersion from a local build output', () => {
  let tmp: string
  let fx: Fixture
  let n = 0
  const dest = (): string => join(tmp, 'live', `v${++n}`)

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'rostore-fetch-'))
    await mkdir(join(tmp, 'live'))
    fx = await makeBuildOutput(join(tmp, 'build'), {
      store: 'users',
      version: 3,
      chunks: [
        { dataBytes: 300_000, indexBytes: 20_000 },
        { dataBytes: 700_000, indexBytes: 40_000 },
        { dataBytes: 0, indexBytes: 0 },
      ],
    })
  })
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true })
  })

  test('copies and verifies every file, metadata.json last, and reports progress', async () => {
    const destDir = dest()
    const seen: FetchProgress[] = []
    const registry = new Registry()
    const metrics = registerFetchMetrics(registry)
    const meta = await fetchVersion({
      source: fx.root,
      nodeId: 0,
      destDir,
      expect: { store: 'users', version: 3 },
      onProgress: (p) => seen.push(p),
      metrics,
    })
    expect(meta).toEqual(fx.metadata)
    expect((await readdir(destDir)).sort()).toEqual(['0.data', '0.index', '1.data', '1.index', '2.data', '2.index', 'metadata.json'])
    for (const f of fx.metadata.files) expect(await checksumFile(join(destDir, f.name))).toBe(f.checksum)
    expect(await readFile(join(destDir, 'metadata.json'))).toEqual(await readFile(join(fx.nodeDir, 'metadata.json')))
    const last = seen[seen.length - 1]
    expect(last).toMatchObject({ bytesDone: fx.totalBytes, bytesTotal: fx.totalBytes, etaSeconds: 0, retries: 0, checksumFailures: 0 })
    expect(last?.files.every((f) => f.state === 'done' && f.bytesDone === f.size)).toBe(true)
    const text = await registry.metrics()
    expect(text).toMatch(/rostore_fetch_bytes_total\{store="users"\} \d+/)
    expect(text).toContain('rostore_fetch_duration_seconds_count{result="ok"} 1')
    // The same registry again (a second server instance) reuses the metrics.
    expect(registerFetchMetrics(registry).bytes).toBe(metrics.bytes)
  })

  test('orders data files before index files, biggest first', () => {
    expect(downloadOrder(fx.metadata.files).map((f) => f.name)).toEqual(['1.data', '0.data', '2.data', '1.index', '0.index', '2.index'])
  })

  test('refuses when free space is short, before creating anything', async () => {
    const destDir = dest()
    const err = await fetchVersion({
      source: fx.root,
      nodeId: 0,
      destDir,
      freeBytes: async () => 1_000_000,
      freeSpaceMarginBytes: 1 << 20,
    }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'RO_NO_SPACE', message: expect.stringMatching(/need .*MiB.*have 976\.6 KiB/) })
    await expect(stat(destDir)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('refuses to fill an existing directory and leaves it alone', async () => {
    const destDir = dest()
    await mkdir(destDir)
    await expect(fetchVersion({ source: fx.root, nodeId: 0, destDir })).rejects.toMatchObject({ code: 'RO_CONFLICT' })
    expect((await stat(destDir)).isDirectory()).toBe(true)
  })

  test('a manifest naming a path outside destDir is refused and nothing is written', async () => {
    const bad = await makeBuildOutput(join(tmp, 'evil'), { chunks: [{ dataBytes: 10, indexBytes: 10 }] })
    await writeManifest(bad.nodeDir, {
      ...bad.metadata,
      files: [...bad.metadata.files, { name: '../../x', size: 1, checksum: '0123456789abcdef' }],
    })
    const destDir = dest()
    await expect(fetchVersion({ source: bad.root, nodeId: 0, destDir })).rejects.toMatchObject({ code: 'RO_BAD_REQUEST' })
    await expect(stat(destDir)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('a wrong node id or a missing node directory fails cleanly', async () => {
    await expect(fetchVersion({ source: fx.root, nodeId: 1, destDir: dest() })).rejects.toMatchObject({
      code: 'RO_FETCH_FAILED',
      message: expect.stringContaining('node-1'),
    })
    await expect(fetchVersion({ source: fx.root, nodeId: 0, destDir: dest(), expect: { version: 4 } })).rejects.toMatchObject({
      code: 'RO_BAD_REQUEST',
    })
  })

  test('a corrupt file fails with RO_CHECKSUM_MISMATCH after its retries, leaving nothing', async () => {
    const bad = await makeBuildOutput(join(tmp, 'corrupt'), { chunks: [{ dataBytes: 100_000, indexBytes: 1000 }] })
    await corruptByte(join(bad.nodeDir, '0.data'), 5000)
    const destDir = dest()
    const seen: FetchProgress[] = []
    const err = await fetchVersion({
      source: bad.root,
      nodeId: 0,
      destDir,
      retries: 2,
      retryBaseDelayMs: 10,
      onProgress: (p) => seen.push(p),
    }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'RO_CHECKSUM_MISMATCH', message: expect.stringContaining('0.data') })
    // Two retries: three failed attempts.
    expect(seen[seen.length - 1]).toMatchObject({ checksumFailures: 3, retries: 2 })
    await expect(stat(destDir)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('an already aborted signal fails with RO_ABORTED', async () => {
    const destDir = dest()
    await expect(fetchVersion({ source: fx.root, nodeId: 0, destDir, signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'RO_ABORTED',
    })
    await expect(stat(destDir)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  test('programming mistakes throw RangeError', async () => {
    await expect(fetchVersion({ source: fx.root, nodeId: -1, destDir: dest() })).rejects.toThrow(RangeError)
    await expect(fetchVersion({ source: fx.root, nodeId: 0, destDir: dest(), concurrency: 0 })).rejects.toThrow(RangeError)
  })
})
