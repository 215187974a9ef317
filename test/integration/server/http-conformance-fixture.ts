import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeNodeDir } from '../../../testkit/stores/make-store'
import { startSingleNode, type NodeProcess } from '../../../testkit/cluster/node-process'
import { headerOf, rawExchange, type RawResponse } from '../../../testkit/net/raw-http'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * What the HTTP conformance suites share: the read paths they run against, the node they
 * start for each (short timeouts, access log), its stores and request builders.
 */

export interface ReadPath {
  readonly name: string
  readonly workers: number
  readonly extraArgs: readonly string[]
}

/**
 * Ways of starting a node whose HTTP reads must behave the same: node:http and the fast
 * read path (server/http/fast-host.ts), each in one process and in workers sharing the port.
 */
export const READ_PATHS: readonly ReadPath[] = [
  { name: 'node:http', workers: 1, extraArgs: ['--http-read-path', 'node'] },
  { name: 'node:http, 2 workers', workers: 2, extraArgs: ['--http-read-path', 'node'] },
  { name: 'fast', workers: 1, extraArgs: ['--http-read-path', 'fast'] },
  { name: 'fast, 2 workers', workers: 2, extraArgs: ['--http-read-path', 'fast'] },
]

export const STORE = 'conf'
/** Values of MiB size, in their own store so their access-log lines are told apart. */
export const BIG_STORE = 'big'
export const MIB = 1 << 20
const TOKEN = 'conformance-admin-token-3f9a1c'
const TIMEOUT_ARGS = ['--headers-timeout-ms', '1500', '--request-timeout-ms', '3000', '--keep-alive-timeout-ms', '3000']
const SEND_TIMEOUT_MS = 1000

export const VALUES: Record<string, string> = {
  k1: 'value-one',
  k2: 'value-two',
  k3: 'value-three',
  'a/b': 'slash',
  'a b': 'space',
  '€uro': 'euro-sign',
  '100%': 'percent',
  'a+b': 'plus',
}
export const big = Buffer.alloc(MIB, 0x61)
export const huge = Buffer.alloc(16 * MIB, 0x62)

export const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: node\r\n${extra}\r\n`
export const keyPath = (key: string): string => `/stores/${STORE}/keys/${key}`
export const multiGet = (body: Buffer, extra = ''): Buffer =>
  Buffer.concat([
    Buffer.from(`POST /stores/${STORE}/multi-get HTTP/1.1\r\nHost: node\r\nContent-Length: ${body.length}\r\n${extra}\r\n`),
    body,
  ])
/** Headers of a response without the ones that change with the clock. */
export const stable = (r: RawResponse): (readonly [string, string])[] => r.headers.filter(([n]) => n !== 'date')
export const expectValue = (r: RawResponse, value: string): void => {
  expect({ status: r.status, body: r.body.toString('utf8'), length: headerOf(r, 'content-length') }).toEqual({
    status: 200,
    body: value,
    length: String(Buffer.byteLength(value)),
  })
}

/** Resident memory figures of a process, in bytes (Linux /proc). */
/**
 * A process's memory from /proc: `anon` is what it allocated (RssAnon), which a held answer
 * grows; `rss` and `peak` also count the mapped store pages a value is sent from.
 */
export function memoryOf(pid: number): { rss: number; peak: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024
  return { rss: kib('VmRSS'), peak: kib('VmHWM'), anon: kib('RssAnon') }
}

export interface ConformanceNode {
  /** The running node (set once beforeAll has run). */
  readonly node: NodeProcess
  /** A fresh connection still gets a right answer: the node is healthy. */
  expectHealthy(): Promise<void>
}

/** Starts a node for `path` with both stores live before the describe's tests, and kills it after. */
export function useConformanceNode(path: ReadPath): ConformanceNode {
  const tmp = makeTmp('rostore-http-conf-')
  let node: NodeProcess | undefined
  beforeAll(async () => {
    const src = join(tmp.dir, 'src')
    await makeNodeDir(join(src, STORE), Object.entries(VALUES), { store: STORE })
    await makeNodeDir(
      join(src, BIG_STORE),
      [
        ['big', big],
        ['huge', huge],
      ],
      { store: BIG_STORE, chunks: 1 },
    )
    node = await startSingleNode({
      dir: tmp.dir,
      token: TOKEN,
      workers: path.workers,
      extraArgs: ['--access-log', '--send-timeout-ms', String(SEND_TIMEOUT_MS), ...TIMEOUT_ARGS, ...path.extraArgs],
    })
    await node.install(STORE, join(src, STORE), { swap: true })
    await node.install(BIG_STORE, join(src, BIG_STORE), { swap: true })
  })
  afterAll(async () => {
    if (node?.running) await node.kill9()
    tmp.cleanup()
  })
  const ctx: ConformanceNode = {
    get node(): NodeProcess {
      if (!node) throw new Error('the conformance node is not started (beforeAll failed?)')
      return node
    },
    expectHealthy: async () => {
      expectValue(await rawExchange(ctx.node.port, get(keyPath('k1'))), VALUES['k1'] as string)
    },
  }
  return ctx
}
