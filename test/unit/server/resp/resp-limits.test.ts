import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { nullLogger } from '../../../../server/log'
import { startNode, type RunningNode } from '../../../../server/node'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { request } from '../../../../testkit/cluster/node-process'
import { cli, RawConnection, redisCli } from '../../../../testkit/net/redis-cli'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Read authentication on both protocols, and the bounds of the RESP port: clients,
 * argument and query sizes, protocol errors, idle connections, reply size, and clients
 * that stop reading their replies. The node runs in-process so the tests can read its
 * counters; clients are redis-cli and raw sockets.
 */
const tmp = makeTmp('rostore-resp-limits-')
const READ_TOKEN = 'read-token-5f0c9a7e21'
const ADMIN_TOKEN = 'admin-token-8d3b6e41f7'
const BIG = 100 << 10
const AUTH = `AUTH ${READ_TOKEN}\r\n`

afterAll(() => tmp.cleanup())

// Both ways a plain-TCP connection is read: the listener's shared read buffer (the default) and Node streams.
describe.each(['shared buffer', 'stream'])('%s reads', (mode) => {
  let node: RunningNode
  let port: number

  beforeAll(async () => {
    const dataDir = join(tmp.dir, mode)
    const recs: [string, string][] = Array.from({ length: 50 }, (_, i) => [`key-${i}`, `value-${i}`])
    recs.push(['big', 'b'.repeat(BIG)])
    await makeNodeDir(join(dataDir, 'users', 'version-1'), recs, { store: 'users', version: 1 })
    writeFileSync(join(dataDir, 'users', 'LIVE'), '1\n')
    node = await startNode({
      cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
      nodeId: 0,
      dataDir,
      bind: '127.0.0.1',
      port: 0,
      log: nullLogger,
      defaultMetrics: false,
      adminToken: ADMIN_TOKEN,
      readToken: READ_TOKEN,
      resp: {
        port: 0,
        maxClients: 5,
        idleTimeoutMs: 1500,
        sendTimeoutMs: 300,
        outputHighWaterBytes: 64 << 10,
        maxReplyBytes: 250 << 10,
        requestLimits: { maxArgs: 20, maxBulkBytes: 1000, maxCommandBytes: 10_000 },
        streamReads: mode === 'stream',
      },
    })
    port = node.resp!.port
  })

  afterAll(async () => {
    await node?.close()
  })

  /** Waits (bounded) until a counter of the listener reaches a value; the listener updates them on socket events. */
  async function until(what: string, pred: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !pred(); i++) await new Promise((r) => setTimeout(r, 10))
    if (!pred()) throw new Error(`never happened: ${what}`)
  }

  test('RESP: nothing but AUTH, HELLO AUTH, QUIT and RESET before the read token; the admin token is refused', async () => {
    expect(await cli(port, 'GET', 'users:key-1')).toBe('(error) NOAUTH Authentication required.')
    expect(await cli(port, 'PING')).toBe('(error) NOAUTH Authentication required.')
    // Unknown and write commands do not reveal themselves before authentication either.
    expect(await cli(port, 'SET', 'a', 'b')).toBe('(error) NOAUTH Authentication required.')
    expect(await cli(port, 'HELLO', '3')).toMatch(/^\(error\) NOAUTH HELLO must be called with the client already authenticated/)
    const failures0 = node.resp!.stats.authFailures
    expect(await cli(port, 'AUTH', 'wrong')).toBe('(error) WRONGPASS invalid username-password pair or user is disabled.')
    expect(await cli(port, 'AUTH', ADMIN_TOKEN)).toBe('(error) WRONGPASS invalid username-password pair or user is disabled.')
    expect(await cli(port, 'AUTH', 'someone', READ_TOKEN)).toBe('(error) WRONGPASS invalid username-password pair or user is disabled.')
    expect(node.resp!.stats.authFailures).toBe(failures0 + 3)
    const ok = await redisCli(port, ['GET', 'users:key-1'], { flags: ['-a', READ_TOKEN, '--no-auth-warning'] })
    expect(ok.stdout.trim()).toBe('"value-1"')
    const raw = await RawConnection.open(port)
    raw.send(
      `AUTH default ${READ_TOKEN}\r\nGET users:key-2\r\nRESET\r\nGET users:key-2\r\nHELLO 3 AUTH default ${READ_TOKEN}\r\nGET users:nope\r\n`,
    )
    const text = await raw.until((t) => t.endsWith('_\r\n'))
    expect(text.startsWith('+OK\r\n$7\r\nvalue-2\r\n+RESET\r\n-NOAUTH Authentication required.\r\n%7\r\n')).toBe(true)
    raw.close()
  })

  test('HTTP reads want the read token (or the admin token) as a bearer; health and metrics stay public', async () => {
    const url = `${node.url}/stores/users/keys/key-3`
    const none = await request(url)
    expect(none.status).toBe(401)
    expect(none.headers['www-authenticate']).toBe('Bearer realm="rostore-read"')
    expect(JSON.parse(none.body.toString())).toEqual({ error: { code: 'RO_UNAUTHORIZED', message: 'missing or wrong read token' } })
    expect((await request(url, { headers: { authorization: 'Bearer nope' } })).status).toBe(401)
    const withRead = await request(url, { headers: { authorization: `Bearer ${READ_TOKEN}` } })
    expect(withRead.status).toBe(200)
    expect(withRead.body.toString()).toBe('value-3')
    expect((await request(url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200)
    expect((await request(`${node.url}/stores`)).status).toBe(401)
    expect((await request(`${node.url}/health`)).status).toBe(200)
    const metrics = await request(`${node.url}/metrics`)
    expect(metrics.status).toBe(200)
    expect(metrics.body.toString()).toMatch(/rostore_resp_keys_total\{store="users",source="local",result="hit"\} [1-9]/)
    expect(metrics.body.toString()).toMatch(/rostore_resp_auth_failures_total [1-9]/)
  })

  test('--resp-max-clients: the connection past the limit gets an error and is closed; a slot frees when one leaves', async () => {
    await until('no client connected', () => node.resp!.stats.connected === 0)
    const conns: RawConnection[] = []
    for (let i = 0; i < 5; i++) {
      const c = await RawConnection.open(port)
      c.send(`${AUTH}PING\r\n`)
      await c.until((t) => t.endsWith('+PONG\r\n'))
      conns.push(c)
    }
    const extra = await RawConnection.open(port)
    await extra.closedPromise
    expect(extra.text).toBe('-ERR max number of clients reached\r\n')
    expect(node.resp!.stats.rejectedConnections).toBeGreaterThanOrEqual(1)
    conns.pop()!.close()
    await until('a slot freed', () => node.resp!.stats.connected === 4)
    const again = await RawConnection.open(port)
    again.send(`${AUTH}PING\r\n`)
    expect(await again.until((t) => t.endsWith('+PONG\r\n'))).toBe('+OK\r\n+PONG\r\n')
    for (const c of [...conns, again]) c.close()
    await until('all left', () => node.resp!.stats.connected === 0)
  })

  test('before AUTH: a command larger than AUTH needs is refused at its header and the connection closes; after AUTH the node limits apply', async () => {
    const before = node.resp!.stats.protocolErrors
    // 15 arguments: within the node's 20, past the 10 an unauthenticated client may send.
    const refused = await RawConnection.open(port)
    refused.send('*15\r\n$4\r\nMGET\r\n')
    await refused.closedPromise
    expect(refused.text).toMatch(
      /^-ERR Protocol error: invalid multibulk length \(15 arguments, at most 10\) \(not authenticated: AUTH first\)\r\n$/,
    )
    expect(node.resp!.stats.protocolErrors).toBe(before + 1)
    // A small command runs (and is refused NOAUTH); after AUTH the same 15 arguments are an MGET.
    const c = await RawConnection.open(port)
    const mget = `*15\r\n$4\r\nMGET\r\n${Array.from({ length: 14 }, (_, i) => `$11\r\nusers:key-${i % 10}\r\n`).join('')}`
    c.send(`GET users:key-1\r\n${AUTH}${mget}`)
    const text = await c.until((t) => t.includes('*14\r\n') && t.endsWith('$7\r\nvalue-3\r\n'))
    expect(text.startsWith('-NOAUTH Authentication required.\r\n+OK\r\n*14\r\n$7\r\nvalue-0\r\n')).toBe(true)
    c.close()
  })

  test('protocol errors: replies before the bad frame are sent, then the error, then the connection closes', async () => {
    const cases: [string, RegExp][] = [
      [`*2\r\n$3\r\nGET\r\n$2000\r\n`, /^-ERR Protocol error: invalid bulk length/],
      ['*21\r\n', /^-ERR Protocol error: invalid multibulk length/],
      ['*1\r\nx', /^-ERR Protocol error: expected '\$', got 'x'/],
      ['PING "unbalanced\r\n', /^-ERR Protocol error: unbalanced quotes in request/],
      [`${'A'.repeat(70_000)}`, /^-ERR Protocol error: too big inline request/],
    ]
    const before = node.resp!.stats.protocolErrors
    let expectedErrors = 0
    for (const [bad, re] of cases) {
      const c = await RawConnection.open(port)
      c.send(`${AUTH}PING\r\n${bad}`)
      await c.closedPromise
      expect(c.text.startsWith('+OK\r\n+PONG\r\n')).toBe(true)
      expect(c.text.slice('+OK\r\n+PONG\r\n'.length)).toMatch(re)
      expectedErrors++
    }
    // The query buffer: 15 arguments of 999 bytes each fit the per-argument bound, not the 10,000-byte buffer.
    const c = await RawConnection.open(port)
    let body = `${AUTH}*15\r\n`
    for (let i = 0; i < 15; i++) body += `$999\r\n${'x'.repeat(999)}\r\n`
    c.send(body)
    await c.closedPromise
    expect(c.text).toMatch(/^\+OK\r\n-ERR Protocol error: command larger than the query buffer limit of 10000 bytes\r\n$/)
    expectedErrors++
    expect(node.resp!.stats.protocolErrors).toBe(before + expectedErrors)
    // The node serves on.
    expect((await redisCli(port, ['GET', 'users:key-9'], { flags: ['-a', READ_TOKEN, '--no-auth-warning'] })).stdout.trim()).toBe(
      '"value-9"',
    )
  })

  test('commands that arrive in pieces on several connections at once are answered whole (the read buffer is shared)', async () => {
    const conns = await Promise.all([0, 1, 2].map(() => RawConnection.open(port)))
    const cmd = (i: number): Buffer =>
      Buffer.from(`${AUTH}*3\r\n$4\r\nMGET\r\n$11\r\nusers:key-${i}\r\n$12\r\nusers:key-1${i}\r\n`, 'latin1')
    const parts = conns.map((_, i) => cmd(i))
    // Byte by byte, connections taking turns: every read of one lands where another's was.
    for (let at = 0; at < Math.max(...parts.map((b) => b.length)); at++) {
      conns.forEach((c, i) => {
        const b = parts[i] as Buffer
        if (at < b.length) c.send(b.subarray(at, at + 1))
      })
      if (at % 16 === 0) await new Promise((r) => setTimeout(r, 1))
    }
    for (const [i, c] of conns.entries()) {
      const text = await c.until((t) => t.includes(`value-1${i}\r\n`))
      expect(text).toBe(`+OK\r\n*2\r\n$7\r\nvalue-${i}\r\n$8\r\nvalue-1${i}\r\n`)
      c.close()
    }
  })

  test('an idle connection is closed after --resp-idle-timeout-ms', async () => {
    const before = node.resp!.stats.idleTimeouts
    const c = await RawConnection.open(port)
    c.send(`${AUTH}`)
    await c.until((t) => t === '+OK\r\n')
    await c.closedPromise
    expect(node.resp!.stats.idleTimeouts).toBe(before + 1)
  })

  test('an MGET whose reply would pass the reply bound gets RO_TOO_LARGE; the connection stays usable', async () => {
    const raw = await RawConnection.open(port)
    raw.send(`${AUTH}MGET users:big users:big users:big\r\nMGET users:big users:key-1\r\n`)
    const text = await raw.until((t) => t.endsWith('value-1\r\n'))
    expect(text.startsWith('+OK\r\n-RO_TOO_LARGE the reply would be larger than 256000 bytes\r\n*2\r\n$102400\r\n')).toBe(true)
    raw.close()
  })

  test('a client that stops reading is cut after the send timeout; others are served meanwhile', async () => {
    const before = node.resp!.stats.sendTimeouts
    const slow = await RawConnection.open(port)
    slow.socket.pause()
    // 400 replies of 100 KiB: 40 MiB, far more than the socket buffers and the 64 KiB high water.
    slow.send(AUTH + 'GET users:big\r\n'.repeat(400))
    const other = await RawConnection.open(port)
    other.send(`${AUTH}GET users:key-4\r\n`)
    expect(await other.until((t) => t.endsWith('value-4\r\n'))).toBe('+OK\r\n$7\r\nvalue-4\r\n')
    await until('the slow client is cut', () => node.resp!.stats.sendTimeouts === before + 1)
    other.send('PING\r\n')
    await other.until((t) => t.endsWith('+PONG\r\n'))
    other.close()
    slow.close()
  })

  test('shutdown: commands already received are answered, then connections close and new ones are refused', async () => {
    const c = await RawConnection.open(port)
    // 20 replies of 100 KiB: more than the high water, so some commands still wait in the node when it stops.
    c.send(AUTH + 'GET users:big\r\n'.repeat(20))
    await c.until((t) => t.length > 0)
    const closed = node.close()
    await c.closedPromise
    const reply = `$${BIG}\r\n${'b'.repeat(BIG)}\r\n`
    expect(c.text).toBe(`+OK\r\n${reply.repeat(20)}`)
    expect(await closed).toBe(true)
    await expect(RawConnection.open(port)).rejects.toThrow(/ECONNREFUSED/)
  })
})
