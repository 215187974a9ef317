import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { once } from 'node:events'
import { join } from 'node:path'
import { errorMessage, StoreError } from '../../common/errors'
import type { Cluster } from '../../cluster/cluster'
import { buildRing, replicaNodes } from '../../cluster/routing'
import { openVersion, walkPartitions } from '../../formats/store/scan/partition-walk'
import { buildParts } from './build-parts'
import { openNodeDump } from './dump-stream'
import { NodeClient, type RemoteStoreInfo } from '../node-client'
import type { StoredCodecRef } from '../../formats/wire/stored-values'
import type { StoredValues } from '../../formats/store/read/store-reader-api'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import { readDictionary } from '../../formats/store/chunk/dictionary-file'

/** Where the records of a dump go (client/dump/dump-output.ts writes the output formats). */
export interface RecordSink {
  /** `value` is undefined for keys-only dumps. */
  write(key: Buffer, value: Buffer | undefined): Promise<void> | void
}

export interface DumpProgress {
  records: number
  bytes: number
  /** Records expected in all (an estimate from the nodes' counts). */
  estimatedRecords: number
}

export interface ClusterDumpOptions {
  readonly cluster: Cluster
  readonly store: string
  /** Default: the live version of most nodes (the highest on a tie). */
  readonly version?: number
  /** Master partitions to dump; default all. */
  readonly partitions?: readonly number[]
  readonly keysOnly?: boolean
  /** Values as the version stores them (compressed), with the version's dictionary: see DumpInfo.stored. */
  readonly storedValues?: boolean
  readonly token?: string
  /** Per-stream limit, below each node's own. */
  readonly maxBytesPerSec?: number
  /** Where part files are kept until every partition arrived whole; default beside the output. */
  readonly tmpDir: string
  readonly onProgress?: (p: Readonly<DumpProgress>) => void
  readonly onFailover?: (e: { node: number; partitions: readonly number[]; error: string }) => void
  readonly signal?: AbortSignal
}

export interface DumpSummary {
  readonly version: number
  readonly records: number
  readonly keySerializer: string
  readonly valueSerializer: string
  /** Which node served each partition. */
  readonly servedBy: ReadonlyMap<number, number>
}

interface Part {
  readonly node: number
  readonly partitions: number[]
  readonly file: string
}

/**
 * Every record of the chosen partitions of one store version, each partition read once,
 * from one replica that holds it: the master first, the next replica when a node fails
 * (unreachable, cut mid-stream, or answering an error). Nodes stream in parallel, each
 * into a part file, so a stream that fails midway leaves nothing in the output; once
 * every part arrived whole (end frame checked), `prepare` is called with the stores'
 * serializers and the parts are replayed into the sink it returns.
 */
export async function dumpCluster(opts: ClusterDumpOptions, prepare: (info: DumpInfo) => Promise<RecordSink>): Promise<DumpSummary> {
  const infos = await nodeInfos(opts)
  const info = [...infos.values()][0]
  if (!info) throw new StoreError('RO_UNAVAILABLE', `no node answered for store ${opts.store}`)
  const ring = buildRing(info.layout)
  const version = opts.version ?? liveVersionOfMost(infos)
  const wanted = opts.partitions ?? Array.from({ length: ring.partitionCount }, (_, p) => p)
  for (const p of wanted) {
    if (!Number.isInteger(p) || p < 0 || p >= ring.partitionCount) {
      throw new StoreError('RO_BAD_OPTION', `partition ${p} does not exist (the store has partitions 0..${ring.partitionCount - 1})`)
    }
  }
  const candidates = new Map(wanted.map((p) => [p, replicaNodes(ring, p, info.replication)]))
  const failed = new Set<number>()
  const servedBy = new Map<number, number>()
  const parts: Part[] = []
  const progress: DumpProgress = { records: 0, bytes: 0, estimatedRecords: 0 }
  let head: PartHead | undefined
  const tmp = await mkdtemp(join(opts.tmpDir, '.rostore-dump-'))
  try {
    let todo = [...wanted]
    while (todo.length > 0) {
      const groups = new Map<number, number[]>()
      for (const p of todo) {
        const node = candidates.get(p)?.find((n) => !failed.has(n))
        if (node === undefined) throw new StoreError('RO_UNAVAILABLE', `no replica of partition ${p} could stream it`)
        groups.set(node, [...(groups.get(node) ?? []), p])
      }
      todo = []
      await Promise.all(
        [...groups].map(async ([node, partitions]) => {
          const file = join(tmp, `part-${node}-${partitions[0]}${opts.keysOnly ? '.keys' : ''}`)
          try {
            const h = await streamToPart(opts, nodeById(opts.cluster, node), version, partitions, file, progress)
            if (head !== undefined && !sameCodec(head.codec, h.codec))
              throw new StoreError('RO_CONFLICT', `node ${node} stores version ${version}'s values otherwise than another node`)
            head ??= h
            parts.push({ node, partitions, file })
            for (const p of partitions) servedBy.set(p, node)
          } catch (err) {
            if (opts.signal?.aborted || !isFailover(err)) throw err
            failed.add(node)
            opts.onFailover?.({ node, partitions, error: errorMessage(err) })
            todo.push(...partitions)
            await rm(file, { force: true })
          }
        }),
      )
    }
    const stored = opts.storedValues ? await clusterStoredValues(opts, head?.codec, version, [...servedBy.values()]) : undefined
    const sink = await prepare({
      keySerializer: head?.keySerializer ?? info.keySerializer,
      valueSerializer: head?.valueSerializer ?? info.valueSerializer,
      version,
      ...(stored ? { stored } : {}),
    })
    let records = 0
    for (const part of parts) records += await replayPart(part.file, sink)
    return {
      version,
      records,
      keySerializer: head?.keySerializer ?? info.keySerializer,
      valueSerializer: head?.valueSerializer ?? info.valueSerializer,
      servedBy,
    }
  } finally {
    await rm(tmp, { recursive: true, force: true })
  }
}

