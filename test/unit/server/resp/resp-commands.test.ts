import { release } from 'node:os'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { nullLogger } from '../../../../server/log'
import { startNode, type RunningNode } from '../../../../server/node'
import { makeNodeDir } from '../../../../testkit/stores/make-store'
import { cli, RawConnection, redisCli } from '../../../../testkit/net/redis-cli'
import { makeTmp } from '../../../../testkit/stores/tmp'

/**
 * Every command of the RESP port through redis-cli (Debian redis-tools), against an
 * in-process node with two stores: replies, their types (RESP2 and RESP3), errors,
 * pipes. The cluster has one node, so every key is local; forwarding is tested with real
 * processes in test/integration/server/resp/resp-cluster.test.ts.
 */
const tmp = makeTmp('rostore-resp-cmd-')
let node: RunningNode
let port: number
const BIN_KEY = Buffer.from([0xff, 0x00, 0x3a, 0x41])

beforeAll(async () => {
  const dataDir = join(tmp.dir, 'data')
  const users: [string | Buffer, string | Buffer][] = Array.from({ length: 100 }, (_, i) => [`key-${i}`, `value-${i}`])
  users.push(['empty', ''], ['with:colon', 'colon-value'], [BIN_KEY, Buffer.from([1, 2, 0, 255])], ['text', 'Hello, World'])
  await makeNodeDir(join(dataDir, 'users', 'version-3'), users, { store: 'users', version: 3 })
  writeFileSync(join(dataDir, 'users', 'LIVE'), '3\n')
  await makeNodeDir(join(dataDir, 'items', 'version-1'), [['a', 'item-a']], { store: 'items', version: 1 })
  writeFileSync(join(dataDir, 'items', 'LIVE'), '1\n')
  // A store whose record of r7 rots after install: one flipped byte at the end of its value.
  const rotten = join(dataDir, 'rotten', 'version-1')
  await makeNodeDir(
    rotten,
    Array.from({ length: 20 }, (_, i) => [`r${i}`, `rotten-value-${i}`] as [string, string]),
    {
      store: 'rotten',
      version: 1,
      chunks: 1,
    },
  )
  const data = readFileSync(join(rotten, '0.data'))
  const at = data.indexOf('rotten-value-7') + 'rotten-value-7'.length - 1
  data[at] = data[at]! ^ 0x01
  writeFileSync(join(rotten, '0.data'), data)
  writeFileSync(join(dataDir, 'rotten', 'LIVE'), '1\n')
  node = await startNode({
    cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
    nodeId: 0,
    dataDir,
    bind: '127.0.0.1',
    port: 0,
    log: nullLogger,
    defaultMetrics: false,
    resp: { port: 0 },
  })
  port = node.resp!.port
})

afterAll(async () => {
  await node?.close()
  tmp.cleanup()
})

test('PING, ECHO, SELECT, QUIT', async () => {
  expect(await cli(port, 'PING')).toBe('PONG')
  expect(await cli(port, 'ping', 'hello there')).toBe('"hello there"')
  expect(await cli(port, 'PING', 'a', 'b')).toBe("(error) ERR wrong number of arguments for 'ping' command")
  expect(await cli(port, 'ECHO', 'x y')).toBe('"x y"')
  expect(await cli(port, 'SELECT', '0')).toBe('OK')
  expect(await cli(port, 'SELECT', '1')).toBe('(error) ERR DB index is out of range')
  expect(await cli(port, 'SELECT', 'x')).toBe('(error) ERR value is not an integer or out of range')
  expect(await cli(port, 'QUIT')).toBe('OK')
})

test('GET of a rotten record: an error reply and nothing else in the stream; the next commands answer normally', async () => {
  const raw = await RawConnection.open(port)
  raw.send('GET rotten:r7\r\nGET rotten:r1\r\nGET rotten:nope\r\nPING\r\n')
  const text = await raw.until((t) => t.endsWith('+PONG\r\n'))
  raw.close()
  expect(text).toMatch(/^-RO_UNAVAILABLE [^\r\n]*\r\n\$14\r\nrotten-value-1\r\n\$-1\r\n\+PONG\r\n$/)
})

test('GET: <store>:<key>, absent keys, empty values, colons and binary bytes in keys', async () => {
  expect(await cli(port, 'GET', 'users:key-7')).toBe('"value-7"')
  expect(await cli(port, 'get', 'users:nope')).toBe('(nil)')
  expect(await cli(port, 'GET', 'users:empty')).toBe('""')
  expect(await cli(port, 'GET', 'users:with:colon')).toBe('"colon-value"')
  expect(await cli(port, 'GET', 'items:a')).toBe('"item-a"')
  // redis-cli -x reads the last argument from stdin: a key with any bytes.
  const r = await redisCli(port, ['GET'], { flags: ['-x'], stdin: Buffer.concat([Buffer.from('users:'), BIN_KEY]) })
  expect(r.stdout.trim()).toBe('"\\x01\\x02\\x00\\xff"')
})

