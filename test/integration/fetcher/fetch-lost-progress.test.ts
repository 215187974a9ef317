import { createReadStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isStoreError } from '../../../common/errors'
import { fetchVersion } from '../../../fetcher/fetch-job'
import { makeBuildOutput } from '../../../testkit/stores/fetch-fixture'

/**
 * A source that keeps losing the progress it gives: it answers every request for a data
 * file with 200 and the file's whole Content-Length (it ignores Range), sends half the
 * body and closes the connection. Bytes arrive on every attempt, but the fetch never gets
 * further than the first attempt did: that must count as failing, so the fetch ends by
 * itself within its retries (it used to run forever, retrying ~20 times a second).
 */
const MiB = 1 << 20
let tmp: string
let server: Server
const gets = new Map<string, number>()

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rostore-lost-progress-'))
  const fx = await makeBuildOutput(join(tmp, 'serve'), { store: 'lost', chunks: [{ dataBytes: 2 * MiB, indexBytes: 50_000 }] })
  server = createServer((req, res) => {
    const name = decodeURIComponent((req.url ?? '').replace(/\?.*$/, ''))
    const path = join(fx.root, name)
    gets.set(name, (gets.get(name) ?? 0) + 1)
    stat(path).then(
      (st) => {
        res.writeHead(200, { 'Content-Length': st.size })
        if (!name.endsWith('.data')) return void createReadStream(path).pipe(res)
        createReadStream(path, { start: 0, end: Math.floor(st.size / 2) - 1 })
          .on('end', () => res.socket?.destroy())
          .pipe(res, { end: false })
      },
      () => {
        res.writeHead(404)
        res.end()
      },
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
})
afterAll(async () => {
  server?.close()
  server?.closeAllConnections()
  await rm(tmp, { recursive: true, force: true })
})

test('a source that cuts every answer at the same place: the fetch fails after its retries, with back-off', async () => {
  const { port } = server.address() as AddressInfo
  const retries = 3
  const started = performance.now()
  const err = await fetchVersion({
    source: `http://127.0.0.1:${port}/`,
    nodeId: 0,
    destDir: join(tmp, 'dest'),
    retries,
    retryBaseDelayMs: 20,
  }).catch((e: unknown) => e)
  expect(isStoreError(err, 'RO_FETCH_FAILED')).toBe(true)
  expect((err as Error).message).toMatch(/gave up after 3 retries/)
  const dataGets = [...gets].filter(([name]) => name.endsWith('.data')).map(([, n]) => n)
  expect(dataGets).toEqual([retries + 1])
  // Back-off grew between the attempts (20, 40, 80 ms less at most 20% jitter), though each one got bytes.
  expect(performance.now() - started).toBeGreaterThanOrEqual(0.8 * (20 + 40 + 80))
})
