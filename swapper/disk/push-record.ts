import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { writeFileAtomic } from './live-pointer'
import { isValidVersion, PUSH_RECORD_FILE } from './version-names'

/**
 * What the last cluster push (or rollback) of a store decided, as every node that took it
 * keeps it: the version that went live and the nodes that missed it.
 * A node that was down during a high-availability push learns from its peers' records,
 * when it starts, that it should hold a newer version, and refuses reads until it does.
 *
 * Kept on disk as `DIR/<store>/PUSH` (JSON, replaced atomically), so a node that learned
 * it is behind still knows it after a restart with no peer reachable.
 */
export interface PushRecord {
  /** The version the push (or rollback) made live. */
  readonly version: number
  /** Nodes that should hold it and did not take the push (down, or their fetch failed). */
  readonly missed: readonly number[]
  /**
   * The build output the push fetched from: where a node that missed it fetches it
   * (self-repair). Without credentials: a user info or query in it is replaced by
   * `[redacted]` when the record is parsed, so it is never stored, logged or returned.
   */
  readonly source?: string
  /**
   * Orders records of different pushes: the higher wins. A push uses one more than the
   * highest it read from the nodes, and at least the current time in ms, so a newer push
   * wins even over records it could not read (with its clock).
   */
  readonly seq: number
  /** When the push wrote it (ISO time, for people). */
  readonly at: string
  /**
   * Nodes that took it. One of them with no live version of the store (its disk replaced,
   * its store directory lost) is behind like a node that missed the push: it takes the
   * version again, from its peers when the build output is gone.
   */
  readonly holders?: readonly number[]
  /** The version is in partition files (format 2): a node repairs it from the peers holding its partitions. */
  readonly partitioned?: boolean
}

const MAX_MISSED = 4096
const MAX_SOURCE = 4096

/** A record from a request or a file, validated; RO_BAD_REQUEST naming the bad field. */
export function parsePushRecord(input: unknown): PushRecord {
  const bad = (why: string): never => {
    throw new StoreError('RO_BAD_REQUEST', `push record: ${why}`)
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return bad('must be an object')
  const o = input as Record<string, unknown>
  for (const k of Object.keys(o))
    if (!['version', 'missed', 'source', 'seq', 'at', 'holders', 'partitioned'].includes(k)) bad(`unknown field ${JSON.stringify(k)}`)
  if (!isValidVersion(o['version'])) bad('version must be a positive integer')
  const missed = o['missed']
  if (
    !Array.isArray(missed) ||
    missed.length > MAX_MISSED ||
    !missed.every((id) => typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)
  ) {
    bad(`missed must be a list of at most ${MAX_MISSED} node ids`)
  }
  const source = o['source']
  if (source !== undefined && (typeof source !== 'string' || source.length === 0 || source.length > MAX_SOURCE || source.includes('\0'))) {
    bad(`source must be a path or URL of at most ${MAX_SOURCE} characters`)
  }
  const holders = o['holders']
  if (
    holders !== undefined &&
    (!Array.isArray(holders) ||
      holders.length > MAX_MISSED ||
      !holders.every((id) => typeof id === 'number' && Number.isSafeInteger(id) && id >= 0))
  ) {
    bad(`holders must be a list of at most ${MAX_MISSED} node ids`)
  }
  if (o['partitioned'] !== undefined && typeof o['partitioned'] !== 'boolean') bad('partitioned must be a boolean')
  if (!isValidVersion(o['seq'])) bad('seq must be a positive integer')
  const at = o['at'] ?? ''
  if (typeof at !== 'string' || at.length > 64) bad('at must be a time of at most 64 characters')
  return {
    version: o['version'] as number,
    missed: [...new Set(missed as number[])].sort((a, b) => a - b),
    ...(source === undefined ? {} : { source: redactCredentials(source as string) }),
    seq: o['seq'] as number,
    at: at as string,
    ...(holders === undefined ? {} : { holders: [...new Set(holders as number[])].sort((a, b) => a - b) }),
    ...(o['partitioned'] === true ? { partitioned: true } : {}),
  }
}

/** The record kept in `storeDir`, or undefined. A damaged file is reported, not trusted. */
export async function readPushRecord(storeDir: string): Promise<PushRecord | undefined> {
  let text: string
  try {
    text = await readFile(join(storeDir, PUSH_RECORD_FILE), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new StoreError('RO_IO', `cannot read ${join(storeDir, PUSH_RECORD_FILE)}: ${(err as Error).message}`, { cause: err })
  }
  try {
    return parsePushRecord(JSON.parse(text))
  } catch (err) {
    // Written atomically by rostore, so this is damage or a hand edit: peers tell again.
    throw new StoreError('RO_CORRUPT', `${join(storeDir, PUSH_RECORD_FILE)} is not a push record: ${(err as Error).message}`)
  }
}

/** Write the record durably (temp + fsync + rename + fsync dir). */
export async function writePushRecord(storeDir: string, record: PushRecord): Promise<void> {
  await writeFileAtomic(storeDir, PUSH_RECORD_FILE, `${JSON.stringify(record)}\n`)
}

/**
 * The version `nodeId` should serve by this record, when it missed the push, or took it
 * and has no live version of the store now (`live`); else undefined.
 */
export function expectedVersion(record: PushRecord | undefined, nodeId: number | undefined, live?: number): number | undefined {
  if (record === undefined || nodeId === undefined) return undefined
  if (record.missed.includes(nodeId)) return record.version
  return live === undefined && record.holders?.includes(nodeId) === true ? record.version : undefined
}

/** Whether the record names `nodeId` as a node that should serve its version. */
export function namesNode(record: PushRecord, nodeId: number): boolean {
  return record.missed.includes(nodeId) || record.holders?.includes(nodeId) === true
}
