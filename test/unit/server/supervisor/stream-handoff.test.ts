import { createServer, request, type IncomingMessage, type Server } from 'node:http'
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { canHandOff, isHandOff, requestHead } from '../../../../server/supervisor/stream-handoff'
import { makeTestCertificates } from '../../../../testkit/net/tls-certs'
import { makeTmp } from '../../../../testkit/stores/tmp'

const tmp = makeTmp()

interface Seen {
  readonly canHandOff: boolean
  readonly head: string
}

/** Sends one request to a real server and returns what the handoff functions made of it there. */
async function seenBy(server: Server, send: (port: number) => ReturnType<typeof request>, body?: string): Promise<Seen> {
  const seen = new Promise<Seen>((resolve) => {
    server.once('request', (req: IncomingMessage, res) => {
      resolve({ canHandOff: canHandOff(req, true), head: requestHead(req) })
      res.end()
    })
  })
  const port = (server.address() as AddressInfo).port
  const req = send(port)
  req.on('response', (r) => r.resume())
  req.end(body)
  return seen
}

let plain: Server

beforeAll(async () => {
  plain = createServer()
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
})

afterAll(() => {
  plain.close()
})

const get =
  (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  (port: number) =>
    request({ host: '127.0.0.1', port, path, method, headers, agent: false })

describe('which requests a worker hands to the supervisor', () => {
  test('a GET of a dump path on plain TCP', async () => {
    expect((await seenBy(plain, get('/admin/stores/st/dump/entries?format=jsonl'))).canHandOff).toBe(true)
    expect((await seenBy(plain, get('/admin/stores/st/dump/keys'))).canHandOff).toBe(true)
  })

  test('not other paths, other methods, requests with a body, or a process without a channel', async () => {
    expect((await seenBy(plain, get('/admin/stores/st/versions'))).canHandOff).toBe(false)
    expect((await seenBy(plain, get('/stores/st/keys/a'))).canHandOff).toBe(false)
    expect((await seenBy(plain, get('/admin/stores/st/dump/entries/x'))).canHandOff).toBe(false)
    expect((await seenBy(plain, get('/admin/stores/st/dump/entries', {}, 'POST'), 'x')).canHandOff).toBe(false)
    expect((await seenBy(plain, get('/admin/stores/st/dump/entries', { 'content-length': '3' }), 'abc')).canHandOff).toBe(false)
    const inJest = new Promise<boolean>((resolve) => {
      plain.once('request', (req: IncomingMessage, res) => {
        resolve(canHandOff(req))
        res.end()
      })
    })
    get('/admin/stores/st/dump/entries')((plain.address() as AddressInfo).port)
      .on('response', (r) => r.resume())
      .end()
    // Jest runs these tests in a process without an IPC channel: nothing to hand off to.
    expect(await inJest).toBe(typeof process.send === 'function')
  })

  test('not TLS connections (a TLS session cannot move to another process)', async () => {
    const certs = makeTestCertificates(join(tmp.dir, 'certs'))
    const tls = createHttpsServer({ cert: certs.cert, key: certs.key })
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve))
    try {
      const seen = await seenBy(tls, (port) =>
        httpsRequest({ host: '127.0.0.1', port, path: '/admin/stores/st/dump/entries', ca: certs.ca, agent: false }),
      )
      expect(seen.canHandOff).toBe(false)
    } finally {
      tls.close()
    }
  })
})

describe('the replayed request head', () => {
  test('keeps the request line and headers as sent, and says Connection: close instead of keep-alive', async () => {
    const seen = await seenBy(
      plain,
      get('/admin/stores/st/dump/entries?partitions=1,2', {
        Authorization: 'Bearer t0ken',
        Connection: 'keep-alive',
        'Keep-Alive': 'timeout=5',
        'X-Two': 'a',
      }),
    )
    const lines = seen.head.split('\r\n')
    expect(lines[0]).toBe('GET /admin/stores/st/dump/entries?partitions=1,2 HTTP/1.1')
    expect(lines).toContain('Authorization: Bearer t0ken')
    expect(lines).toContain('X-Two: a')
    expect(lines.filter((l) => /^connection:/i.test(l))).toEqual(['Connection: close'])
    expect(lines.some((l) => /^keep-alive:/i.test(l))).toBe(false)
    expect(seen.head.endsWith('\r\n\r\n')).toBe(true)
  })

  test('the IPC message is recognized only with its text head', () => {
    expect(isHandOff({ rostore: 'handoff', head: 'GET / HTTP/1.1\r\n\r\n' })).toBe(true)
    expect(isHandOff({ rostore: 'handoff' })).toBe(false)
    expect(isHandOff({ rostore: 'reply', head: 'x' })).toBe(false)
    expect(isHandOff(null)).toBe(false)
  })
})
