import { rm } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import type { Registry } from 'prom-client'
import { fetchVersion, type FetchProgress } from '../fetcher/fetch-job'
import { registerFetchMetrics } from '../fetcher/fetch-metrics'
import { TokenBucket } from '../fetcher/token-bucket'
import { installResult, type InstallResult, type StoreVersions } from '../swapper/store-versions'
import type { ServingMirror } from '../swapper/serving-mirror'

export interface FetchRequest {
  readonly sv: StoreVersions<ServingMirror>
  readonly source: string
  readonly version?: number
  readonly maxBytesPerSec?: number
  readonly signal: AbortSignal
  readonly onProgress: (p: unknown) => void
}

/** A fetched version, reported like an install. */
export type FetchOutcome = InstallResult

export type FetchRunner = (r: FetchRequest) => Promise<FetchOutcome>

export interface FetchRunnerOptions {
  readonly nodeId: number
  /** Node-wide byte rate shared by every fetch (protects live serving). */
  readonly maxBytesPerSec?: number
  /** When given, fetch sources must lie under one of these. */
  readonly allowedSources?: readonly string[]
  readonly registry: Registry
}

/**
 * Fetch a version from a build output into a `.tmp-fetch-*` staging directory of the
 * store, then verify it and rename it to `version-<V>` (StoreVersions.adopt). The
 * staging directory is removed whatever happens; a crash leaves it to startup recovery.
 */
export function createFetchRunner(opts: FetchRunnerOptions): FetchRunner {
  const bucket = opts.maxBytesPerSec === undefined ? undefined : new TokenBucket(opts.maxBytesPerSec)
  const metrics = registerFetchMetrics(opts.registry)
  return async (r) => {
    const t0 = performance.now()
    const staging = r.sv.stagingPath('fetch')
    try {
      const manifest = await fetchVersion({
        source: r.source,
        nodeId: opts.nodeId,
        destDir: staging,
        maxBytesPerSec: r.maxBytesPerSec,
        bucket,
        signal: r.signal,
        allowedSources: opts.allowedSources,
        expect: { store: r.sv.store, ...(r.version === undefined ? {} : { version: r.version }) },
        metrics,
        onProgress: (p: FetchProgress) =>
          r.onProgress({
            bytesDone: p.bytesDone,
            bytesTotal: p.bytesTotal,
            rateBytesPerSec: Math.round(p.rateBytesPerSec),
            etaSeconds: p.etaSeconds,
            retries: p.retries,
            checksumFailures: p.checksumFailures,
          }),
      })
      return installResult(await r.sv.adopt(staging, { signal: r.signal, expectVersion: manifest.version }), t0)
    } finally {
      await rm(staging, { recursive: true, force: true }).catch(() => undefined)
    }
  }
}
