import { isStoreError } from '../../../common/errors'
import { argInt, NOT_INTEGER, type CommandSpec, type Handler } from '../command-table'
import type { ValueReply, ValuesReply } from '../key-reads'
import { bulkFraming, mgetReplyBytes, writeLocalMget, writeValues } from '../mget-encoding'
import { GETS_COMMAND } from '../forwarder'
import { publicRespError } from '../public-error'

const READ_KEY = { firstKey: 1, lastKey: 1, step: 1 } as const
const KEY_ARG = [{ name: 'key', type: 'key' }] as const

// Reply writers are constants, so the request path allocates no closure per command.
const bulkReply: ValueReply = (out, v, c) => out.bulkOrNull(v, c.proto)
const lengthReply: ValueReply = (out, v) => out.integer(v === undefined ? 0 : v.length)
const typeReply: ValueReply = (out, v) => out.simple(v === undefined ? 'none' : 'string')
const valuesReply: ValuesReply = (out, vs, c) => writeValues(out, vs, c.proto)
const countReply: ValuesReply = (out, vs) => {
  let n = 0
  for (const v of vs) if (v !== undefined) n++
  out.integer(n)
}

const get: Handler = (s, c) => s.reads.one(c, 1, bulkReply, bulkFraming)

const mget: Handler = (s, c) =>
  s.reads.many(c, 1, valuesReply, (out, reader, keys, conn, ifResident) =>
    writeLocalMget(out, reader, keys, conn.proto, s.opts.maxReplyBytes, ifResident),
  )

const getrange: Handler = (s, c) => {
  const from = argInt(c, 2)
  const to = argInt(c, 3)
  if (from === undefined || to === undefined) {
    c.out().error(NOT_INTEGER)
    return
  }
  s.reads.one(c, 1, (out, v) => out.bulk(range(v, from, to)))
}

/** Redis's GETRANGE: negative offsets count from the end, both ends inclusive, clamped. */
export function range(v: Buffer | undefined, start: number, end: number): Buffer {
  const len = v?.length ?? 0
  if (!v || len === 0) return EMPTY
  if (start < 0 && end < 0 && start > end) return EMPTY
  if (start < 0) start = Math.max(0, len + start)
  if (end < 0) end = Math.max(0, len + end)
  if (end >= len) end = len - 1
  if (start > end) return EMPTY
  return v.subarray(start, end + 1)
}
const EMPTY = Buffer.alloc(0)

/**
 * ROSTORE.GETS <store> <key>...: the node-to-node read (and the TypeScript client's over
 * RESP). Answered from this node's own files only, never forwarded: that is what makes
 * forwarding loop-free. Reply: [live version, value or null per key]. A node that cannot
 * answer (stale, no live version, a damaged record) says RO_UNAVAILABLE, and the caller
 * asks the next replica. So does RO_NOT_SERVING, for keys the live version's layout puts
 * on other nodes: the caller routed by another version (the cluster is changing layout),
 * and "absent" would be wrong.
 */
const gets: Handler = (s, c) => {
  const p = c.parser
  const sv = s.keys.named(p.args, p.starts[1] as number, p.ends[1] as number)
  if (typeof sv === 'string') {
    c.out().error(sv)
    return
  }
  if (sv.stale) {
    c.out().error(publicRespError('RO_UNAVAILABLE', 'stale'))
    return
  }
  const lease = sv.live.acquire()
  if (!lease) {
    c.out().error(publicRespError('RO_UNAVAILABLE', 'no live version'))
    return
  }
  try {
    const keys: Buffer[] = []
    for (let i = 2; i < p.argc; i++) keys.push(p.args.subarray(p.starts[i], p.ends[i]))
    const holds = s.reads.holdsAll(lease.reader.metadata, keys)
    if (holds === undefined) {
      c.out().error(publicRespError('RO_UNAVAILABLE', 'the store key hash is loading'))
      return
    }
    if (!holds) {
      c.out().error(`RO_NOT_SERVING keys not on node ${lease.reader.metadata.nodeId} in version ${lease.version}`)
      return
    }
    let values: (Buffer | undefined)[]
    try {
      values = lease.reader.getMany(keys)
    } catch (err) {
      if (!isStoreError(err)) throw err
      sv.noteReadFault(lease.version, err)
      s.ctx.log.error('resp-local-read-failed', { store: sv.store, code: err.code, error: err.message })
      // RO_UNAVAILABLE whatever the cause: the caller (a node or the client) asks the next replica.
      c.out().error(publicRespError('RO_UNAVAILABLE', 'damaged record'))
      return
    }
    if (mgetReplyBytes(values) > s.opts.maxReplyBytes) {
      c.out().error(`RO_TOO_LARGE the reply would be larger than ${s.opts.maxReplyBytes} bytes`)
      return
    }
    const st = s.stats.store(sv.store)
    let hits = 0
    const out = c.out()
    out.array(values.length + 1)
    out.integer(lease.version)
    for (const v of values) {
      if (v === undefined) out.nil(c.proto)
      else {
        hits++
        out.bulk(v)
      }
    }
    s.stats.peerKeys += values.length
    st.peerHits += hits
    st.peerMisses += values.length - hits
  } finally {
    lease.release()
  }
}

