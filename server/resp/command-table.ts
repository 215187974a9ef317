import type { RespConnection } from './connection'
import type { KeyReads } from './key-reads'
import type { KeySpace } from './key-space'
import type { NormalizedRespOptions, RespContext } from './resp-context'
import type { RespStats } from './resp-stats'

/** What command handlers may use of their listener. */
export interface RespService {
  readonly ctx: RespContext
  readonly opts: NormalizedRespOptions
  readonly stats: RespStats
  readonly keys: KeySpace
  readonly reads: KeyReads
  readonly table: CommandTable
  readonly startedAt: number
  readonly runId: string
  readonly connections: ReadonlySet<RespConnection>
  address(): { host: string; port: number }
}

export type Handler = (s: RespService, c: RespConnection) => void

/** One argument in COMMAND DOCS. */
export interface ArgDoc {
  readonly name: string
  readonly type: 'key' | 'string' | 'integer' | 'pure-token'
  readonly token?: string
  readonly optional?: boolean
  readonly multiple?: boolean
}

/** A command: Redis's COMMAND INFO fields, its docs, and the handler. */
export interface CommandSpec {
  /** Lower case, as COMMAND reports it. */
  readonly name: string
  /** Redis convention: N exactly N arguments (name included), -N at least N. */
  readonly arity: number
  readonly flags: readonly string[]
  readonly firstKey: number
  readonly lastKey: number
  readonly step: number
  readonly categories: readonly string[]
  readonly group: string
  readonly summary: string
  readonly since: string
  readonly complexity: string
  readonly args: readonly ArgDoc[]
  /** Sub-commands (CLIENT SETNAME...), for COMMAND INFO/DOCS; the handler dispatches them. */
  readonly subcommands?: readonly Omit<CommandSpec, 'run' | 'subcommands'>[]
  /** Allowed before AUTH when a read token is configured. */
  readonly noAuth?: boolean
  readonly run: Handler
}

/**
 * Finds commands by the bytes of their name, case-insensitively, without making a
 * string: candidates are bucketed by (length, first letter), then compared byte by byte.
 */
export class CommandTable {
  private readonly buckets = new Map<number, number[]>()
  private readonly names: Buffer[]

  constructor(readonly list: readonly CommandSpec[]) {
    this.names = list.map((c) => Buffer.from(c.name, 'latin1'))
    this.names.forEach((n, i) => {
      const k = bucketKey(n.length, n[0] as number)
      const b = this.buckets.get(k) ?? []
      b.push(i)
      this.buckets.set(k, b)
    })
  }

  /** Index of the command named by `buf[start, end)`, or -1. */
  find(buf: Buffer, start: number, end: number): number {
    const len = end - start
    if (len === 0 || len > 32) return -1
    const bucket = this.buckets.get(bucketKey(len, lower(buf[start] as number)))
    if (!bucket) return -1
    for (const i of bucket) {
      const name = this.names[i] as Buffer
      let j = 1
      while (j < len && lower(buf[start + j] as number) === name[j]) j++
      if (j === len) return i
    }
    return -1
  }

  byName(name: string): CommandSpec | undefined {
    const lc = name.toLowerCase()
    return this.list.find((c) => c.name === lc)
  }
}

function bucketKey(len: number, first: number): number {
  return (len << 8) | first
}

function lower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c | 0x20 : c
}

/** An argument as text (names, options), for the slow paths. */
export function argText(c: RespConnection, i: number): string {
  const p = c.parser
  return p.args.toString('utf8', p.starts[i], p.ends[i])
}

/** An argument's bytes (a view valid until the next command). */
export function argBytes(c: RespConnection, i: number): Buffer {
  const p = c.parser
  return p.args.subarray(p.starts[i], p.ends[i])
}

/** A signed 64-bit-safe integer argument, or undefined when it is not one (Redis: "value is not an integer"). */
export function argInt(c: RespConnection, i: number): number | undefined {
  const p = c.parser
  const b = p.args
  let at = p.starts[i] as number
  const end = p.ends[i] as number
  if (at >= end || end - at > 20) return undefined
  let neg = false
  if (b[at] === 0x2d) {
    neg = true
    at++
  }
  if (at >= end) return undefined
  let n = 0
  for (; at < end; at++) {
    const d = (b[at] as number) - 0x30
    if (d < 0 || d > 9) return undefined
    n = n * 10 + d
  }
  if (!Number.isSafeInteger(n)) return undefined
  return neg ? -n : n
}

export const NOT_INTEGER = 'ERR value is not an integer or out of range'

export function wrongArity(name: string): string {
  return `ERR wrong number of arguments for '${name}' command`
}

/** Printable, bounded rendering of client bytes inside an error reply. */
export function quoteArg(b: Buffer, max = 64): string {
  let s = ''
  for (let i = 0; i < b.length && i < max; i++) {
    const c = b[i] as number
    s += c >= 0x20 && c < 0x7f && c !== 0x27 && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`
  }
  return b.length > max ? `${s}...` : s
}
