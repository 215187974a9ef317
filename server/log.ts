import { redactCredentials } from '../common/redact'
import type { LogFields, SwapLogger } from '../swapper/events'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export interface Logger extends SwapLogger {
  debug(event: string, fields?: LogFields): void
  /** A logger adding `fields` to every line. */
  child(fields: LogFields): Logger
}

/** Fields never written, whatever a caller passes: secrets stay out of logs. */
const REDACTED = new Set(['token', 'adminToken', 'authorization', 'Authorization', 'password', 'secret'])

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

/**
 * One JSON object per line: {"ts", "level", "event", ...fields}. Written to stderr by
 * default; `write` can be replaced (tests capture lines).
 */
export function createLogger(opts: { level?: LogLevel; write?: (line: string) => void; base?: LogFields } = {}): Logger {
  const min = ORDER[opts.level ?? 'info']
  const write = opts.write ?? ((line: string) => void process.stderr.write(line))
  const base = opts.base ?? {}
  const emit = (level: LogLevel, event: string, fields?: LogFields): void => {
    if (ORDER[level] < min) return
    const line: Record<string, unknown> = { ts: new Date().toISOString(), level, event }
    for (const src of [base, fields ?? {}]) {
      for (const [k, v] of Object.entries(src)) {
        if (REDACTED.has(k)) continue
        line[k] = v instanceof Error ? v.message : v
      }
    }
    let text: string
    try {
      text = JSON.stringify(line)
    } catch {
      text = JSON.stringify({ ts: line['ts'], level, event, note: 'unserializable fields' })
    }
    // Whatever field carries it (a source, an error's message or cause), a URL's credentials never reach the log.
    write(`${redactCredentials(text)}\n`)
  }
  return {
    debug: (e, f) => emit('debug', e, f),
    info: (e, f) => emit('info', e, f),
    warn: (e, f) => emit('warn', e, f),
    error: (e, f) => emit('error', e, f),
    child: (fields) => createLogger({ ...opts, base: { ...base, ...fields } }),
  }
}

/**
 * An error with its chain of causes, for the log only: public and job messages leave out
 * what a source sent or where a path leads (fetcher/transfer/failure-reason.ts); the causes keep
 * it, so the operator can still see it. Bounded, so a huge message cannot flood the log.
 */
export function errorDetail(err: unknown, maxChars = 4000): string {
  const parts: string[] = []
  let e: unknown = err
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e))
    e = e instanceof Error ? e.cause : undefined
  }
  const text = redactCredentials(parts.join(' <- caused by '))
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text
}

export const nullLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => nullLogger,
}
