import { errorMessage, isStoreError } from '../../common/errors'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import { FRAMED_COLD, type ServingReader, type ValueFraming } from '../../formats/store/read/store-reader-api'
import type { RespProto } from '../../formats/wire/resp'
import type { RespWriter } from '../../formats/wire/resp-writer'
import type { Logger } from '../log'
import type { ServedStore } from '../../swapper/served-store'
import type { RespConnection } from './connection'
import type { Deferred } from './connection-host'
import { FORWARD_BATCH, getsCommand, type Forwarder } from './forwarder'
import type { KeySpace } from './key-space'
import { mgetReplyBytes } from './mget-encoding'
import { isMixed, settleOneVersion } from './one-version-keys'
import type { RespStats } from './resp-stats'
import { publicRespError } from './public-error'
import { partitionOf, type StoreRoute, type StoreRoutes } from './store-routes'

/** Writes the reply of a one-key command from the key's value (undefined: absent). */
export type ValueReply = (out: RespWriter, value: Buffer | undefined, conn: RespConnection) => void
/** Writes the reply of a many-key command from the values, in key order. */
export type ValuesReply = (out: RespWriter, values: readonly (Buffer | undefined)[], conn: RespConnection) => void
/**
 * Writes a whole reply straight from one local reader (MGET: writeLocalMget); -1 when too
 * large; with `ifResident`, FRAMED_COLD (nothing written) when a record is cold.
 */
export type DirectReply = (
  out: RespWriter,
  reader: ServingReader,
  keys: readonly Buffer[],
  conn: RespConnection,
  ifResident: boolean,
) => number

const LOADING = publicRespError('RO_UNAVAILABLE', 'the store key hash is loading')

/** Keys of one store within a many-key command, and where each must be read. */
interface StoreGroup {
  readonly sv: ServedStore
  readonly idx: number[]
  readonly keys: Buffer[]
}

/** A many-key command's first answers, per key: the value, and the version and node that gave it. */
interface FirstAnswers {
  readonly values: (Buffer | undefined)[]
  readonly versionOf: number[]
  readonly nodeOf: number[]
}

/** Keys sent together to the same replica list. */
interface Batch {
  readonly store: string
  readonly targets: readonly number[]
  readonly minVersion: number
  readonly idx: number[]
  readonly keys: Buffer[]
}

export interface KeyReadsDeps {
  readonly nodeId: number
  readonly keys: KeySpace
  readonly routes: StoreRoutes
  readonly forwarder: Forwarder
  readonly stats: RespStats
  readonly log: Logger
  readonly maxReplyBytes: number
}

/**
 * Reads the keys of a command: from this node's files when it holds them (a lease on the
 * live reader for the duration of the lookups), else from their replicas through the
 * forwarder, master first. Local keys of a store marked stale here, or whose lookup
 * failed (a damaged record), go to the other replicas too. A many-key command answers each
 * store's keys from one version (one-version-keys.ts). A command's reply is written at
 * once when every key was local, else into a deferred place in the reply order.
 */
export class KeyReads {
  constructor(private readonly d: KeyReadsDeps) {}

  /**
   * Whether this node holds every key in the version `meta` describes, by that version's
   * own layout; undefined while its key hash loads (md5 is loaded at start).
   */
  holdsAll(meta: StoreMetadata, keys: readonly Buffer[]): boolean | undefined {
    const route = this.d.routes.of(meta)
    if (!route) return undefined
    return route.allLocal || keys.every((k) => route.local[partitionOf(route, k)] === 1)
  }

  /**
   * GET-like: the value of the key in argument `arg`. With `framed` (GET's bulk reply), a
   * local answer is written by the reader straight into the connection's output in that
   * framing (by protocol), with no Buffer for the value; `reply` answers forwarded reads.
   * A key whose record is not in memory is read on the libuv pool first, its reply in a
   * deferred place in the order, so the event loop goes on with other commands.
   */
  one(conn: RespConnection, arg: number, reply: ValueReply, framed?: Readonly<Record<RespProto, ValueFraming>>): void {
    const p = conn.parser
    const end = p.ends[arg] as number
    const sv = this.d.keys.resolve(p.args, p.starts[arg] as number, end)
    if (typeof sv === 'string') {
      conn.out().error(sv)
      return
    }
    this.answerOne(conn, sv, p.args.subarray(this.d.keys.keyStart, end), reply, framed, undefined)
  }

