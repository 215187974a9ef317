import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { histogramPercentile, type LatencyHistogram } from '../../../bench/load/latency-histogram'
import { compilePacedLoad } from '../../../bench/load/paced-load'

const run = promisify(execFile)

/** A RESP server answering every GET with a 5-byte value, counting the GETs it got. */
function respServer(): Promise<{ server: Server; port: number; gets: () => number }> {
  let gets = 0
  const server = createServer((socket: Socket) => {
    let pending = ''
    socket.on('data', (d) => {
      pending += d.toString('latin1')
      const whole = /^\*2\r\n\$3\r\nGET\r\n\$(\d+)\r\n/
      for (;;) {
        const m = whole.exec(pending)
        if (!m) break
        const end = m[0].length + Number(m[1]) + 2
        if (pending.length < end) break
        pending = pending.slice(end)
        gets++
        socket.write('$5\r\nhello\r\n')
      }
    })
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address()
      resolve({ server, port: typeof addr === 'object' && addr ? addr.port : 0, gets: () => gets })
    }),
  )
}

describe('the C paced load generator (bench/tools/paced-load.c)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rostore-paced-'))
  const bin = join(dir, 'paced-load')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('sends rate × seconds requests and reports every answer in its latency histogram', async () => {
    compilePacedLoad(bin)
    const { server, port, gets } = await respServer()
    try {
      const { stdout } = await run(bin, [String(port), 'resp', 'bench', '1000', '7', '400', '4', '1'])
      const r = JSON.parse(stdout) as { requests: number; status200: number; errors: number; maxMs: number; hist: LatencyHistogram }
      expect(r.requests).toBe(400)
      expect(r.status200).toBe(400)
      expect(r.errors).toBe(0)
      expect(gets()).toBe(400)
      expect(r.hist.reduce((s, [, n]) => s + n, 0)).toBe(400)
      const buckets = r.hist.map(([b]) => b)
      expect(buckets).toEqual([...buckets].sort((a, b) => a - b))
      expect(new Set(buckets).size).toBe(buckets.length)
      // The slowest answer's bucket holds the maximum: its upper bound is at most 2% above it.
      const top = histogramPercentile(r.hist, 100)
      expect(top).toBeGreaterThanOrEqual(r.maxMs)
      expect(top).toBeLessThanOrEqual(r.maxMs * 1.02 + 1e-6)
    } finally {
      server.close()
    }
  })
})
