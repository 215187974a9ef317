import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StoreError } from '../../common/errors'
import { redactCredentials } from '../../common/redact'
import { writeFileAtomic } from './live-pointer'
import { DECISION_FILE, isValidVersion } from './version-names'

/**
 * A node's durable part of the cluster's push decisions (docs/RELIABILITY.md §4): the push
 * it prepared for (fetched and verified the version, not yet decided) and, per push id, its
 * one vote and the outcome once known. Votes are write-once: whoever writes first (the
 * pusher, or a node finishing a push whose pusher died) wins, and a push is committed iff
 * a majority of its version's layout voted commit (cluster/push-quorum.ts). Kept as `DIR/<store>/DECISION` (JSON,
 * replaced atomically and fsync'd), so a restarted node still knows what it promised.
 */
export interface PreparedPush {
  readonly pushId: string
  /** A rollback is decided the same way; its version is one every participant holds. */
  readonly kind: 'push' | 'rollback'
  readonly version: number
  /** The nodes that prepared: the only commit votes that count. */
  readonly participants: readonly number[]
  /** Nodes of the layout that did not take it (the push record names them); with the participants, the quorum's universe. */
  readonly missed: readonly number[]
  readonly source?: string
  /** The push record's seq, so the record this node writes at its swap orders like the pusher's. */
  readonly seq: number
  /** The version was fetched for this push: an abort removes it. */
  readonly fetched: boolean
  readonly at: string
}

export type Outcome = 'commit' | 'abort'

export interface DecisionEntry {
  readonly pushId: string
  readonly version: number
  /** This node's vote; never changes once written. */
  readonly vote?: Outcome
  /** What the cluster decided, once this node knows it (a majority of votes). */
  readonly outcome?: Outcome
  readonly at: string
}

export interface DecisionState {
  readonly prepared?: PreparedPush
  /** Newest last; the last MAX_DECISIONS kept. */
  readonly decisions: readonly DecisionEntry[]
}

export const MAX_DECISIONS = 32
const PUSH_ID = /^[A-Za-z0-9._:-]{1,128}$/
const MAX_NODES = 4096

export function isPushId(v: unknown): v is string {
  return typeof v === 'string' && PUSH_ID.test(v)
}

function bad(why: string): never {
  throw new StoreError('RO_BAD_REQUEST', `push decision: ${why}`)
}

function nodeIds(v: unknown, name: string, min: number): number[] {
  if (
    !Array.isArray(v) ||
    v.length < min ||
    v.length > MAX_NODES ||
    !v.every((id) => typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)
  )
    bad(`${name} must be a list of ${min} to ${MAX_NODES} node ids`)
  return [...new Set(v as number[])].sort((a, b) => a - b)
}

function only(o: Record<string, unknown>, fields: readonly string[]): void {
  for (const k of Object.keys(o)) if (!fields.includes(k)) bad(`unknown field ${JSON.stringify(k)}`)
}

/** A prepare from a request or the file, validated; RO_BAD_REQUEST naming the bad field. */
export function parsePrepared(input: unknown): PreparedPush {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return bad('must be an object')
  const o = input as Record<string, unknown>
  only(o, ['pushId', 'kind', 'version', 'participants', 'missed', 'source', 'seq', 'fetched', 'at'])
  if (!isPushId(o['pushId'])) bad('pushId must be 1-128 characters of [A-Za-z0-9._:-]')
  if (o['kind'] !== 'push' && o['kind'] !== 'rollback') bad('kind must be "push" or "rollback"')
  if (!isValidVersion(o['version'])) bad('version must be a positive integer')
  if (!isValidVersion(o['seq'])) bad('seq must be a positive integer')
  const source = o['source']
  if (source !== undefined && (typeof source !== 'string' || source.length === 0 || source.length > 4096 || source.includes('\0')))
    bad('source must be a path or URL of at most 4096 characters')
  if (typeof o['fetched'] !== 'boolean') bad('fetched must be true or false')
  const at = o['at'] ?? new Date().toISOString()
  if (typeof at !== 'string' || at.length > 64) bad('at must be a time of at most 64 characters')
  return {
    pushId: o['pushId'] as string,
    kind: o['kind'],
    version: o['version'] as number,
    participants: nodeIds(o['participants'], 'participants', 1),
    missed: nodeIds(o['missed'] ?? [], 'missed', 0),
    ...(source === undefined ? {} : { source: redactCredentials(source as string) }),
    seq: o['seq'] as number,
    fetched: o['fetched'] as boolean,
    at: at as string,
  }
}

export function parseOutcome(v: unknown, name: string): Outcome {
  if (v !== 'commit' && v !== 'abort') bad(`${name} must be "commit" or "abort"`)
  return v as Outcome
}

function parseEntry(input: unknown): DecisionEntry {
  if (typeof input !== 'object' || input === null) return bad('a decision must be an object')
  const o = input as Record<string, unknown>
  only(o, ['pushId', 'version', 'vote', 'outcome', 'at'])
  if (!isPushId(o['pushId'])) bad('pushId')
  if (!isValidVersion(o['version'])) bad('version')
  return {
    pushId: o['pushId'] as string,
    version: o['version'] as number,
    ...(o['vote'] === undefined ? {} : { vote: parseOutcome(o['vote'], 'vote') }),
    ...(o['outcome'] === undefined ? {} : { outcome: parseOutcome(o['outcome'], 'outcome') }),
    at: typeof o['at'] === 'string' ? o['at'].slice(0, 64) : '',
  }
}

/** The state kept in `storeDir` (empty when none). A damaged file is reported, not trusted. */
export async function readDecisionState(storeDir: string): Promise<DecisionState> {
  let text: string
  try {
    text = await readFile(join(storeDir, DECISION_FILE), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { decisions: [] }
    throw new StoreError('RO_IO', `cannot read the push decisions of ${storeDir}`, { cause: err })
  }
  try {
    const o = JSON.parse(text) as { prepared?: unknown; decisions?: unknown }
    if (!Array.isArray(o.decisions)) bad('no decisions list')
    return {
      ...(o.prepared === undefined || o.prepared === null ? {} : { prepared: parsePrepared(o.prepared) }),
      decisions: (o.decisions as unknown[]).slice(-MAX_DECISIONS).map(parseEntry),
    }
  } catch (err) {
    throw new StoreError('RO_CORRUPT', `the push decisions of ${storeDir} are damaged: ${(err as Error).message}`)
  }
}

/** Durably (temp + fsync + rename + fsync dir): a vote must survive the node's crash. */
export async function writeDecisionState(storeDir: string, state: DecisionState): Promise<void> {
  const decisions = state.decisions.slice(-MAX_DECISIONS)
  await writeFileAtomic(storeDir, DECISION_FILE, `${JSON.stringify({ prepared: state.prepared ?? null, decisions })}\n`)
}
