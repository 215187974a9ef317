/** Shared by the input reader tests: temp files, draining readers, checking errors. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isStoreError, type ErrorCode } from '../../../../common/errors'
import type { InputRecord } from '../../../../formats/input/types'

/** A fresh temp directory, removed after the test file's tests. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rostore-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

let fileSeq = 0

/** Writes `content` to a new file in `dir` and returns its path. */
export function writeInput(dir: string, name: string, content: string | Uint8Array): string {
  const path = join(dir, `${fileSeq++}-${name}`)
  writeFileSync(path, content)
  return path
}

export async function collect(records: AsyncIterable<InputRecord>): Promise<InputRecord[]> {
  const out: InputRecord[] = []
  for await (const rec of records) out.push(rec)
  return out
}

/** A record with text for key and value, for readable expectations. */
export interface Plain {
  key: string
  value: string
  keyKind: string
  valueKind: string
  line?: number
  row?: number
  order: number
}

export function plain(rec: InputRecord): Plain {
  const out: Plain = {
    key: rec.key.toString('utf8'),
    value: rec.value.toString('utf8'),
    keyKind: rec.keyKind,
    valueKind: rec.valueKind,
    order: rec.order,
  }
  if (rec.source.line !== undefined) out.line = rec.source.line
  if (rec.source.row !== undefined) out.row = rec.source.row
  return out
}

/** Key and value text only. */
export function kv(rec: InputRecord): [string, string] {
  return [rec.key.toString('utf8'), rec.value.toString('utf8')]
}

/** The error `run` fails with; fails the test when it succeeds. */
export async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run()
  } catch (err) {
    return err
  }
  throw new Error('expected a failure, but it succeeded')
}

/** Asserts a StoreError with `code` whose message is exactly `message` (or matches it). */
export async function expectStoreError(run: () => Promise<unknown>, code: ErrorCode, message: string | RegExp): Promise<void> {
  const err = await failure(run)
  if (!isStoreError(err)) throw new Error(`expected a StoreError, got ${String(err)}`)
  expect(err.code).toBe(code)
  if (typeof message === 'string') expect(err.message).toBe(message)
  else expect(err.message).toMatch(message)
}

export async function expectBadInput(records: () => AsyncIterable<InputRecord>, message: string | RegExp): Promise<void> {
  await expectStoreError(() => collect(records()), 'RO_BAD_INPUT', message)
}

/** `text` as a regular expression matching itself. */
export function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
