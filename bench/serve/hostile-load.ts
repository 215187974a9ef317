import { readFileSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { startSingleNode, type NodeProcess } from '../../testkit/cluster/node-process'
import { keyName, makeVersionDir } from '../../testkit/cluster/reliability-kit'
import { sleep } from '../../testkit/cluster/reliability-kit'
import { makeTmp } from '../../testkit/stores/tmp'

/**
 * Hostile loads against one serving process (`--workers 1`), for docs/RELIABILITY.md §6:
 *
 *   node dist/bench/serve/hostile-load.js resp-unauth  60 connections without AUTH, each starting a
 *                                                *260 MGET of 250 x 65,000-byte arguments
 *   node dist/bench/serve/hostile-load.js resp-auth    the same after AUTH
 *   node dist/bench/serve/hostile-load.js http         40 multi-gets of 16 MiB, all but the last byte sent
 *   node dist/bench/serve/hostile-load.js fair         10 clients pipelining 10,000-key MGETs and one
 *                                                client of single GETs: its latency percentiles
 *
 * Prints the serving process's RSS before and after (or the light client's percentiles) as
 * one JSON line. It spawns the CLI next to this file, so copying the compiled file into an
 * older build's dist/bench measures that build. Every load is bounded in count and time
 * and targets 127.0.0.1 only.
 */
const READ_TOKEN = 'hostile-load-read-token-1'
const KEYS = 10_000

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Math.round(Number(m?.[1] ?? 0) / 1024)
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s))
    s.once('error', reject)
  })
}

/** Writes `bytes` and resolves once they are handed to the kernel or the socket is closed. */
function writeAll(s: Socket, bytes: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve(false)
    const ok = s.write(bytes)
    if (ok) return resolve(true)
    const done = (v: boolean) => (): void => {
      s.off('drain', onDrain)
      s.off('close', onClose)
      resolve(v)
    }
    const onDrain = done(true)
    const onClose = done(false)
    s.once('drain', onDrain)
    s.once('close', onClose)
  })
}

async function respHold(node: NodeProcess, auth: boolean): Promise<Record<string, unknown>> {
  const pid = node.pid
  const before = rssMiB(pid)
  const arg = Buffer.concat([Buffer.from('$65000\r\n'), Buffer.alloc(65_000, 0x61), Buffer.from('\r\n')])
  const conns = await Promise.all(Array.from({ length: 60 }, () => open(node.respPort!)))
  let closed = 0
  let replies = ''
  for (const s of conns) {
    s.on('error', () => undefined)
    s.on('close', () => closed++)
    s.on('data', (d: Buffer) => {
      if (replies.length < 2000) replies += d.toString('latin1').slice(0, 200)
    })
  }
  await Promise.all(
    conns.map(async (s) => {
      if (!(await writeAll(s, Buffer.from(`${auth ? `AUTH ${READ_TOKEN}\r\n` : ''}*260\r\n$4\r\nMGET\r\n`)))) return
      for (let i = 0; i < 250; i++) if (!(await writeAll(s, arg))) return
    }),
  )
  await sleep(2000)
  const after = rssMiB(pid)
  for (const s of conns) s.destroy()
  return { before, after, perConnection: Math.round(((after - before) / 60) * 100) / 100, closed, replies: replies.slice(0, 300) }
}

async function httpHold(node: NodeProcess): Promise<Record<string, unknown>> {
  const pid = node.pid
  const before = rssMiB(pid)
  const size = 16 << 20
  const chunk = Buffer.alloc(1 << 20, 0)
  const statuses: number[] = []
  const sockets: Socket[] = []
  await Promise.all(
    Array.from(
      { length: 40 },
      () =>
        new Promise<void>((resolve) => {
          const req = httpRequest({
            host: '127.0.0.1',
            port: node.port,
            method: 'POST',
            path: '/stores/users/multi-get',
            headers: { 'content-length': String(size) },
            agent: false,
          })
          req.on('response', (res) => {
            statuses.push(res.statusCode ?? 0)
            res.resume()
            resolve()
          })
          req.on('error', () => resolve())
          req.on('socket', (s) => sockets.push(s))
          void (async () => {
            for (let sent = 0; sent < size - 1; sent += chunk.length) {
              const part = sent + chunk.length > size - 1 ? chunk.subarray(0, size - 1 - sent) : chunk
              if (req.destroyed) return
              if (!req.write(part)) await new Promise((r) => req.once('drain', r))
            }
            resolve()
          })()
        }),
    ),
  )
  await sleep(2000)
  const after = rssMiB(pid)
  for (const s of sockets) s.destroy()
  const counts: Record<string, number> = {}
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1
  return { before, after, perRequest: Math.round(((after - before) / 40) * 100) / 100, statuses: counts }
}

