import { Counter, Histogram, type Registry } from 'prom-client'

/** Counters a fetch updates; `store` is the only label on the byte path (few stores per
 *  node, so cardinality stays low). The duration's `result` is "ok" or an error code. */
export interface FetchMetrics {
  readonly bytes: Counter<'store'>
  readonly retries: Counter<'store'>
  readonly checksumFailures: Counter<'store'>
  readonly duration: Histogram<'result'>
  /** Bytes of fetched files by origin: source (build output), peer, link (hardlinked, nothing moved). */
  readonly fileBytes: Counter<'from'>
  /** Sources a file download left for the next one of its chain (checksum, stall, error, refusal). */
  readonly sourceFailovers: Counter<'from'>
}

const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 10800]

function reuse<T>(registry: Registry, name: string, make: () => T): T {
  // A second server instance (tests, restarts in-process) registering on the same registry
  // gets the same counters instead of prom-client's duplicate-name error.
  return (registry.getSingleMetric(name) as T | undefined) ?? make()
}

/** Creates the fetch metrics on `registry` (the server's own; never the global default). */
export function registerFetchMetrics(registry: Registry): FetchMetrics {
  const registers = [registry]
  return {
    bytes: reuse(
      registry,
      'rostore_fetch_bytes_total',
      () =>
        new Counter({
          name: 'rostore_fetch_bytes_total',
          help: 'Bytes received by store fetches, retried bytes included',
          labelNames: ['store'],
          registers,
        }),
    ),
    retries: reuse(
      registry,
      'rostore_fetch_retries_total',
      () =>
        new Counter({
          name: 'rostore_fetch_retries_total',
          help: 'File download attempts retried by store fetches',
          labelNames: ['store'],
          registers,
        }),
    ),
    checksumFailures: reuse(
      registry,
      'rostore_fetch_checksum_failures_total',
      () =>
        new Counter({
          name: 'rostore_fetch_checksum_failures_total',
          help: 'Downloaded files whose size or checksum did not match the manifest',
          labelNames: ['store'],
          registers,
        }),
    ),
    duration: reuse(
      registry,
      'rostore_fetch_duration_seconds',
      () =>
        new Histogram({
          name: 'rostore_fetch_duration_seconds',
          help: 'Wall time of store fetches by result (ok or error code)',
          labelNames: ['result'],
          buckets: DURATION_BUCKETS,
          registers,
        }),
    ),
    fileBytes: reuse(
      registry,
      'rostore_fetch_file_bytes_total',
      () =>
        new Counter({
          name: 'rostore_fetch_file_bytes_total',
          help: 'Bytes of fetched files by where they came from: source (the build output), peer (another node), link (hardlinked from an installed version, nothing moved)',
          labelNames: ['from'],
          registers,
        }),
    ),
    sourceFailovers: reuse(
      registry,
      'rostore_fetch_source_failovers_total',
      () =>
        new Counter({
          name: 'rostore_fetch_source_failovers_total',
          help: 'File downloads that gave up on a source (checksum, stall, error, refusal) and moved to the next of its chain, by the source left',
          labelNames: ['from'],
          registers,
        }),
    ),
  }
}
