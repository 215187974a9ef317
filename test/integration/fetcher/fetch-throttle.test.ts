import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetchVersion } from '../../../fetcher/fetch-job'
import { TokenBucket } from '../../../fetcher/transfer/token-bucket'
import { makeBuildOutput } from '../../../testkit/stores/fetch-fixture'
import { Nginx } from '../../../testkit/peers/nginx'

const MiB = 1 << 20

// Short measurements (3–6 s); bench/versions/fetch-bench.ts measures ~20 s runs at higher rates.
describe('throttled fetches from nginx', () => {
  let tmp: string
  let nginx: Nginx

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'rostore-throttle-'))
    await mkdir(join(tmp, 'live'))
    await mkdir(join(tmp, 'serve'))
    nginx = await Nginx.launch({ root: join(tmp, 'serve') })
  })
  afterAll(async () => {
    await nginx?.dispose()
    await rm(tmp, { recursive: true, force: true })
  })

  const build = (name: string, bytes: number): ReturnType<typeof makeBuildOutput> =>
    makeBuildOutput(join(tmp, 'serve', name), {
      store: name,
      chunks: [0, 1, 2, 3].map(() => ({ dataBytes: bytes / 4 - 64 * 1024, indexBytes: 64 * 1024 })),
    })

  test('one fetch keeps to its own limit within 10%', async () => {
    const fx = await build('own', 12 * MiB)
    const rate = 2 * MiB
    let lastRate = 0
    const t0 = performance.now()
    await fetchVersion({
      source: `${nginx.url}own`,
      nodeId: 0,
      destDir: join(tmp, 'live', 'own'),
      maxBytesPerSec: rate,
      onProgress: (p) => (lastRate = p.rateBytesPerSec),
    })
    const measured = fx.totalBytes / ((performance.now() - t0) / 1000)
    expect(measured).toBeGreaterThan(rate * 0.9)
    expect(measured).toBeLessThan(rate * 1.1)
    expect(lastRate).toBeGreaterThan(rate * 0.8)
    expect(lastRate).toBeLessThan(rate * 1.2)
  })

  test('two fetches share the node-wide bucket within 10%', async () => {
    const a = await build('shared-a', 6 * MiB)
    const b = await build('shared-b', 6 * MiB)
    const rate = 4 * MiB
    const bucket = new TokenBucket(rate)
    const t0 = performance.now()
    await Promise.all([
      fetchVersion({ source: `${nginx.url}shared-a`, nodeId: 0, destDir: join(tmp, 'live', 'a'), bucket }),
      fetchVersion({ source: `${nginx.url}shared-b`, nodeId: 0, destDir: join(tmp, 'live', 'b'), bucket }),
    ])
    const measured = (a.totalBytes + b.totalBytes) / ((performance.now() - t0) / 1000)
    expect(measured).toBeGreaterThan(rate * 0.9)
    expect(measured).toBeLessThan(rate * 1.1)
  })
})