  /**
   * one() for a resolved key, written into `target` when given (a deferred reply whose
   * record was brought in meanwhile: read through the mapping whatever the map says, so
   * the command always progresses), else into the connection's output.
   */
  private answerOne(
    conn: RespConnection,
    sv: ServedStore,
    key: Buffer,
    reply: ValueReply,
    framed: Readonly<Record<RespProto, ValueFraming>> | undefined,
    target: Deferred | undefined,
  ): void {
    const out = target ? target.w : conn.out()
    const done = (): void => {
      if (target) conn.complete(target)
    }
    const st = this.d.stats.store(sv.store)
    let route: StoreRoute | undefined
    let minVersion = 0
    let part = -1
    // No lease: the lookup below is synchronous, and a live reader closes only after a
    // replace() has run, which cannot happen before this call returns.
    const reader = sv.live.currentReader
    if (reader) {
      const version = reader.metadata.version
      route = this.d.routes.of(reader.metadata)
      if (!route) {
        out.error(LOADING)
        return done()
      }
      minVersion = version
      if (!route.allLocal) part = partitionOf(route, key)
      if (sv.stale === undefined && (part < 0 || route.local[part] === 1)) {
        let found: boolean | undefined = false
        let cold = false
        let warming: Promise<void> | undefined
        let ok = true
        try {
          if (framed) {
            const framing = framed[conn.proto]
            found = target ? reader.getFramedInto(key, framing, out) : reader.getFramedInto(key, framing, out, true)
            if (found === undefined) {
              cold = true
              warming = reader.warm([key])
            }
          } else {
            warming = target ? undefined : reader.warm([key])
            cold = warming !== undefined
            if (!cold) {
              const value = reader.get(key)
              found = value !== undefined
              reply(out, value, conn)
            }
          }
        } catch (err) {
          if (!isLookupFailure(err)) throw err
          ok = false
          this.localFailure(sv, version, err)
        }
        if (cold) {
          const copy = Buffer.from(key)
          return this.afterWarm(conn, warming, (d) => this.answerOne(conn, sv, copy, reply, framed, d))
        }
        if (ok) {
          this.d.stats.localKeys++
          if (found) st.localHits++
          else st.localMisses++
          return done()
        }
      }
    } else {
      route = this.d.routes.lastKnown(sv.store)
      if (!route) {
        out.error(publicRespError('RO_UNAVAILABLE', 'no live version'))
        return done()
      }
    }
    if (part < 0) part = partitionOf(route, key)
    const targets = route.local[part] === 1 ? route.others[part] : route.replicas[part]
    if (!targets || targets.length === 0) {
      out.error(publicRespError('RO_UNAVAILABLE', 'no other replica'))
      return done()
    }
    const d = target ?? conn.defer()
    this.d.forwarder.fetch(getsCommand(sv.store, [key]), 1, targets, minVersion, (err, r) => {
      if (err || !r) {
        this.forwardFailure(sv.store, err)
        d.w.error(publicRespError('RO_UNAVAILABLE', 'no replica answered'))
      } else {
        const v = r.values[0]
        if (v === undefined) st.forwardedMisses++
        else st.forwardedHits++
        reply(d.w, v, conn)
      }
      conn.complete(d)
    })
  }

  /**
   * A command whose local records are cold: a deferred place in the reply order, the
   * records brought in on the pool, then `answer` into it. Keys the answer reads must be
   * copies: the parser's buffer is reused by the next read.
   */
  private afterWarm(conn: RespConnection, warming: Promise<unknown> | undefined, answer: (d: Deferred) => void): void {
    const d = conn.defer()
    this.d.stats.coldCommands++
    void (warming ?? Promise.resolve()).then(
      () => answer(d),
      (err: unknown) => {
        // A failed warm-up (the pool could not read the pages) is no answer: the read
        // through the mapping reports what is wrong, as a synchronous read would.
        this.d.log.warn('resp-warm-failed', { error: errorMessage(err) })
        answer(d)
      },
    )
  }
  /** MGET-like: the values of the keys in arguments `from` to the last, in order. */
  many(conn: RespConnection, from: number, reply: ValuesReply, direct?: DirectReply): void {
    const p = conn.parser
    const n = p.argc - from
    const groups: StoreGroup[] = []
    for (let i = 0; i < n; i++) {
      const end = p.ends[from + i] as number
      const sv = this.d.keys.resolve(p.args, p.starts[from + i] as number, end)
      if (typeof sv === 'string') {
        conn.out().error(sv)
        return
      }
      let g = groups.find((x) => x.sv === sv)
      if (!g) groups.push((g = { sv, idx: [], keys: [] }))
      g.idx.push(i)
      g.keys.push(p.args.subarray(this.d.keys.keyStart, end))
    }
    // One store, every key local: the direct reply checks residency itself (answerMany).
    const only = groups.length === 1 ? (groups[0] as StoreGroup) : undefined
    const reader = only && only.sv.stale === undefined ? only.sv.live.currentReader : undefined
    if (direct && reader && this.d.routes.of(reader.metadata)?.allLocal) return this.answerMany(conn, groups, n, reply, direct, undefined)
    // Keys of partitions this node does not hold are not in its files: they find nothing
    // cold, so every key of a group can be asked.
    let warming: Promise<void>[] | undefined
    for (const g of groups) {
      const reader = g.sv.stale === undefined ? g.sv.live.currentReader : undefined
      const w = reader?.warm(g.keys)
      if (w) (warming ??= []).push(w)
    }
    if (!warming) return this.answerMany(conn, groups, n, reply, direct, undefined)
    const copies = groups.map((g) => ({ sv: g.sv, idx: g.idx, keys: g.keys.map((k) => Buffer.from(k)) }))
    this.afterWarm(conn, Promise.all(warming), (d) => this.answerMany(conn, copies, n, reply, direct, d))
  }