const dbsize: Handler = (s, c) => {
  let n = 0
  const stores = s.opts.defaultStore === undefined ? s.ctx.stores.all() : [s.ctx.stores.get(s.opts.defaultStore)]
  for (const sv of stores) n += sv?.live.metadata?.records ?? 0
  c.out().integer(n)
}

const readonly = ['readonly', 'fast'] as const
const base = { group: 'string', since: '1.0.0', complexity: 'O(1)' }

export const READ_COMMANDS: readonly CommandSpec[] = [
  {
    ...base,
    ...READ_KEY,
    name: 'get',
    arity: 2,
    flags: readonly,
    categories: ['@read', '@string', '@fast'],
    summary: 'Returns the value of a key (<store>:<key>, or a bare key with --resp-default-store).',
    args: KEY_ARG,
    run: get,
  },
  {
    ...base,
    name: 'mget',
    arity: -2,
    flags: readonly,
    firstKey: 1,
    lastKey: -1,
    step: 1,
    categories: ['@read', '@string', '@fast'],
    summary: 'Returns the values of keys, in order; keys held by other nodes are read from them.',
    complexity: 'O(N) where N is the number of keys to retrieve.',
    args: [{ name: 'key', type: 'key', multiple: true }],
    run: mget,
  },
  {
    ...base,
    name: 'exists',
    arity: -2,
    flags: readonly,
    firstKey: 1,
    lastKey: -1,
    step: 1,
    group: 'generic',
    categories: ['@keyspace', '@read', '@fast'],
    summary: 'Counts how many of the keys exist (a key named twice counts twice).',
    complexity: 'O(N) where N is the number of keys to check.',
    args: [{ name: 'key', type: 'key', multiple: true }],
    run: (s, c) => s.reads.many(c, 1, countReply),
  },
  {
    ...base,
    ...READ_KEY,
    name: 'strlen',
    arity: 2,
    flags: readonly,
    categories: ['@read', '@string', '@fast'],
    summary: 'Returns the length of the value of a key (0 when absent).',
    since: '2.2.0',
    args: KEY_ARG,
    run: (s, c) => s.reads.one(c, 1, lengthReply),
  },
  {
    ...base,
    ...READ_KEY,
    name: 'getrange',
    arity: 4,
    flags: ['readonly'],
    categories: ['@read', '@string', '@slow'],
    summary: 'Returns a substring of the value of a key.',
    since: '2.4.0',
    complexity: 'O(N) where N is the length of the returned string.',
    args: [...KEY_ARG, { name: 'start', type: 'integer' }, { name: 'end', type: 'integer' }],
    run: getrange,
  },
  {
    ...base,
    ...READ_KEY,
    name: 'type',
    arity: 2,
    flags: readonly,
    group: 'generic',
    categories: ['@keyspace', '@read', '@fast'],
    summary: 'Returns the type of the value of a key: string, or none when absent.',
    args: KEY_ARG,
    run: (s, c) => s.reads.one(c, 1, typeReply),
  },
  {
    ...base,
    name: 'dbsize',
    arity: 1,
    flags: readonly,
    firstKey: 0,
    lastKey: 0,
    step: 0,
    group: 'server',
    categories: ['@keyspace', '@read', '@fast'],
    summary: "Returns the number of records in this node's live versions (the default store only, when one is set).",
    args: [],
    run: dbsize,
  },
  {
    ...base,
    name: GETS_COMMAND.toLowerCase(),
    arity: -3,
    flags: readonly,
    firstKey: 2,
    lastKey: -1,
    step: 1,
    group: 'rostore',
    categories: ['@read', '@fast'],
    summary: "rostore: values of keys from this node's own files, never forwarded: [version, value...].",
    since: '0.1.0',
    complexity: 'O(N) where N is the number of keys.',
    args: [
      { name: 'store', type: 'string' },
      { name: 'key', type: 'key', multiple: true },
    ],
    run: gets,
  },
]
