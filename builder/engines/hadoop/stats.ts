import { StoreError } from '../../../common/errors'
import type { KindCounts, ReducedChunk } from '../local/worker-protocol'

/**
 * What reducers print on stdout (the job's output, `part-*` files) and finalize reads:
 *
 *   rostore-chunk<TAB>{ReducedChunk + attempt}      one per chunk a reducer wrote
 *   rostore-map<TAB>{MapStats}                      one per map task, passed through
 *
 * Map statistics travel through the shuffle (their first key field is "stats"), so
 * Hadoop's exactly-once delivery of successful map output makes them exactly-once too.
 */
export const CHUNK_TAG = 'rostore-chunk'
export const MAP_TAG = 'rostore-map'

export interface FilePositions {
  readonly fileIndex: number
  /** Smallest byte offset of a blank line this mapper saw, or null. */
  readonly firstBlank: number | null
  /** Largest byte offset of a non-blank line (a record or the CSV header), or null. */
  readonly lastLine: number | null
}

export interface MapStats {
  readonly task: string
  readonly attempt: string
  readonly records: number
  readonly kinds: KindCounts
  readonly files: readonly FilePositions[]
  /** zstd: value bytes before and after compression, each record counted once. */
  readonly valueBytes?: { readonly raw: number; readonly stored: number }
}

export interface ChunkStats extends ReducedChunk {
  readonly attempt: string
}

export function emptyKinds(): KindCounts {
  return { keys: { string: 0, bytes: 0 }, values: { string: 0, json: 0, bytes: 0 } }
}

export function addKinds(into: KindCounts, k: KindCounts): void {
  for (const n of ['string', 'bytes'] as const) into.keys[n] += k.keys[n] ?? 0
  for (const n of ['string', 'json', 'bytes'] as const) into.values[n] += k.values[n] ?? 0
}

export function chunkStatsLine(s: ChunkStats): string {
  return `${CHUNK_TAG}\t${JSON.stringify(s)}\n`
}

export function mapStatsOutputLine(json: string): string {
  return `${MAP_TAG}\t${json}\n`
}

export interface ParsedStats {
  readonly chunks: ChunkStats[]
  readonly maps: MapStats[]
}

/** Parses reducer output text; `where` names the source in messages. Blank lines are skipped. */
export function parseStatsText(text: string, where: string, into: ParsedStats = { chunks: [], maps: [] }): ParsedStats {
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, '')
    if (line.trim() === '') continue
    const tab = line.indexOf('\t')
    const tag = tab < 0 ? line : line.slice(0, tab)
    const bad = (why: string): never => {
      throw new StoreError('RO_BAD_INPUT', `${where}:${i + 1}: ${why}`)
    }
    let json: unknown
    try {
      json = JSON.parse(line.slice(tab + 1))
    } catch {
      bad(`not a rostore statistics line: ${JSON.stringify(line.slice(0, 80))}`)
    }
    if (tag === CHUNK_TAG) into.chunks.push(checkChunk(json, bad))
    else if (tag === MAP_TAG) into.maps.push(checkMap(json, bad))
    else bad(`not a rostore statistics line: ${JSON.stringify(line.slice(0, 80))}`)
  }
  return into
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

function checkChunk(j: unknown, bad: (why: string) => never): ChunkStats {
  const c = j as Record<string, unknown>
  for (const k of ['bucket', 'chunk', 'records', 'duplicates', 'indexSize', 'dataSize'])
    if (!isCount(c?.[k])) bad(`chunk statistics without "${k}"`)
  // Format 1 chunks belong to a node, format 2 chunks to a partition.
  if (isCount(c['nodeId']) === isCount(c['partition'])) bad('chunk statistics need one of "nodeId" and "partition"')
  for (const k of ['indexChecksum', 'dataChecksum', 'attempt']) if (typeof c[k] !== 'string') bad(`chunk statistics without "${k}"`)
  return c as unknown as ChunkStats
}

function checkMap(j: unknown, bad: (why: string) => never): MapStats {
  const m = j as Record<string, unknown>
  if (!isCount(m?.['records'])) bad('map statistics without "records"')
  const kinds = m['kinds'] as KindCounts | undefined
  if (typeof kinds !== 'object' || kinds === null || typeof kinds.keys !== 'object' || typeof kinds.values !== 'object')
    bad('map statistics without "kinds"')
  if (!Array.isArray(m['files'])) bad('map statistics without "files"')
  const v = m['valueBytes'] as Record<string, unknown> | undefined
  if (v !== undefined && (typeof v !== 'object' || v === null || !isCount(v['raw']) || !isCount(v['stored'])))
    bad('map statistics with a malformed "valueBytes"')
  return m as unknown as MapStats
}
