import { StoreError } from '../common/errors'

/**
 * The parsing half of a yargs option that takes an integer. yargs's `type: 'number'` turns
 * `--version same` into NaN and the text the user typed is lost; taken as a string and
 * coerced here, the error names the option and echoes what was given. Ranges stay in each
 * command's checks.
 */
export function integerOption(name: string): { type: 'string'; coerce: (raw: unknown) => number } {
  return { type: 'string', coerce: (raw: unknown) => parseInteger(name, raw) }
}

export function parseInteger(name: string, raw: unknown): number {
  if (typeof raw === 'number' && Number.isSafeInteger(raw)) return raw
  if (Array.isArray(raw)) throw new StoreError('RO_BAD_OPTION', `--${name} was given ${raw.length} times; give it once`)
  const text = String(raw).trim()
  // Digits only (a leading minus allowed): "1e3", "0x10", "12abc" and "" are refused.
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new StoreError('RO_BAD_OPTION', `--${name} must be an integer, got ${JSON.stringify(String(raw).slice(0, 100))}`)
  }
  return Number(text)
}
