import { readFile } from 'node:fs/promises'
import { dirname, isAbsolute, resolve } from 'node:path'
import { errorMessage, StoreError } from '../common/errors'
import { SERVE_OPTIONS, type ServeOptionSpec } from './serve-options'

/** A serve setting's value once parsed: from a flag, the config file or a default. */
export type ServeValue = string | number | boolean | readonly string[]
export type ServeSettings = Readonly<Record<string, ServeValue | undefined>>

const BY_NAME = new Map(SERVE_OPTIONS.map((o) => [o.name, o]))
/** A config file this large is not a config file. */
const MAX_CONFIG_BYTES = 1 << 20
/** A scheme (`http:`, `s3:`, `file:`): an allowed source that is not a relative path. */
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:/i

/**
 * Reads `rostore serve --config <file>`: one JSON object whose keys are the flags' names
 * (`"data-dir"`, `"node-id"`), each value of the flag's type. Unknown keys and wrong types
 * are refused naming the key; relative paths are resolved against the file's directory,
 * so a file means the same whatever directory the service starts in. RO_BAD_OPTION.
 */
export async function readServeConfig(file: string): Promise<ServeSettings> {
  let text: string
  try {
    const bytes = await readFile(file)
    if (bytes.length > MAX_CONFIG_BYTES) throw new Error(`larger than ${MAX_CONFIG_BYTES} bytes`)
    text = bytes.toString('utf8')
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `cannot read the config file ${file}: ${errorMessage(err)}`, { cause: err })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new StoreError('RO_BAD_OPTION', `the config file ${file} is not valid JSON: ${errorMessage(err)}`, { cause: err })
  }
  return checkServeConfig(parsed, file)
}

/** The checks of readServeConfig on an already parsed file; `file` names it in errors and anchors relative paths. */
export function checkServeConfig(parsed: unknown, file: string): ServeSettings {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new StoreError('RO_BAD_OPTION', `the config file ${file} must hold one JSON object of settings, got ${typeName(parsed)}`)
  }
  const base = dirname(resolve(file))
  const out: Record<string, ServeValue> = {}
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    const spec = BY_NAME.get(key)
    if (!spec) throw new StoreError('RO_BAD_OPTION', `${file}: unknown key "${key}"${suggestion(key)}`)
    out[key] = checkValue(spec, value, file, base)
  }
  return out
}

function checkValue(spec: ServeOptionSpec, value: unknown, file: string, base: string): ServeValue {
  const wrong = (expected: string): StoreError =>
    new StoreError('RO_BAD_OPTION', `${file}: "${spec.name}" must be ${expected}, got ${typeName(value)}`)
  switch (spec.kind) {
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw wrong('an integer')
      return value
    case 'boolean':
      if (typeof value !== 'boolean') throw wrong('true or false')
      return value
    case 'sources':
      if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string' && v !== '')) {
        throw wrong('an array of non-empty strings')
      }
      return value.map((v) => (URL_SCHEME.test(v) || isAbsolute(v) ? v : resolve(base, v)))
    case 'path':
      if (typeof value !== 'string' || value === '') throw wrong('a non-empty string (a path)')
      return resolve(base, value)
    case 'string':
      if (typeof value !== 'string') throw wrong('a string')
      if (spec.choices && !spec.choices.includes(value)) throw wrong(`one of ${spec.choices.map((c) => `"${c}"`).join(', ')}`)
      return value
  }
}

/** "dataDir" or "data_dir" for "data-dir": the one mistake everyone makes in a JSON file. */
function suggestion(key: string): string {
  const kebab = key.replace(/_/g, '-').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
  return BY_NAME.has(kebab) && kebab !== key ? ` (did you mean "${kebab}"?)` : ' (keys are the flag names of rostore serve --help)'
}

function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `a string (${JSON.stringify(value.slice(0, 60))})`
  if (typeof value === 'number') return `the number ${value}`
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}

/**
 * One setting per flag: the command line's when given, else the file's, else the default.
 * A token given on the command line (as a value or a file) replaces the file's, in either
 * form. RO_BAD_OPTION for a required setting missing from both.
 */
export function mergeServeSettings(cli: ServeSettings, file: ServeSettings = {}): ServeSettings {
  const out: Record<string, ServeValue | undefined> = {}
  const hidden = new Set<string>()
  for (const o of SERVE_OPTIONS) {
    if (o.sameSettingAs === undefined) continue
    if (cli[o.name] !== undefined || cli[o.sameSettingAs] !== undefined) hidden.add(o.name).add(o.sameSettingAs)
  }
  for (const o of SERVE_OPTIONS) {
    const given = cli[o.name] ?? (hidden.has(o.name) ? undefined : file[o.name])
    out[o.name] = given ?? (typeof o.default === 'function' ? o.default() : o.default)
    if (out[o.name] === undefined && o.required) {
      throw new StoreError('RO_BAD_OPTION', `--${o.name} is required (on the command line or in the --config file)`)
    }
  }
  return out
}
