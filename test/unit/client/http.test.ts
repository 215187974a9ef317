import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { httpRequest } from '../../../client/http'

/**
 * The client's one HTTP exchange retries idempotent requests whose connection was reset
 * before an answer (job polls failed a push with ECONNRESET), and
 * never retries the others.
 */
let server: Server
let port = 0
let seen = 0
let resetsLeft = 0

beforeAll(async () => {
  server = createServer((req, res) => {
    seen++
    if (resetsLeft > 0) {
      resetsLeft--
      req.socket.destroy()
      return
    }
    res.end('ok')
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  port = (server.address() as AddressInfo).port
})

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()))
})

beforeEach(() => {
  seen = 0
})

const call = (method: 'GET' | 'POST', idempotent?: boolean) =>
  httpRequest({ host: '127.0.0.1', port, method, path: '/x', timeoutMs: 5000, ...(idempotent === undefined ? {} : { idempotent }) })

test('an idempotent request is sent again after a reset, up to twice', async () => {
  resetsLeft = 2
  const r = await call('GET', true)
  expect(r.body.toString()).toBe('ok')
  expect(seen).toBe(3)
})

test('a third reset in a row is reported as the node being unreachable', async () => {
  resetsLeft = 3
  await expect(call('GET', true)).rejects.toMatchObject({ code: 'RO_UNAVAILABLE' })
  expect(seen).toBe(3)
  resetsLeft = 0
})

test('a request not said to be idempotent is never sent twice', async () => {
  resetsLeft = 1
  await expect(call('POST')).rejects.toMatchObject({ code: 'RO_UNAVAILABLE' })
  expect(seen).toBe(1)
  resetsLeft = 0
})
