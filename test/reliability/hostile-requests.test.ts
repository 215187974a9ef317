import { existsSync, readFileSync } from 'node:fs'
import { Agent } from 'node:http'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { decodeValues, encodeKeys } from '../../formats/wire/multiget'
import { json, request, startSingleNode, type HttpResult, type NodeProcess } from '../../testkit/cluster/node-process'
import {
  keyName,
  makeVersionDir,
  reportFigures,
  sleep,
  versionDirsOf,
  versionValue,
  waitUntil,
} from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Promise 6 of docs/RELIABILITY.md: hostile requests. Against one real node (access log
 * on, so that as much as possible is logged): admin calls without or with a wrong token are
 * refused (401) and change nothing; traversal and absurd names in store, version, job and
 * key positions are refused precisely (400, or 404 where the name is valid but absent, or
 * 414 for an over-long key); oversized bodies and keys get 413/414/431; malformed multi-get
 * framing and malformed HTTP get 400; slow-loris connections (headers trickled one byte a
 * second) are closed by the headers timeout. Throughout, a well-behaved client keeps
 * reading and must see zero errors. At the end the node's log must not contain the admin
 * token, nor any of the wrong tokens tried. (The token comparison itself is constant-time
 * by construction, server/auth.ts: SHA-256 digests compared with timingSafeEqual; that is
 * checked by reading the code, not by a timing test.)
 * test/integration/server/admin-auth.test.ts covers 401/403 on every admin route and a
 * first list of traversal names; this widens both and adds the rest.
 */

jest.setTimeout(60_000)
const tmp = makeTmp('rostore-hostile-')
const TOKEN = 'hostile-test-token-6d1f0a9c2b7e4f38'
const WRONG_TOKENS = ['wrong', TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.toUpperCase(), `${TOKEN.slice(0, -1)}0`]
const STORE = 'users'
const KEYS = 200
const LORIS = 12
let node: NodeProcess
let dataDir: string
let srcV3: string
const figures = {
  requests: 0,
  unauthorized: 0,
  badNames: 0,
  tooLarge: 0,
  malformed: 0,
  slowLoris: LORIS,
  slowLorisClosedWithinMs: 0,
  goodReads: 0,
  goodErrors: 0,
}

// ---------------------------------------------------------------------------------------
// A well-behaved client, running through every test of this file.

const goodAgent = new Agent({ keepAlive: true, maxSockets: 4 })
let goodStop = false
let goodLoop: Promise<void> | undefined
const goodFailures: string[] = []

async function wellBehaved(): Promise<void> {
  for (let n = 0; !goodStop; n++) {
    const i = (n * 37) % KEYS
    try {
      const r = await request(`${node.url}/stores/${STORE}/keys/${keyName(i)}`, { agent: goodAgent, timeoutMs: 5000 })
      if (r.status !== 200 || r.body.toString() !== versionValue(1, i)) goodFailures.push(`get ${i}: ${r.status}`)
      const idx = Array.from({ length: 50 }, (_, j) => (n + j * 3) % KEYS)
      const m = await request(`${node.url}/stores/${STORE}/multi-get`, {
        method: 'POST',
        body: encodeKeys(idx.map(keyName)),
        agent: goodAgent,
        timeoutMs: 5000,
      })
      if (m.status !== 200) goodFailures.push(`multi-get: ${m.status}`)
      else
        decodeValues(m.body, idx.length).forEach(
          (v, j) => v?.toString() !== versionValue(1, idx[j]!) && goodFailures.push(`multi-get key ${idx[j]}`),
        )
      figures.goodReads += 51
    } catch (err) {
      goodFailures.push((err as Error).message)
    }
    await sleep(10)
  }
}

// ---------------------------------------------------------------------------------------
// Raw HTTP, for what a well-formed client library refuses to send.

interface RawResult {
  readonly status: number
  readonly head: string
  readonly body: Buffer
  /** The server closed the connection (or it was reset). */
  readonly closed: boolean
  readonly ms: number
}