test('GET errors: no store prefix, unknown store, invalid store name, arity', async () => {
  expect(await cli(port, 'GET', 'key-7')).toMatch(/^\(error\) ERR keys are <store>:<key> on this port/)
  expect(await cli(port, 'GET', 'nostore:key-7')).toBe('(error) RO_NOT_SERVING this node does not serve store nostore')
  expect(await cli(port, 'GET', '..:x')).toBe('(error) ERR invalid store name')
  expect(await cli(port, 'GET')).toBe("(error) ERR wrong number of arguments for 'get' command")
  expect(await cli(port, 'GET', 'a', 'b')).toBe("(error) ERR wrong number of arguments for 'get' command")
})

test('MGET: values in request order, across stores, duplicates and absent keys', async () => {
  const out = await cli(port, 'MGET', 'users:key-1', 'users:nope', 'items:a', 'users:key-1', 'users:empty')
  expect(out.split('\n')).toEqual(['1) "value-1"', '2) (nil)', '3) "item-a"', '4) "value-1"', '5) ""'])
  expect(await cli(port, 'MGET', 'users:key-1', 'bad')).toMatch(/^\(error\) ERR keys are <store>:<key>/)
})

test('EXISTS counts present keys (twice when named twice), STRLEN, TYPE', async () => {
  expect(await cli(port, 'EXISTS', 'users:key-1', 'users:key-1', 'users:nope', 'items:a')).toBe('(integer) 3')
  expect(await cli(port, 'EXISTS', 'users:nope')).toBe('(integer) 0')
  expect(await cli(port, 'STRLEN', 'users:text')).toBe('(integer) 12')
  expect(await cli(port, 'STRLEN', 'users:nope')).toBe('(integer) 0')
  expect(await cli(port, 'TYPE', 'users:text')).toBe('string')
  expect(await cli(port, 'TYPE', 'users:nope')).toBe('none')
})

test('GETRANGE follows Redis: inclusive ends, negative offsets, clamping', async () => {
  const cases: [string, string, string][] = [
    ['0', '4', '"Hello"'],
    ['-5', '-1', '"World"'],
    ['0', '-1', '"Hello, World"'],
    ['5', '100', '", World"'],
    ['-100', '2', '"Hel"'],
    ['-1', '-5', '""'],
    ['20', '30', '""'],
  ]
  for (const [a, b, want] of cases) expect(await cli(port, 'GETRANGE', 'users:text', a, b)).toBe(want)
  expect(await cli(port, 'GETRANGE', 'users:nope', '0', '10')).toBe('""')
  expect(await cli(port, 'GETRANGE', 'users:text', 'x', '1')).toBe('(error) ERR value is not an integer or out of range')
})

