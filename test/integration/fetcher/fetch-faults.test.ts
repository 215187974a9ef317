import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetchVersion, type FetchProgress } from '../../../fetcher/fetch-job'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { makeBuildOutput, type Fixture } from '../../../testkit/stores/fetch-fixture'
import { Nginx } from '../../../testkit/peers/nginx'
import { StallProxy } from '../../../testkit/net/stall-proxy'

const MiB = 1 << 20

async function verify(fx: Fixture, destDir: string): Promise<void> {
  for (const f of fx.metadata.files) expect(await checksumFile(join(destDir, f.name))).toBe(f.checksum)
}

describe('fetchVersion through server trouble', () => {
  let tmp: string
  let nginx: Nginx
  let proxy: StallProxy | undefined
  let n = 0
  const dest = (): string => join(tmp, 'live', `v${++n}`)
  const tree = (name: string): Promise<Fixture> =>
    makeBuildOutput(join(tmp, 'serve', name), { store: name, chunks: [0, 1, 2].map(() => ({ dataBytes: 4 * MiB, indexBytes: 100_000 })) })

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'rostore-faults-'))
    await mkdir(join(tmp, 'serve'))
    await mkdir(join(tmp, 'live'))
    // limit_rate: the server itself sends slowly, so the kernel's socket buffers cannot
    // hold the rest of a file when nginx goes down, and the cut really happens; 1 MB/s per
    // connection leaves seconds of transfer after the cut point, more than a stop takes on
    // a loaded machine.
    nginx = await Nginx.launch({ root: join(tmp, 'serve'), serverConfig: 'location /restart/ { limit_rate 1m; }' })
  })
  afterEach(async () => {
    await proxy?.close()
    proxy = undefined
  })
  afterAll(async () => {
    await nginx?.dispose()
    await rm(tmp, { recursive: true, force: true })
  })

  test('nginx restarting mid-transfer: the fetch resumes with Range and succeeds', async () => {
    const fx = await tree('restart')
    const destDir = dest()
    let restarted: Promise<void> | undefined
    let last: FetchProgress | undefined
    const meta = await fetchVersion({
      source: `${nginx.url}restart`,
      nodeId: 0,
      destDir,
      onProgress: (p) => {
        last = p
        if (restarted === undefined && p.bytesDone > fx.totalBytes / 3) {
          restarted = (async () => {
            await nginx.stop()
            await new Promise((r) => setTimeout(r, 300))
            await nginx.start()
          })()
        }
      },
    })
    await restarted
    expect(meta.store).toBe('restart')
    await verify(fx, destDir)
    expect(last?.retries).toBeGreaterThan(0)
    const resumed = (await nginx.accessLog()).filter((e) => e.uri.startsWith('/restart/') && e.status === 206)
    expect(resumed.length).toBeGreaterThan(0)
    expect(resumed.every((e) => /^bytes=[1-9]\d*-$/.test(e.range))).toBe(true)
  })

  test('a server that stalls: cut after the stall timeout and resumed on a new connection', async () => {
    const fx = await tree('stall-once')
    proxy = await StallProxy.start(nginx.port, { stallAfterBytes: MiB, stalls: 2 })
    const destDir = dest()
    let last: FetchProgress | undefined
    const started = performance.now()
    await fetchVersion({
      source: `${proxy.url}stall-once`,
      nodeId: 0,
      destDir,
      stallTimeoutMs: 400,
      retryBaseDelayMs: 20,
      onProgress: (p) => (last = p),
    })
    expect(performance.now() - started).toBeLessThan(10_000)
    await verify(fx, destDir)
    expect(last?.retries).toBeGreaterThan(0)
    expect(proxy.connections).toBeGreaterThan(2)
    const resumed = (await nginx.accessLog()).filter((e) => e.uri.startsWith('/stall-once/') && e.status === 206)
    expect(resumed.length).toBeGreaterThan(0)
  })

  test('a server that never sends a data file: RO_FETCH_FAILED after the retries, leaving nothing', async () => {
    await tree('stall-always')
    proxy = await StallProxy.start(nginx.port, { stallAfterBytes: 0, only: /\.data$/ })
    const destDir = dest()
    const started = performance.now()
    const err = await fetchVersion({
      source: `${proxy.url}stall-always`,
      nodeId: 0,
      destDir,
      stallTimeoutMs: 300,
      retries: 2,
      retryBaseDelayMs: 20,
    }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'RO_FETCH_FAILED', message: expect.stringContaining('no data for 300 ms') })
    expect(performance.now() - started).toBeLessThan(10_000)
    await expect(stat(destDir)).rejects.toMatchObject({ code: 'ENOENT' })
  })
})