/** Writes `parts` (pausing `gapMs` between them), then reads until the server closes or `timeoutMs`. */
function raw(parts: (string | Buffer)[], opts: { timeoutMs?: number; gapMs?: number } = {}): Promise<RawResult> {
  const started = Date.now()
  return new Promise((resolve) => {
    const socket: Socket = connect(node.port, '127.0.0.1')
    const got: Buffer[] = []
    let done = false
    const finish = (closed: boolean): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const all = Buffer.concat(got)
      const end = all.indexOf('\r\n\r\n')
      const head = end < 0 ? all.toString('latin1') : all.subarray(0, end).toString('latin1')
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
        head,
        body: end < 0 ? Buffer.alloc(0) : all.subarray(end + 4),
        closed,
        ms: Date.now() - started,
      })
    }
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 5000)
    socket.on('data', (d: Buffer) => got.push(d))
    socket.on('close', () => finish(true))
    socket.on('error', () => finish(true))
    socket.on('connect', async () => {
      for (const p of parts) {
        if (done || socket.destroyed) return
        socket.write(p)
        if (opts.gapMs) await sleep(opts.gapMs)
      }
    })
  })
}

const auth = { authorization: `Bearer ${TOKEN}` }

async function call(
  method: string,
  path: string,
  body?: object | Buffer | string,
  headers: Record<string, string> = {},
): Promise<HttpResult> {
  figures.requests++
  return request(`${node.url}${path}`, { method, body, headers, agent: false, timeoutMs: 10_000 })
}

function codeOf(r: HttpResult): string | undefined {
  try {
    return json<{ error?: { code?: string } }>(r).error?.code
  } catch {
    return undefined
  }
}

/** The state an unauthorized or refused call must not have changed. */
async function snapshot(): Promise<string> {
  const status = json<{ stores: Record<string, unknown>[]; jobs: unknown }>(await node.request('/status'))
  const jobs = json(await node.request('/admin/jobs', { headers: auth }))
  return JSON.stringify({
    // Read counters move with the well-behaved client's reads: state only.
    stores: status.stores.map(({ coldReads: _counters, ...state }) => state),
    jobs: status.jobs,
    jobList: jobs['jobs'],
    live: readFileSync(join(dataDir, STORE, 'LIVE'), 'utf8'),
    stale: existsSync(join(dataDir, STORE, 'STALE')),
    dirs: versionDirsOf(join(dataDir, STORE)),
  })
}

// Slow-loris sockets, opened first and left trickling while the other tests run.
const loris: Promise<RawResult>[] = []

beforeAll(async () => {
  const v1 = await makeVersionDir(join(tmp.dir, 'src', 'v1'), { store: STORE, version: 1, keys: KEYS })
  const v2 = await makeVersionDir(join(tmp.dir, 'src', 'v2'), { store: STORE, version: 2, keys: KEYS })
  srcV3 = await makeVersionDir(join(tmp.dir, 'src', 'v3'), { store: STORE, version: 3, keys: KEYS })
  dataDir = join(tmp.dir, 'data')
  node = await startSingleNode({ dir: tmp.dir, dataDir, token: TOKEN, keepVersions: 5, extraArgs: ['--access-log'] })
  await node.install(STORE, v1, { swap: true })
  await node.install(STORE, v2)
  for (let k = 0; k < LORIS; k++) {
    // A header byte a second: the request never completes; the headers timeout (10 s) must end it.
    const trickle = `X-Slow-${k}: ${'a'.repeat(30)}`.split('')
    loris.push(raw([`GET /stores/${STORE}/keys/key-1 HTTP/1.1\r\nHost: x\r\n`, ...trickle], { gapMs: 1000, timeoutMs: 20_000 }))
  }
  goodLoop = wellBehaved()
})

afterAll(async () => {
  goodStop = true
  await goodLoop
  goodAgent.destroy()
  if (node?.running) await node.kill9()
  tmp.cleanup()
  const f = figures
  reportFigures(
    'hostile-requests',
    `hostile-requests: ${f.requests} hostile requests (${f.unauthorized} unauthorized admin calls, ${f.badNames} bad or absent names, ${f.tooLarge} oversized, ${f.malformed} malformed), ${f.slowLoris} slow-loris connections all closed within ${(f.slowLorisClosedWithinMs / 1000).toFixed(1)} s; the well-behaved client read ${f.goodReads} keys with ${f.goodErrors} errors; token in logs: no`,
    f,
  )
})

