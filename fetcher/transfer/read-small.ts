import { StoreError } from '../../common/errors'
import { backoffDelay, sleep, type BackoffPolicy } from './backoff'
import { failureReason } from './failure-reason'
import { discardReadResult, type FetchSource } from '../sources/source'
import { guardPromise, stallGuard } from './stall-guard'

export interface ReadSmallOptions {
  readonly maxBytes: number
  readonly signal: AbortSignal
  readonly retries: number
  readonly backoff: BackoffPolicy
  readonly stallTimeoutMs: number
  readonly onRetry?: (err: unknown) => void
}

/**
 * Reads a whole small file (the manifest) into memory with the same retry rules as the
 * big downloads, refusing anything over `maxBytes` so a wrong URL cannot eat the heap.
 */
export async function readSmall(source: FetchSource, name: string, opts: ReadSmallOptions): Promise<Buffer> {
  const where = source.describe(name)
  for (let retry = 0; ; retry++) {
    const attempt = new AbortController()
    const signal = AbortSignal.any([opts.signal, attempt.signal])
    const onStall = (err: Error): void => attempt.abort(err)
    try {
      const res = await guardPromise(source.read(name, { start: 0, signal }), opts.stallTimeoutMs, where, onStall, {
        signal,
        onLate: discardReadResult,
      })
      if (res.size !== undefined && res.size > opts.maxBytes)
        throw new StoreError('RO_FETCH_FAILED', `${where}: ${res.size} bytes, more than the ${opts.maxBytes} a manifest may have`)
      const parts: Buffer[] = []
      let length = 0
      for await (const chunk of stallGuard(res.stream, opts.stallTimeoutMs, where, onStall)) {
        length += chunk.length
        if (length > opts.maxBytes)
          throw new StoreError('RO_FETCH_FAILED', `${where}: more than the ${opts.maxBytes} bytes a manifest may have`)
        parts.push(chunk)
      }
      return Buffer.concat(parts, length)
    } catch (err) {
      attempt.abort()
      if (opts.signal.aborted || err instanceof StoreError) throw err
      if (retry >= opts.retries) {
        throw new StoreError('RO_FETCH_FAILED', `${where}: gave up after ${retry} retries: ${failureReason(err)}`, { cause: err })
      }
      opts.onRetry?.(err)
      await sleep(backoffDelay(retry + 1, opts.backoff), opts.signal)
    }
  }
}