  /** many() for resolved keys, written into `target` when given (see answerOne), else into the connection's output. */
  private answerMany(
    conn: RespConnection,
    groups: readonly StoreGroup[],
    n: number,
    reply: ValuesReply,
    direct: DirectReply | undefined,
    target: Deferred | undefined,
  ): void {
    const out = target ? target.w : conn.out()
    const done = (): void => {
      if (target) conn.complete(target)
    }
    // One store, all local: the reply is written straight from the reader.
    const only = groups.length === 1 ? (groups[0] as StoreGroup) : undefined
    if (direct && only && only.sv.stale === undefined) {
      const lease = only.sv.live.acquire()
      if (lease) {
        try {
          const route = this.d.routes.of(lease.reader.metadata)
          if (route?.allLocal) {
            const hits = direct(out, lease.reader, only.keys, conn, target === undefined)
            if (hits === FRAMED_COLD) {
              const copies = groups.map((g) => ({ sv: g.sv, idx: g.idx, keys: g.keys.map((k) => Buffer.from(k)) }))
              this.afterWarm(conn, lease.reader.warm(only.keys), (d) => this.answerMany(conn, copies, n, reply, direct, d))
              return
            }
            if (hits < 0) {
              out.error(`RO_TOO_LARGE the reply would be larger than ${this.d.maxReplyBytes} bytes`)
              return done()
            }
            const st = this.d.stats.store(only.sv.store)
            this.d.stats.localKeys += n
            st.localHits += hits
            st.localMisses += n - hits
            return done()
          }
        } catch (err) {
          if (!isLookupFailure(err)) throw err
          this.localFailure(only.sv, lease.version, err)
        } finally {
          lease.release()
        }
      }
    }
    const values = new Array<Buffer | undefined>(n)
    const versionOf = new Array<number>(n).fill(0)
    const nodeOf = new Array<number>(n).fill(this.d.nodeId)
    const batches: Batch[] = []
    const routes: StoreRoute[] = []
    for (const g of groups) {
      const problem = this.plan(g, { values, versionOf, nodeOf }, batches)
      if (typeof problem === 'string') {
        out.error(problem)
        return done()
      }
      routes.push(problem)
    }
    if (batches.length === 0) {
      this.finish(conn, out, values, reply)
      return done()
    }
    const d = target ?? conn.defer()
    // The keys outlive the parser's buffer if they must be read again from one version.
    const copies = groups.map((g) => copyKeys(g.keys))
    let pending = batches.length
    let failure: Error | undefined
    for (const b of batches) {
      const st = this.d.stats.store(b.store)
      this.d.forwarder.fetch(getsCommand(b.store, b.keys), b.keys.length, b.targets, b.minVersion, (err, r) => {
        if (err || !r) failure ??= err ?? new Error('no answer')
        else {
          b.idx.forEach((i, j) => {
            const v = r.values[j]
            values[i] = v
            versionOf[i] = r.version
            nodeOf[i] = r.node
            if (v === undefined) st.forwardedMisses++
            else st.forwardedHits++
          })
        }
        if (--pending > 0) return
        if (failure !== undefined) {
          this.forwardFailure(b.store, failure)
          d.w.error(publicRespError('RO_UNAVAILABLE', 'no replica answered'))
          return conn.complete(d)
        }
        const mixed = groups.flatMap((g, k) =>
          isMixed({ idx: g.idx, versionOf })
            ? [{ sv: g.sv, route: routes[k] as StoreRoute, idx: g.idx, keys: copies[k] as Buffer[], values, versionOf, nodeOf }]
            : [],
        )
        if (mixed.length === 0) {
          this.finish(conn, d.w, values, reply)
          return conn.complete(d)
        }
        this.d.stats.mixedVersionReads++
        const deps = {
          nodeId: this.d.nodeId,
          forwarder: this.d.forwarder,
          holdsAll: (m: StoreMetadata, k: readonly Buffer[]) => this.holdsAll(m, k),
        }
        void Promise.all(mixed.map((a) => settleOneVersion(deps, a)))
          .then(
            (ok) => {
              if (ok.every(Boolean)) this.finish(conn, d.w, values, reply)
              else d.w.error(publicRespError('RO_UNAVAILABLE', 'no version serves every key: read again'))
            },
            (err: unknown) => {
              this.forwardFailure(mixed[0]!.sv.store, err)
              d.w.error(publicRespError('RO_UNAVAILABLE', 'no replica answered'))
            },
          )
          .finally(() => conn.complete(d))
      })
    }
  }