test('admin calls without or with a wrong token: 401, and nothing changes', async () => {
  const before = await snapshot()
  const calls: [string, string, object | undefined][] = [
    ['POST', `/admin/stores/${STORE}/install`, { path: srcV3, swap: true }],
    ['POST', `/admin/stores/${STORE}/fetch`, { source: join(tmp.dir, 'src'), swap: true }],
    ['POST', `/admin/stores/${STORE}/swap`, { version: 2 }],
    ['POST', `/admin/stores/${STORE}/rollback`, {}],
    ['DELETE', `/admin/stores/${STORE}/versions/2`, undefined],
    ['PUT', `/admin/stores/${STORE}/stale`, { reason: 'x' }],
    ['POST', `/admin/stores/${STORE}/lock`, { owner: 'evil', ttlMs: 60000 }],
    ['POST', '/admin/rescan', undefined],
    ['GET', '/admin/jobs', undefined],
  ]
  const headerSets: Record<string, string>[] = [
    {},
    ...WRONG_TOKENS.map((t) => ({ authorization: `Bearer ${t}` })),
    { authorization: `bearer ${WRONG_TOKENS[1]}` },
    { authorization: `Bearer ${TOKEN} extra` },
    { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` },
    { authorization: TOKEN },
    { authorization: 'Bearer' },
    { authorization: `Bearer ${'x'.repeat(100_000)}` },
  ]
  for (const headers of headerSets) {
    for (const [method, path, body] of calls) {
      const r = await call(method, path, body, headers)
      expect({ method, path, status: r.status, code: codeOf(r) }).toEqual({ method, path, status: 401, code: 'RO_UNAUTHORIZED' })
      expect(r.headers['www-authenticate']).toMatch(/^Bearer/)
      figures.unauthorized++
    }
  }
  // The token as a query parameter or a cookie is no token.
  for (const path of [`/admin/jobs?token=${TOKEN}`, `/admin/stores/${STORE}/swap?access_token=${TOKEN}`]) {
    expect(
      (
        await call(path.includes('swap') ? 'POST' : 'GET', path, path.includes('swap') ? { version: 2 } : undefined, {
          cookie: `token=${TOKEN}`,
        })
      ).status,
    ).toBe(401)
    figures.unauthorized++
  }
  // A job, had a refused call started one, is listed from the moment it was accepted.
  expect(await snapshot()).toBe(before)
})

test('traversal and absurd names: 400 for invalid, 404 for valid but absent, per position', async () => {
  const before = await snapshot()
  const long = (n: number): string => 'a'.repeat(n)
  // [method, path, body, status, code]; admin paths carry the right token.
  const cases: [string, string, object | undefined, number, string | undefined][] = [
    // store names, public and admin routes
    ...[
      '..',
      '.',
      '%2e%2e',
      '%2E%2e',
      '.%2e',
      '%2F',
      'a%2Fb',
      '%2Fetc%2Fpasswd',
      '..%2F..%2Fetc%2Fpasswd',
      '..%5C..%5Cwindows',
      '%00',
      'users%00',
      'a%00b',
      '%ZZ',
      '%C3%A9t%C3%A9',
      'users%20',
      '-users',
      long(129),
      long(10_240),
      '%2e%2e%2f%2e%2e%2fdata',
    ].flatMap((name): [string, string, object | undefined, number, string | undefined][] => [
      ['GET', `/stores/${name}/keys/x`, undefined, 400, 'RO_BAD_REQUEST'],
      ['GET', `/stores/${name}`, undefined, 400, 'RO_BAD_REQUEST'],
      ['POST', `/stores/${name}/multi-get`, undefined, 400, 'RO_BAD_REQUEST'],
      ['POST', `/admin/stores/${name}/swap`, { version: 1 }, 400, 'RO_BAD_REQUEST'],
      ['POST', `/admin/stores/${name}/install`, { path: srcV3 }, 400, 'RO_BAD_REQUEST'],
    ]),
    ['GET', '/stores//keys/x', undefined, 400, 'RO_BAD_REQUEST'],
    // a store this node does not serve is "not serving" (route around it), not "absent"
    ['GET', '/stores/nosuchstore/keys/x', undefined, 421, 'RO_NOT_SERVING'],
    ['GET', '/stores/USERS/keys/x', undefined, 421, 'RO_NOT_SERVING'],
    ['GET', `/stores/${long(128)}`, undefined, 421, 'RO_NOT_SERVING'],
    ['GET', `/stores/${STORE}/../${STORE}/keys/x`, undefined, 404, 'RO_NOT_FOUND'],
    ['POST', '/admin/stores/nosuchstore/swap', { version: 1 }, 404, 'RO_NOT_FOUND'],
    // versions, in the path
    ...[
      '..',
      '%2e%2e',
      '..%2F1',
      '0',
      '-1',
      '1.5',
      '1e3',
      '01',
      '0x1',
      '1%00',
      '%2B1',
      '99999999999999999999',
      long(5000).replace(/a/g, '9'),
      'version-1',
    ].map((v): [string, string, object | undefined, number, string | undefined] => [
      'DELETE',
      `/admin/stores/${STORE}/versions/${v}`,
      undefined,
      400,
      'RO_BAD_REQUEST',
    ]),
    ['DELETE', `/admin/stores/${STORE}/versions/77`, undefined, 404, 'RO_NOT_FOUND'],
    ['DELETE', `/admin/stores/${STORE}/versions/1`, undefined, 409, 'RO_CONFLICT'],
    ['DELETE', `/admin/stores/${STORE}/versions/1/../2`, undefined, 404, 'RO_NOT_FOUND'],
    // versions, in bodies
    ...(['../1', -1, 0, 1.5, '+1', 2 ** 53, null, {}, [], '', 'version-1', '1e0', true, '0x2'] as unknown[]).map(
      (v): [string, string, object | undefined, number, string | undefined] => [
        'POST',
        `/admin/stores/${STORE}/swap`,
        { version: v },
        400,
        'RO_BAD_REQUEST',
      ],
    ),
    ['POST', `/admin/stores/${STORE}/swap`, { version: 77 }, 404, 'RO_NOT_FOUND'],
    ['POST', `/admin/stores/${STORE}/rollback`, { to: '../0' }, 400, 'RO_BAD_REQUEST'],
    ['POST', `/admin/stores/${STORE}/swap`, { version: 2, verison: 3 }, 400, 'RO_BAD_REQUEST'],
    // job ids
    ...['..%2F..%2Fetc', '%2e%2e', 'not-a-uuid', long(5000), '00000000-0000-4000-8000-00000000000g'].map(
      (id): [string, string, object | undefined, number, string | undefined] => [
        'GET',
        `/admin/jobs/${id}`,
        undefined,
        400,
        'RO_BAD_REQUEST',
      ],
    ),
    ['GET', '/admin/jobs/00000000-0000-4000-8000-000000000000', undefined, 404, 'RO_NOT_FOUND'],
    // paths and sources in bodies
    ...([['relative/dir'], ['../up'], [''], [`/a${'b'.repeat(5000)}`], ['/tmp/\u0000x'], [42]] as unknown[][]).map(
      ([p]): [string, string, object | undefined, number, string | undefined] => [
        'POST',
        `/admin/stores/${STORE}/install`,
        { path: p },
        400,
        'RO_BAD_REQUEST',
      ],
    ),
    ...([[''], [`/a${'b'.repeat(5000)}`], ['/tmp/\u0000x'], [{}]] as unknown[][]).map(
      ([p]): [string, string, object | undefined, number, string | undefined] => [
        'POST',
        `/admin/stores/${STORE}/fetch`,
        { source: p },
        400,
        'RO_BAD_REQUEST',
      ],
    ),
    // routes that are not there
    ['GET', '/../../etc/passwd', undefined, 404, 'RO_NOT_FOUND'],
    ['GET', '/%2e%2e/%2e%2e/etc/passwd', undefined, 404, 'RO_NOT_FOUND'],
    ['GET', `/stores/${STORE}/keys`, undefined, 404, 'RO_NOT_FOUND'],
  ]
  for (const [method, path, body, status, code] of cases) {
    const r = await call(method, path, body, path.startsWith('/admin') ? auth : {})
    expect({ method, path: path.slice(0, 120), status: r.status, code: codeOf(r) }).toEqual({
      method,
      path: path.slice(0, 120),
      status,
      code,
    })
    figures.badNames++
  }

  // Keys are bytes: a traversal-looking key is just a key, absent here (404, empty body,
  // version header); a broken escape or a raw non-ASCII byte is refused; length is bounded.
  const keyCases: [string, number][] = [
    ['..%2F..%2Fetc%2Fpasswd', 404],
    ['../../etc/passwd', 404],
    ['%2e%2e', 404],
    ['%00', 404],
    ['a%00b', 404],
    ['%FF%FE', 404],
    ['', 404],
    ['key-1%00', 404],
    [long(65535), 404],
    ['%61'.repeat(65535), 404],
    ['%ZZ', 400],
    ['%', 400],
    ['%4', 400],
    [long(65536), 414],
    ['%61'.repeat(65536), 414],
    [long(300_000), 414],
  ]
  for (const [key, status] of keyCases) {
    const r = await call('GET', `/stores/${STORE}/keys/${key}`)
    expect({ key: key.slice(0, 40), status: r.status }).toEqual({ key: key.slice(0, 40), status })
    if (status === 404) {
      expect(r.body.length).toBe(0)
      expect(r.headers['x-rostore-version']).toBe('1')
    } else expect(codeOf(r)).toBe(status === 414 ? 'RO_TOO_LARGE' : 'RO_BAD_REQUEST')
    figures.badNames++
  }
  // What a client library will not send: raw control and non-ASCII bytes in the path.
  for (const path of [
    `/stores/${STORE}/keys/a b`,
    `/stores/${STORE}/keys/\u00e9`,
    `/stores/us\u0000ers/keys/x`,
    `/stores/${STORE}/keys/\u0001`,
    '/stores/\u00ff/keys/x',
  ]) {
    figures.requests++
    const r = await raw([
      Buffer.concat([Buffer.from('GET '), Buffer.from(path, 'latin1'), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')]),
    ])
    expect({ path, status: r.status }).toEqual({ path, status: 400 })
    figures.badNames++
  }
  expect(await snapshot()).toBe(before)
})

test('oversized bodies, keys, URLs and headers: 413, 414, 431', async () => {
  const before = await snapshot()
  // Raw sockets throughout. (The node closes the connection after a 413 on an unfinished
  // body without lingering: a client still sending may get a reset instead of the answer,
  // see docs/RELIABILITY.md. So each case sends what the node reads, and no more.)
  const codeIn = (r: RawResult): string | undefined => {
    try {
      return (JSON.parse(r.body.toString('utf8')) as { error?: { code?: string } }).error?.code
    } catch {
      return undefined
    }
  }
  const head = (method: string, path: string, extra: string): string =>
    `${method} ${path} HTTP/1.1\r\nHost: x\r\n${path.startsWith('/admin') ? `Authorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` : ''}${extra}\r\n`
  // Declared too large: refused from the headers alone, before any body byte; connection closed.
  for (const [path, size] of [
    [`/admin/stores/${STORE}/swap`, (2 << 20) + 30],
    [`/admin/stores/${STORE}/install`, (1 << 20) + 1],
    [`/stores/${STORE}/multi-get`, (16 << 20) + 1],
    [`/stores/${STORE}/multi-get`, 1 << 30],
    [`/admin/stores/${STORE}/fetch`, 64 << 20],
  ] as const) {
    figures.requests++
    const r = await raw([head('POST', path, `Content-Length: ${size}\r\n`)], { timeoutMs: 5000 })
    expect({ path, size, status: r.status, code: codeIn(r), closed: r.closed }).toEqual({
      path,
      size,
      status: 413,
      code: 'RO_TOO_LARGE',
      closed: true,
    })
    figures.tooLarge++
  }
  // Read, then refused: too many keys, a key too long, a chunked body running past 1 MiB.
  const bodies: [string, Buffer][] = [
    ['10,001 keys', encodeKeys(Array.from({ length: 10_001 }, (_, i) => keyName(i % KEYS)))],
    ['a 65,536-byte key', encodeKeys(['key-1', Buffer.alloc(65_536, 0x61)])],
  ]
  for (const [what, body] of bodies) {
    figures.requests++
    const r = await raw([head('POST', `/stores/${STORE}/multi-get`, `Content-Length: ${body.length}\r\nConnection: close\r\n`), body], {
      timeoutMs: 10_000,
    })
    expect({ what, status: r.status, code: codeIn(r) }).toEqual({ what, status: 413, code: 'RO_TOO_LARGE' })
    figures.tooLarge++
  }
  figures.requests++
  const chunk = `${(64 << 10).toString(16)}\r\n${' '.repeat(64 << 10)}\r\n`
  const chunked = await raw(
    [head('POST', `/admin/stores/${STORE}/swap`, 'Transfer-Encoding: chunked\r\n'), ...Array<string>(17).fill(chunk)],
    { timeoutMs: 5000 },
  )
  expect({ status: chunked.status, code: codeIn(chunked) }).toEqual({ status: 413, code: 'RO_TOO_LARGE' })
  figures.tooLarge++
  // A URL over 1 MiB (414), request headers over 1 MiB + 64 KiB (431), in one header or many.
  figures.requests += 3
  expect(
    (
      await raw([`GET /stores/${STORE}/keys/${'a'.repeat((1 << 20) + 10)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`], {
        timeoutMs: 10_000,
      })
    ).status,
  ).toBe(414)
  expect((await raw([`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(2 << 20)}\r\n\r\n`], { timeoutMs: 10_000 })).status).toBe(431)
  expect(
    (
      await raw(
        [`GET /health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 20_000 }, (_, i) => `X-H${i}: ${'v'.repeat(60)}\r\n`).join('')}\r\n`],
        { timeoutMs: 10_000 },
      )
    ).status,
  ).toBe(431)
  figures.tooLarge += 3
  expect(await snapshot()).toBe(before)
})

test('malformed multi-get framing and malformed HTTP: 400', async () => {
  const frames: [string, Buffer, number][] = [
    ['a truncated length', Buffer.from([0, 0, 0]), 400],
    ['a length past the end', Buffer.concat([Buffer.from([0, 0, 0, 10]), Buffer.from('short')]), 400],
    ['a good key, then half a length', Buffer.concat([encodeKeys(['key-1']), Buffer.from([0, 0])]), 400],
    ['a good key, then a key cut short', Buffer.concat([encodeKeys(['key-1']), Buffer.from([0, 0, 0, 5, 0x6b])]), 400],
    ['a length of 4 GiB', Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3]), 413],
  ]
  for (const [what, body, status] of frames) {
    const r = await call('POST', `/stores/${STORE}/multi-get`, body)
    expect({ what, status: r.status, code: codeOf(r) }).toEqual({ what, status, code: status === 400 ? 'RO_BAD_REQUEST' : 'RO_TOO_LARGE' })
    figures.malformed++
  }
  // An empty body is zero keys: an empty answer.
  const empty = await call('POST', `/stores/${STORE}/multi-get`, Buffer.alloc(0))
  expect({ status: empty.status, bytes: empty.body.length }).toEqual({ status: 200, bytes: 0 })
  expect((await call('GET', `/stores/${STORE}/multi-get`)).status).toBe(405)
  expect((await call('PUT', `/stores/${STORE}/keys/key-1`, 'x')).status).toBe(405)
  const http: string[] = [
    'GARBAGE\r\n\r\n',
    'GET /health HTTP/9.9\r\nHost: x\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
    'POST /stores/users/multi-get HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n',
    'GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
    'POST /stores/users/multi-get HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n',
    'GET  HTTP/1.1\r\n\r\n',
    '\u0000\u0001\u0002\u0003\r\n\r\n',
  ]
  for (const req of http) {
    figures.requests++
    const r = await raw([Buffer.from(req, 'latin1')])
    expect({ req: JSON.stringify(req).slice(0, 60), status: r.status }).toEqual({ req: JSON.stringify(req).slice(0, 60), status: 400 })
    figures.malformed++
  }
})

test('slow-loris connections are closed by the headers timeout (10 s)', async () => {
  const results = await Promise.all(loris)
  for (const r of results) {
    // Closed by the server, with a 408 when it could still write one, well before the trickle ended.
    expect(r.closed).toBe(true)
    expect([0, 408]).toContain(r.status)
    expect(r.ms).toBeGreaterThanOrEqual(9_000)
    expect(r.ms).toBeLessThan(15_000)
  }
  figures.slowLorisClosedWithinMs = Math.max(...results.map((r) => r.ms))
})

test('the well-behaved client saw zero errors throughout, and no token reached the log', async () => {
  goodStop = true
  await goodLoop
  figures.goodErrors = goodFailures.length
  expect(goodFailures).toEqual([])
  expect(figures.goodReads).toBeGreaterThan(1000)
  expect((await node.request('/health')).status).toBe(200)
  expect(node.running).toBe(true)
  // Tokens in odd places, while the access log is on.
  const healthLines = (): number => node.events().filter((e) => e.event === 'request' && e.op === 'health').length
  const seen = healthLines()
  await call('GET', `/stores/${TOKEN}/keys/x`)
  await call('GET', `/health?token=${TOKEN}`)
  // Its access-log line is the last one of these requests: once it is there, all are.
  expect(await waitUntil(() => healthLines() > seen, 10_000)).toBe(true)
  const log = node.lines.join('\n')
  expect(node.lines.length).toBeGreaterThan(100) // the access log was on
  for (const t of [TOKEN, ...WRONG_TOKENS.filter((t) => t.length > 8)]) expect(log).not.toContain(t)
  expect(log).not.toMatch(/Bearer|authorization/i)
  // No hostile request made the node count a server-side error.
  expect((await node.request('/metrics')).body.toString()).not.toMatch(/rostore_errors_total\{/)
})