/** What a dump's output is prepared with: the version's serializers and, for stored values, how they are compressed. */
export interface DumpInfo {
  readonly keySerializer: string
  readonly valueSerializer: string
  readonly version: number
  /** With storedValues: the codec and, for zstd with a trained dictionary, its bytes (checked) and checksum. */
  readonly stored?: StoredValues
}

interface PartHead {
  readonly keySerializer: string
  readonly valueSerializer: string
  readonly codec: StoredCodecRef | undefined
}

function sameCodec(a: StoredCodecRef | undefined, b: StoredCodecRef | undefined): boolean {
  return a?.compression === b?.compression && a?.dictionary === b?.dictionary
}

/** The StoredValues of a cluster dump: the codec the streams named, the dictionary from a node that streamed. */
async function clusterStoredValues(
  opts: ClusterDumpOptions,
  codec: StoredCodecRef | undefined,
  version: number,
  nodes: readonly number[],
): Promise<StoredValues> {
  // No stream (no partition wanted): the codec is not known, and no value needs one.
  if (codec === undefined) return { compression: 'none' }
  const checksum = codec.dictionary
  if (checksum === undefined) return { compression: codec.compression }
  const errors: string[] = []
  for (const id of new Set(nodes)) {
    const c = new NodeClient(nodeById(opts.cluster, id), { adminToken: opts.token })
    try {
      const d = await c.dumpDictionary(opts.store, version)
      if (d.checksum === checksum) return { compression: codec.compression, dictionary: d }
      errors.push(`node ${id}: another dictionary than its stream named`)
    } catch (err) {
      if (!isFailover(err)) throw err
      errors.push(errorMessage(err))
    } finally {
      c.close()
    }
  }
  throw new StoreError('RO_UNAVAILABLE', `no node gave the dictionary of version ${version}: ${errors.slice(0, 3).join('; ')}`)
}

/** A node that cannot serve the stream now: ask another replica. Anything else (a bad request) stops the dump. */
function isFailover(err: unknown): boolean {
  return err instanceof StoreError && (err.code === 'RO_UNAVAILABLE' || err.code === 'RO_NOT_FOUND' || err.code === 'RO_CORRUPT')
}

function nodeById(cluster: Cluster, id: number): Cluster['nodes'][number] {
  const n = cluster.nodes.find((x) => x.id === id)
  if (!n) throw new StoreError('RO_BAD_CLUSTER', `node ${id} of the store's layout is not in the cluster file`)
  return n
}

async function nodeInfos(opts: ClusterDumpOptions): Promise<Map<number, RemoteStoreInfo>> {
  const out = new Map<number, RemoteStoreInfo>()
  const errors: string[] = []
  await Promise.all(
    opts.cluster.nodes.map(async (n) => {
      const c = new NodeClient(n, { adminToken: opts.token })
      try {
        out.set(n.id, await c.storeInfo(opts.store))
      } catch (err) {
        errors.push(errorMessage(err))
      } finally {
        c.close()
      }
    }),
  )
  if (out.size === 0) throw new StoreError('RO_UNAVAILABLE', `no node could describe store ${opts.store}: ${errors.slice(0, 3).join('; ')}`)
  return out
}

/** The live version most nodes serve; on a tie the highest (a push in progress goes forward). */
export function liveVersionOfMost(infos: ReadonlyMap<number, { version: number }>): number {
  const counts = new Map<number, number>()
  for (const i of infos.values()) counts.set(i.version, (counts.get(i.version) ?? 0) + 1)
  return [...counts].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0]![0]
}