test('DBSIZE and INFO keyspace: records of the live versions, per store', async () => {
  expect(await cli(port, 'DBSIZE')).toBe('(integer) 125')
  const info = (await redisCli(port, ['INFO', 'keyspace'], { raw: true })).stdout
  expect(info).toMatch(/^# Keyspace\r?\n/)
  expect(info).toMatch(/db0:keys=125,expires=0,avg_ttl=0/)
  expect(info).toMatch(/store_users:version=3,records=104,stale=0,local_hits=\d+/)
  expect(info).toMatch(/store_items:version=1,records=1,stale=0/)
  expect(info).toMatch(/store_rotten:version=1,records=20,stale=0/)
})

test('INFO sections: all by default, or the ones named; stats count local keys', async () => {
  const all = (await redisCli(port, ['INFO'], { raw: true })).stdout
  for (const s of ['Server', 'Clients', 'Memory', 'Persistence', 'Stats', 'Replication', 'CPU', 'Keyspace']) expect(all).toContain(`# ${s}`)
  expect(all).toMatch(/redis_version:7\.0\.0/)
  expect(all).toMatch(/loading:0/)
  expect(all).toMatch(/rostore_local_keys:[1-9]\d*/)
  expect(all).toMatch(/rostore_forwarded_keys:0/)
  const two = (await redisCli(port, ['INFO', 'server', 'CLIENTS'], { raw: true })).stdout
  expect(two).toContain('# Server')
  expect(two).toContain('# Clients')
  expect(two).not.toContain('# Stats')
  expect(two).toMatch(new RegExp(`tcp_port:${port}`))
  // What /status does not tell a caller without a token, INFO does not either.
  expect(all).not.toMatch(/process_id:|^os:/m)
  expect(all).not.toContain(String(process.pid))
  expect(all).not.toContain(release())
})

test('COMMAND COUNT, LIST, INFO, DOCS', async () => {
  const count = Number((await cli(port, 'COMMAND', 'COUNT')).replace('(integer) ', ''))
  expect(count).toBeGreaterThanOrEqual(19)
  const list = (await redisCli(port, ['COMMAND', 'LIST'], { raw: true })).stdout.trim().split('\n')
  expect(list).toHaveLength(count)
  expect(list).toEqual(
    expect.arrayContaining(['get', 'mget', 'exists', 'strlen', 'getrange', 'type', 'hello', 'auth', 'client', 'info', 'command', 'dbsize']),
  )
  const info = await cli(port, 'COMMAND', 'INFO', 'get', 'nosuch')
  // redis-cli prints the ten fields of Redis 7's COMMAND INFO; the name, arity, flags and key positions are checked.
  expect(info.split('\n').map((l) => l.trim())).toEqual(
    expect.arrayContaining(['1)  1) "get"', '2) (integer) 2', '3) 1) readonly', '2) fast', '4) (integer) 1', '10) (empty array)']),
  )
  expect(info).toMatch(/2\) \(nil\)$/)
  const docs = await cli(port, 'COMMAND', 'DOCS', 'mget')
  expect(docs).toMatch(/"mget"/)
  expect(docs).toMatch(/"summary"/)
  expect(docs).toMatch(/"multiple"|multiple/)
  expect(await cli(port, 'COMMAND', 'BOGUS')).toMatch(/^\(error\) ERR unknown subcommand 'BOGUS'/)
})

