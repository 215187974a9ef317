import { createReadStream } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fetchVersion } from '../../../fetcher/fetch-job'
import { HttpSource } from '../../../fetcher/sources/http'
import { RestartFromZeroError } from '../../../fetcher/sources/source'
import { checksumFile } from '../../../formats/store/chunk/checksum'
import { makeBuildOutput, type Fixture } from '../../../testkit/stores/fetch-fixture'

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void

/** A programmable server: each test sets `handler` to misbehave its own way. */
describe('HttpSource against a misbehaving server', () => {
  let tmp: string
  let fx: Fixture
  let server: http.Server
  let base: string
  let handler: Handler
  const signal = new AbortController().signal

  const serveFile: Handler = (req, res) => {
    const path = join(fx.root, decodeURIComponent(req.url ?? '/'))
    createReadStream(path)
      .on('error', () => {
        res.statusCode = 404
        res.end()
      })
      .once('open', () => res.writeHead(200))
      .pipe(res)
  }

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'rostore-httpsrc-'))
    fx = await makeBuildOutput(join(tmp, 'build'), { chunks: [{ dataBytes: 3 << 20, indexBytes: 50_000 }] })
    await mkdir(join(tmp, 'live'))
    server = http.createServer((req, res) => handler(req, res))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
    await rm(tmp, { recursive: true, force: true })
  })

  test('206 with the asked Content-Range resumes; a wrong one restarts from zero', async () => {
    const src = new HttpSource(base)
    try {
      handler = (_req, res) => {
        res.writeHead(206, { 'content-range': 'bytes 10-19/20', 'content-length': '10' })
        res.end(Buffer.alloc(10))
      }
      expect(await src.read('x', { start: 10, signal })).toMatchObject({ start: 10, size: 20 })
      handler = (_req, res) => {
        res.writeHead(206, { 'content-range': 'bytes 0-19/20', 'content-length': '20' })
        res.end(Buffer.alloc(20))
      }
      await expect(src.read('x', { start: 10, signal })).rejects.toBeInstanceOf(RestartFromZeroError)
      handler = (req, res) => {
        res.writeHead(200, { 'content-length': '20', 'x-range': String(req.headers.range) })
        res.end(Buffer.alloc(20))
      }
      expect(await src.read('x', { start: 10, signal })).toMatchObject({ start: 0, size: 20 })
      handler = (_req, res) => {
        res.writeHead(416)
        res.end()
      }
      await expect(src.read('x', { start: 10, signal })).rejects.toBeInstanceOf(RestartFromZeroError)
    } finally {
      src.close()
    }
  })

  test('5xx is transient, 404 and 403 permanent, redirects not followed', async () => {
    const src = new HttpSource(`${base}root`)
    const answer = (status: number, headers: http.OutgoingHttpHeaders = {}): void => {
      handler = (_req, res) => {
        res.writeHead(status, headers)
        res.end()
      }
    }
    try {
      answer(503)
      const e503 = await src.read('node-0/0.data', { start: 0, signal }).catch((e: unknown) => e)
      expect(e503).toBeInstanceOf(Error)
      expect(e503).not.toHaveProperty('code', 'RO_FETCH_FAILED')
      answer(404)
      await expect(src.read('node-0/0.data', { start: 0, signal })).rejects.toMatchObject({
        code: 'RO_FETCH_FAILED',
        message: `${base}root/node-0/0.data: not found (HTTP 404)`,
      })
      answer(403)
      await expect(src.read('node-0/0.data', { start: 0, signal })).rejects.toMatchObject({ code: 'RO_FETCH_FAILED' })
      answer(302, { location: 'http://elsewhere/' })
      await expect(src.read('node-0/0.data', { start: 0, signal })).rejects.toMatchObject({
        code: 'RO_FETCH_FAILED',
        message: expect.stringContaining('not followed'),
      })
    } finally {
      src.close()
    }
  })

  test('fetchVersion: 503s and a cut connection are retried; a server ignoring Range restarts the file', async () => {
    let failures = 2
    const ranges: string[] = []
    let cut = false
    handler = (req, res) => {
      if (req.url?.endsWith('.data')) {
        ranges.push(req.headers.range ?? '')
        if (failures-- > 0) {
          res.writeHead(503)
          res.end()
          return
        }
        if (!cut) {
          // Send half of the file, then drop the connection.
          cut = true
          void readFile(join(fx.nodeDir, '0.data')).then((data) => {
            res.writeHead(200, { 'content-length': String(data.length) })
            res.write(data.subarray(0, data.length >> 1), () => setTimeout(() => res.socket?.destroy(), 50))
          })
          return
        }
      }
      serveFile(req, res)
    }
    const destDir = join(tmp, 'live', 'v1')
    await fetchVersion({ source: base, nodeId: 0, destDir, retryBaseDelayMs: 10 })
    for (const f of fx.metadata.files) expect(await checksumFile(join(destDir, f.name))).toBe(f.checksum)
    expect(ranges[0]).toBe('')
    // After the cut, the client asked for the rest; the server answered 200 with all of it.
    expect(ranges[ranges.length - 1]).toMatch(/^bytes=[1-9]\d*-$/)
  })
})
