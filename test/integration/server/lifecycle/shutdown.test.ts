import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { makeTmp } from '../../../../testkit/stores/tmp'
import { request, startSingleNode, type NodeProcess } from '../../../../testkit/cluster/node-process'
import { decodeValues, encodeKeys } from '../../../../formats/wire/multiget'
import { keyOf, makeVersions, STORE, valueOf } from '../fixture'

const TOKEN = 'shutdown-token-0123456789'

/** Raw HTTP/1.1 exchange where the test decides when each byte is sent. */
function rawConnection(port: number): Promise<{ socket: Socket; response: Promise<Buffer> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      const parts: Buffer[] = []
      const response = new Promise<Buffer>((res) => {
        socket.on('data', (d: Buffer) => parts.push(d))
        socket.on('close', () => res(Buffer.concat(parts)))
      })
      resolve({ socket, response })
    })
    socket.on('error', reject)
  })
}

/** Status and body of a raw response (Content-Length or chunked). */
function parseResponse(raw: Buffer): { status: number; headers: string; body: Buffer } {
  const end = raw.indexOf('\r\n\r\n')
  const headers = raw.subarray(0, end).toString('latin1')
  const status = Number(/^HTTP\/1\.1 (\d+)/.exec(headers)?.[1])
  let rest = raw.subarray(end + 4)
  if (/transfer-encoding: chunked/i.test(headers)) {
    const parts: Buffer[] = []
    for (;;) {
      const nl = rest.indexOf('\r\n')
      const size = Number.parseInt(rest.subarray(0, nl).toString('latin1'), 16)
      if (!size) break
      parts.push(rest.subarray(nl + 2, nl + 2 + size))
      rest = rest.subarray(nl + 2 + size + 2)
    }
    return { status, headers, body: Buffer.concat(parts) }
  }
  return { status, headers, body: rest }
}

describe('SIGTERM drains in-flight requests, then exits 0 (real node)', () => {
  const tmp = makeTmp('rostore-shutdown-')
  let node: NodeProcess
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  test('stop accepting, finish in-flight, exit 0', async () => {
    const src = await makeVersions(tmp.dir, [1])
    // One serving process: its listener closes, so new connections are refused by the kernel.
    // A node with several workers resets them instead (the next test).
    node = await startSingleNode({ dir: tmp.dir, dataDir: join(tmp.dir, 'data'), token: TOKEN, workers: 1 })
    await node.install(STORE, src[1]!, { swap: true })
    // An idle keep-alive connection must not hold the shutdown up.
    expect((await node.request('/health')).status).toBe(200)

    // In flight: headers and half of a multi-get body sent.
    const keys = Array.from({ length: 200 }, (_, i) => keyOf(i))
    const body = encodeKeys(keys)
    const { socket, response } = await rawConnection(node.port)
    socket.write(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`)
    socket.write(body.subarray(0, body.length >> 1))
    await new Promise((r) => setTimeout(r, 100))

    node.signal('SIGTERM')
    await node.waitForEvent((e) => e['event'] === 'shutdown-started')
    // New connections are refused once the server stopped listening.
    await expect(request(`${node.url}/health`, { agent: false, timeoutMs: 2000 })).rejects.toThrow(/ECONNREFUSED|ECONNRESET|socket hang up/)
    expect(node.running).toBe(true)

    // The in-flight request completes normally.
    socket.write(body.subarray(body.length >> 1))
    const res = parseResponse(await response)
    expect(res.status).toBe(200)
    expect(res.headers).toMatch(/connection: close/i)
    const values = decodeValues(res.body, keys.length)
    values.forEach((v, i) => expect(v?.toString()).toBe(valueOf(1, i)))

    const exit = await node.exited
    expect(exit).toEqual({ code: 0, signal: null })
    expect(node.events().some((e) => e['event'] === 'shutdown-complete' && e['drained'] === true)).toBe(true)
  })
})

describe('SIGTERM on a node with several serving workers (real processes)', () => {
  const tmp = makeTmp('rostore-shutdown-workers-')
  let node: NodeProcess
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })

  /** Resolves how a new connection ended: it must end at once, never be served or left waiting. */
  function respAfterStop(port: number): Promise<string> {
    return new Promise((resolve) => {
      const s = connect(port, '127.0.0.1')
      let data = ''
      const timer = setTimeout(() => {
        s.destroy()
        resolve('still waiting after 10 s')
      }, 10_000)
      s.on('connect', () => s.write('PING\r\n'))
      s.on('data', (d: Buffer) => (data += d.toString('latin1')))
      s.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        resolve(err.code ?? err.message)
      })
      s.on('close', () => {
        clearTimeout(timer)
        resolve(data === '' ? 'closed' : `answered ${JSON.stringify(data)}`)
      })
    })
  }

  test('connections made while the workers drain end at once (HTTP and RESP); in-flight work completes; exit 0', async () => {
    const src = await makeVersions(tmp.dir, [1])
    node = await startSingleNode({
      dir: tmp.dir,
      dataDir: join(tmp.dir, 'data'),
      token: TOKEN,
      workers: 2,
      extraArgs: ['--resp-port', '0', '--resp-default-store', STORE],
    })
    await node.install(STORE, src[1]!, { swap: true })
    const respPort = node.respPort!
    expect(respPort).toBeGreaterThan(0)
    const keys = Array.from({ length: 200 }, (_, i) => keyOf(i))
    const body = encodeKeys(keys)
    const { socket, response } = await rawConnection(node.port)
    // A first request answered on this connection: a worker holds it before the stop.
    const answered = new Promise((r) => socket.once('data', r))
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n')
    await answered
    socket.write(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`)
    socket.write(body.subarray(0, body.length >> 1))

    node.signal('SIGTERM')
    const draining = new Set<unknown>()
    await node.waitForEvent((e) => {
      if (e['event'] === 'worker-draining') draining.add(e['index'])
      return draining.size === 2
    })
    // Several new connections: each lands on one worker or the other; none is served, none waits.
    for (let i = 0; i < 6; i++) {
      await expect(request(`${node.url}/health`, { agent: false, timeoutMs: 10_000 })).rejects.toThrow(
        /ECONNREFUSED|ECONNRESET|socket hang up/,
      )
      expect(await respAfterStop(respPort)).toMatch(/^(ECONNREFUSED|ECONNRESET|EPIPE|closed)$/)
    }
    expect(node.running).toBe(true)

    socket.write(body.subarray(body.length >> 1))
    const raw = await response
    // The second response on the connection is the multi-get's.
    const res = parseResponse(raw.subarray(raw.indexOf('HTTP/1.1 ', 1)))
    expect(res.status).toBe(200)
    expect(res.headers).toMatch(/connection: close/i)
    const values = decodeValues(res.body, keys.length)
    values.forEach((v, i) => expect(v?.toString()).toBe(valueOf(1, i)))
    expect(await node.exited).toEqual({ code: 0, signal: null })
  })
})