test('HELLO 3 switches to RESP3: a map reply, nulls as _', async () => {
  const raw = await RawConnection.open(port)
  raw.send('HELLO 3\r\nGET users:nope\r\nGET users:key-1\r\nHELLO 2\r\nGET users:nope\r\n')
  const text = await raw.until((t) => t.endsWith('$-1\r\n'))
  expect(text.startsWith('%7\r\n$6\r\nserver\r\n$7\r\nrostore\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:3\r\n')).toBe(true)
  expect(text).toContain('\r\n_\r\n$7\r\nvalue-1\r\n*14\r\n')
  raw.close()
  expect(await cli(port, 'HELLO', '4')).toBe('(error) NOPROTO unsupported protocol version')
  const r3 = await redisCli(port, ['HELLO', '3'], { flags: ['-3'] })
  expect(r3.stdout).toMatch(/1# "server" => "rostore"/)
  expect(r3.stdout).toMatch(/3# "proto" => \(integer\) 3/)
  const nil3 = await redisCli(port, ['GET', 'users:nope'], { flags: ['-3'] })
  expect(nil3.stdout.trim()).toBe('(nil)')
})

test('CLIENT SETNAME, GETNAME, ID, INFO, SETINFO; RESET', async () => {
  const raw = await RawConnection.open(port)
  raw.send(
    'CLIENT GETNAME\r\nCLIENT SETNAME app-1\r\nCLIENT GETNAME\r\nCLIENT ID\r\nCLIENT SETINFO lib-name mylib\r\nCLIENT INFO\r\nCLIENT SETNAME "a b"\r\nCLIENT NOPE\r\nRESET\r\nCLIENT GETNAME\r\n',
  )
  const text = await raw.until((t) => t.endsWith('+RESET\r\n$-1\r\n'))
  expect(text).toMatch(
    /^\$-1\r\n\+OK\r\n\$5\r\napp-1\r\n:(\d+)\r\n\+OK\r\n\$\d+\r\nid=\d+ addr=127\.0\.0\.1:\d+ laddr=127\.0\.0\.1:\d+ name=app-1 .*lib-name=mylib .*\n\r\n/,
  )
  expect(text).toContain('-ERR Client names cannot contain spaces, newlines or special characters.\r\n')
  expect(text).toContain("-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n")
  raw.close()
  // The same through redis-cli, one connection per command.
  expect(await cli(port, 'CLIENT', 'ID')).toMatch(/^\(integer\) \d+$/)
  expect(await cli(port, 'CLIENT', 'GETNAME')).toBe('(nil)')
  expect(await cli(port, 'CLIENT', 'SETNAME', 'x')).toBe('OK')
  // redis-cli prints CLIENT INFO raw, like INFO (Redis 7's redis-cli); older ones quote it.
  expect(await cli(port, 'CLIENT', 'INFO')).toMatch(/^"?id=\d+ addr=127\.0\.0\.1:\d+ /)
  expect(await cli(port, 'RESET')).toBe('RESET')
  expect((await cli(port, 'ROSTORE.GETS', 'users', 'key-2', 'nope')).split('\n')).toEqual(['1) (integer) 3', '2) "value-2"', '3) (nil)'])
})

test('writes answer READONLY, unknown commands ERR unknown command; CONFIG GET shows nothing settable', async () => {
  for (const w of [['SET', 'users:a', 'b'], ['DEL', 'users:a'], ['FLUSHALL'], ['INCR', 'x'], ['hset', 'h', 'f', 'v']]) {
    expect(await cli(port, ...w)).toBe("(error) READONLY You can't write against a read only store.")
  }
  expect(await cli(port, 'NOSUCH', 'arg1', 'arg2')).toBe("(error) ERR unknown command 'NOSUCH', with args beginning with: 'arg1' 'arg2'")
  expect(await cli(port, 'KEYS', '*')).toMatch(/^\(error\) ERR unknown command 'KEYS'/)
  expect(await cli(port, 'CONFIG', 'SET', 'save', '')).toMatch(/^\(error\) ERR unknown subcommand 'SET'/)
  expect((await cli(port, 'CONFIG', 'GET', 'appendonly')).split('\n')).toEqual(['1) "appendonly"', '2) "no"'])
  expect(await cli(port, 'AUTH', 'x')).toMatch(/^\(error\) ERR AUTH <password> called without any password configured/)
})

test('redis-cli --pipe: many commands in one stream, answered in order, errors counted', async () => {
  let input = ''
  for (let i = 0; i < 2000; i++) input += `*2\r\n$3\r\nGET\r\n$${`users:key-${i % 100}`.length}\r\nusers:key-${i % 100}\r\n`
  input += '*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n'
  const r = await redisCli(port, [], { flags: ['--pipe'], stdin: input })
  expect(r.stdout).toMatch(/errors: 1, replies: 2001/)
  // Plain lines piped into redis-cli: one command per line, replies in order.
  const lines = Array.from({ length: 50 }, (_, i) => `GET users:key-${i}`).join('\n')
  const out = await redisCli(port, [], { stdin: `${lines}\n`, raw: true })
  expect(out.stdout.trim().split('\n')).toEqual(Array.from({ length: 50 }, (_, i) => `value-${i}`))
})

test('--resp-default-store: every key is a bare key of that store, colons included; other stores are out of reach', async () => {
  const other = await startNode({
    cluster: { name: 'unit', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] },
    nodeId: 0,
    dataDir: join(tmp.dir, 'data'),
    bind: '127.0.0.1',
    port: 0,
    log: nullLogger,
    defaultMetrics: false,
    resp: { port: 0, defaultStore: 'users' },
  })
  try {
    const p = other.resp!.port
    expect(await cli(p, 'GET', 'key-7')).toBe('"value-7"')
    expect(await cli(p, 'GET', 'with:colon')).toBe('"colon-value"')
    expect(await cli(p, 'GET', 'users:key-7')).toBe('(nil)')
    expect(await cli(p, 'GET', 'items:a')).toBe('(nil)')
    expect((await cli(p, 'MGET', 'key-1', 'nope')).split('\n')).toEqual(['1) "value-1"', '2) (nil)'])
    expect(await cli(p, 'DBSIZE')).toBe('(integer) 104')
    const ks = (await redisCli(p, ['INFO', 'keyspace'], { raw: true })).stdout
    expect(ks).toMatch(/store_users:/)
    expect(ks).not.toMatch(/store_items:/)
  } finally {
    await other.close()
  }
})

test('pipelined commands in one write get their replies in order', async () => {
  const raw = await RawConnection.open(port)
  let req = ''
  for (let i = 0; i < 300; i++)
    req +=
      i % 3 === 0
        ? `*2\r\n$3\r\nGET\r\n$${`users:key-${i % 100}`.length}\r\nusers:key-${i % 100}\r\n`
        : i % 3 === 1
          ? 'PING\r\n'
          : `EXISTS users:key-${i % 100} users:nope\r\n`
  raw.send(req)
  let want = ''
  for (let i = 0; i < 300; i++)
    want += i % 3 === 0 ? `$${`value-${i % 100}`.length}\r\nvalue-${i % 100}\r\n` : i % 3 === 1 ? '+PONG\r\n' : ':1\r\n'
  expect(await raw.until((t) => t.length >= want.length)).toBe(want)
  raw.close()
})
