/**
 * What the swapper reports to whoever runs it (the server's logger and metrics). The
 * swapper never imports the server: the server passes these in.
 */
export type LogFields = Readonly<Record<string, unknown>>

export interface SwapLogger {
  info(event: string, fields?: LogFields): void
  warn(event: string, fields?: LogFields): void
  error(event: string, fields?: LogFields): void
}

export const silentLogger: SwapLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
}

export type SwapKind = 'swap' | 'rollback'

export interface SwapResult {
  readonly store: string
  readonly kind: SwapKind
  /** The version live before, undefined for a store's first swap. */
  readonly from: number | undefined
  readonly to: number
  /** False when `to` was already live (a no-op). */
  readonly changed: boolean
  /** Open of the new reader + pointer flip + in-memory replace, in milliseconds. */
  readonly elapsedMs: number
  /** The pointer flip and in-memory replace alone, in milliseconds. */
  readonly flipMs: number
}

export interface SwapHooks {
  onSwap?(result: SwapResult): void
  onVersionsDeleted?(store: string, versions: readonly number[]): void
}