  /**
   * Reads the local keys of a group into `into` (values, and this node's version) and adds
   * its other keys to `batches` (by replica list, at most FORWARD_BATCH keys each). Returns
   * the route the keys were placed by, or an error text.
   */
  private plan(g: StoreGroup, into: FirstAnswers, batches: Batch[]): StoreRoute | string {
    const lease = g.sv.live.acquire()
    let route: StoreRoute | undefined
    let minVersion = 0
    const remote: number[] = []
    if (lease) {
      try {
        route = this.d.routes.of(lease.reader.metadata)
        if (!route) return LOADING
        minVersion = lease.version
        const local: number[] = []
        if (g.sv.stale === undefined) {
          for (let j = 0; j < g.keys.length; j++) {
            if (route.allLocal || route.local[partitionOf(route, g.keys[j] as Buffer)] === 1) local.push(j)
            else remote.push(j)
          }
        } else {
          for (let j = 0; j < g.keys.length; j++) remote.push(j)
        }
        if (local.length > 0) {
          try {
            const got = lease.reader.getMany(local.map((j) => g.keys[j] as Buffer))
            const st = this.d.stats.store(g.sv.store)
            this.d.stats.localKeys += local.length
            local.forEach((j, k) => {
              const v = got[k]
              const i = g.idx[j] as number
              into.values[i] = v
              into.versionOf[i] = lease.version
              if (v === undefined) st.localMisses++
              else st.localHits++
            })
          } catch (err) {
            if (!isLookupFailure(err)) throw err
            this.localFailure(g.sv, lease.version, err)
            remote.push(...local)
          }
        }
      } finally {
        lease.release()
      }
    } else {
      route = this.d.routes.lastKnown(g.sv.store)
      if (!route) return publicRespError('RO_UNAVAILABLE', 'no live version')
      for (let j = 0; j < g.keys.length; j++) remote.push(j)
    }
    const byTargets = new Map<readonly number[], Batch>()
    for (const j of remote) {
      const key = g.keys[j] as Buffer
      const part = partitionOf(route, key)
      const targets = (route.local[part] === 1 ? route.others[part] : route.replicas[part]) as readonly number[]
      if (targets.length === 0) return publicRespError('RO_UNAVAILABLE', 'no other replica')
      let b = byTargets.get(targets)
      if (!b || b.keys.length >= FORWARD_BATCH) {
        b = { store: g.sv.store, targets, minVersion, idx: [], keys: [] }
        byTargets.set(targets, b)
        batches.push(b)
      }
      b.idx.push(g.idx[j] as number)
      b.keys.push(key)
    }
    return route
  }

  private finish(conn: RespConnection, out: RespWriter, values: readonly (Buffer | undefined)[], reply: ValuesReply): void {
    if (mgetReplyBytes(values) > this.d.maxReplyBytes)
      out.error(`RO_TOO_LARGE the reply would be larger than ${this.d.maxReplyBytes} bytes`)
    else reply(out, values, conn)
  }

  /** A local lookup failed: counted for /status (damaged files) and logged; another replica answers. */
  private localFailure(sv: ServedStore, version: number, err: unknown): void {
    sv.noteReadFault(version, err)
    this.d.log.error('resp-local-read-failed', {
      store: sv.store,
      code: isStoreError(err) ? err.code : undefined,
      error: errorMessage(err),
    })
  }

  private forwardFailure(store: string, err: unknown): void {
    this.d.log.warn('resp-forward-failed', { store, code: isStoreError(err) ? err.code : undefined, error: errorMessage(err) })
  }
}

/** Copies of keys that point into the parser's buffer, in one allocation. */
function copyKeys(keys: readonly Buffer[]): Buffer[] {
  const all = Buffer.concat(keys)
  let at = 0
  return keys.map((k) => all.subarray(at, (at += k.length)))
}

/** A lookup that failed on this node's files: another replica may still answer. */
function isLookupFailure(err: unknown): boolean {
  return isStoreError(err, 'RO_CORRUPT') || isStoreError(err, 'RO_IO') || isStoreError(err, 'RO_CHECKSUM_MISMATCH')
}