async function streamToPart(
  opts: ClusterDumpOptions,
  node: Cluster['nodes'][number],
  version: number,
  partitions: number[],
  file: string,
  progress: DumpProgress,
): Promise<PartHead> {
  const dump = await openNodeDump(node, {
    store: opts.store,
    version,
    partitions,
    keysOnly: opts.keysOnly,
    ...(opts.storedValues ? { values: 'stored' as const } : {}),
    token: opts.token,
    maxBytesPerSec: opts.maxBytesPerSec,
    signal: opts.signal,
  })
  progress.estimatedRecords += dump.head.estimatedRecords
  const out = createWriteStream(file)
  let records = 0
  try {
    // Raw frames are written as they arrive: the replay decodes them again (checked once here).
    for (;;) {
      const r = await dump.frames.next()
      if (r.done) break
      const f = r.value
      if (f.type === 'entry' || f.type === 'key') {
        const frame = Buffer.allocUnsafe(f.type === 'entry' ? 8 + f.key.length + f.value.length : 4 + f.key.length)
        frame.writeUInt32BE(f.key.length, 0)
        if (f.type === 'entry') {
          frame.writeUInt32BE(f.value.length, 4)
          f.key.copy(frame, 8)
          f.value.copy(frame, 8 + f.key.length)
        } else {
          f.key.copy(frame, 4)
        }
        if (!out.write(frame)) await once(out, 'drain')
        records++
        progress.records++
        progress.bytes += frame.length
        opts.onProgress?.(progress)
      }
    }
    out.end()
    await once(out, 'close')
    return { keySerializer: dump.head.keySerializer, valueSerializer: dump.head.valueSerializer, codec: dump.head.codec }
  } catch (err) {
    out.destroy()
    progress.records -= records
    progress.estimatedRecords -= dump.head.estimatedRecords
    throw err
  } finally {
    await dump.frames.return(undefined as never).catch(() => undefined)
  }
}

/** Replays a part file (`keyLen:u32be [valueLen:u32be] key [value]` per record) into the sink. */
async function replayPart(file: string, sink: RecordSink): Promise<number> {
  let pending: Buffer = Buffer.alloc(0)
  let n = 0
  const keysOnly = partKeysOnly(file)
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    let at = 0
    for (;;) {
      const head = keysOnly ? 4 : 8
      if (pending.length - at < head) break
      const klen = pending.readUInt32BE(at)
      const vlen = keysOnly ? 0 : pending.readUInt32BE(at + 4)
      if (pending.length - at < head + klen + vlen) break
      const key = pending.subarray(at + head, at + head + klen)
      await sink.write(key, keysOnly ? undefined : pending.subarray(at + head + klen, at + head + klen + vlen))
      at += head + klen + vlen
      n++
    }
    pending = pending.subarray(at)
  }
  return n
}

/** Part files of keys-only dumps end in `.keys`. */
function partKeysOnly(file: string): boolean {
  return file.endsWith('.keys')
}

/** The master partitions of each node directory of a build: which directory to read each partition from. */
export interface BuildDumpOptions {
  readonly dir: string
  readonly partitions?: readonly number[]
  readonly keysOnly?: boolean
  /** As ClusterDumpOptions.storedValues. */
  readonly storedValues?: boolean
  readonly onProgress?: (p: Readonly<DumpProgress>) => void
  readonly signal?: AbortSignal
}

/** `rostore dump --from-build DIR`: the same records from a build's output directory, no cluster needed. */
export async function dumpBuild(opts: BuildDumpOptions, prepare: (info: DumpInfo) => Promise<RecordSink>): Promise<DumpSummary> {
  const { first, partitionCount, parts } = await buildParts(opts.dir, opts.partitions)
  const servedBy = new Map<number, number>()
  for (const part of parts) for (const p of part.partitions) servedBy.set(p, part.meta.nodeId)
  const progress: DumpProgress = { records: 0, bytes: 0, estimatedRecords: 0 }
  const stored = opts.storedValues ? await buildStoredValues(parts[0]?.dir ?? opts.dir, first) : undefined
  const sink = await prepare({
    keySerializer: first.keySerializer,
    valueSerializer: first.valueSerializer,
    version: first.version,
    ...(stored ? { stored } : {}),
  })
  for (const { dir, meta, partitions: mine } of parts) {
    progress.estimatedRecords += meta.records
    const v = await openVersion(dir, meta)
    try {
      for await (const item of walkPartitions(v, {
        partitions: new Set(mine),
        partitionCount,
        values: !opts.keysOnly,
        stored: opts.storedValues === true,
        signal: opts.signal,
      })) {
        if (item.key === undefined) continue
        await sink.write(item.key, opts.keysOnly ? undefined : item.value)
        progress.records++
        progress.bytes += item.key.length + item.value.length
        opts.onProgress?.(progress)
      }
    } finally {
      await v.close()
    }
  }
  return {
    version: first.version,
    records: progress.records,
    keySerializer: first.keySerializer,
    valueSerializer: first.valueSerializer,
    servedBy,
  }
}

/** The StoredValues of a build's output: its codec, and its dictionary read from `dir` (checked). */
async function buildStoredValues(dir: string, meta: StoreMetadata): Promise<StoredValues> {
  if (meta.dictionary === undefined) return { compression: meta.compression }
  const bytes = await readDictionary(dir, meta.dictionary)
  return { compression: meta.compression, dictionary: { bytes, checksum: meta.dictionary.checksum } }
}