async function fair(node: NodeProcess): Promise<Record<string, unknown>> {
  const heavyCmd = Buffer.from(
    `*${KEYS + 1}\r\n$4\r\nMGET\r\n${Array.from({ length: KEYS }, (_, i) => `$${`users:${keyName(i)}`.length}\r\nusers:${keyName(i)}\r\n`).join('')}`,
  )
  let stop = false
  let heavyReplies = 0
  const heavy = await Promise.all(Array.from({ length: 10 }, () => open(node.respPort!)))
  const loops = heavy.map(async (s) => {
    s.on('error', () => undefined)
    // Count replies by their array header; values never contain '*1' at a line start.
    let tail = ''
    s.on('data', (d: Buffer) => {
      const t = tail + d.toString('latin1')
      let at = 0
      while ((at = t.indexOf(`*${KEYS}\r\n`, at)) >= 0) {
        heavyReplies++
        at++
      }
      tail = t.slice(-8)
    })
    while (!stop && !s.destroyed) {
      // Eight MGETs in flight at most per client.
      await writeAll(s, Buffer.concat(Array.from({ length: 8 }, () => heavyCmd)))
      await sleep(50)
    }
  })
  const light = await open(node.respPort!)
  let pending: ((t: number) => void) | undefined
  light.on('data', () => pending?.(performance.now()))
  const lat: number[] = []
  const deadline = performance.now() + 20_000
  await sleep(1000)
  for (let i = 0; i < 400 && performance.now() < deadline; i++) {
    const t0 = performance.now()
    const got = new Promise<number>((r) => (pending = r))
    light.write(`GET users:${keyName(i % KEYS)}\r\n`)
    lat.push((await got) - t0)
  }
  stop = true
  for (const s of heavy) s.destroy()
  light.destroy()
  await Promise.all(loops)
  lat.sort((a, b) => a - b)
  const p = (q: number): number => Math.round((lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] ?? 0) * 10) / 10
  return { gets: lat.length, p50: p(0.5), p99: p(0.99), max: p(1), heavyReplies }
}

async function main(): Promise<void> {
  const scenario = process.argv[2] ?? 'resp-auth'
  const tmp = makeTmp('rostore-hostile-load-')
  let node: NodeProcess | undefined
  try {
    const dataDir = join(tmp.dir, 'data')
    await makeVersionDir(join(dataDir, 'users', 'version-1'), { store: 'users', version: 1, keys: KEYS })
    writeFileSync(join(dataDir, 'users', 'LIVE'), '1\n')
    node = await startSingleNode({
      dir: tmp.dir,
      dataDir,
      token: 'hostile-load-admin',
      workers: 1,
      env: scenario === 'http' || scenario === 'fair' ? {} : { ROSTORE_READ_TOKEN: READ_TOKEN },
      extraArgs: ['--resp-port', '0'],
    })
    await sleep(1000)
    const out =
      scenario === 'http' ? await httpHold(node) : scenario === 'fair' ? await fair(node) : await respHold(node, scenario === 'resp-auth')
    console.log(JSON.stringify({ scenario, ...out }))
    const t0 = performance.now()
    node.child.kill('SIGTERM')
    await node.exited
    const stopMs = Math.round(performance.now() - t0)
    console.log(JSON.stringify({ stopMs }))
    if (stopMs > 5000) console.log(node.logText(20))
  } finally {
    if (node?.running) node.child.kill('SIGKILL')
    tmp.cleanup()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
