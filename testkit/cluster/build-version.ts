import { join } from 'node:path'
import { buildStore } from '../../builder/engines/local/build-job'
import type { OutputLayout } from '../../builder/build-options'
import type { Compression } from '../../formats/store/layout/metadata'
import type { Cluster } from '../../cluster/cluster'
import { writeInput } from '../stores/input-files'

/** `count` records `key(i)` → `value(i)`, the numbered keys most cluster tests read back. */
export function numberedRecords(count: number, value: (i: number) => string, key = (i: number): string => `key-${i}`): [string, string][] {
  return Array.from({ length: count }, (_, i) => [key(i), value(i)])
}

export interface VersionBuild {
  /** Where the TSV input is written (`in-<version>.tsv`). */
  readonly dir: string
  readonly cluster: Cluster
  readonly version: number
  readonly records: readonly (readonly [string, string])[]
  /** Default 'st'. */
  readonly store?: string
  /** Default `<dir>/out-v<version>`. */
  readonly output?: string
  /** Default 2. */
  readonly replication?: number
  /** Default 2. */
  readonly chunks?: number
  /** Default the builder's (partition files); `nodes` for tests of format-1 directories. */
  readonly layout?: OutputLayout
  /** Default none; zstd trains a dictionary when the values are enough to. */
  readonly compression?: Compression
}

/**
 * Builds one version of a store from `records` with the real builder (one worker, a small
 * memory budget): the build-for-a-cluster step most cluster tests share. Returns the
 * build output.
 */
export async function buildVersion(o: VersionBuild): Promise<string> {
  const input = join(o.dir, `in-${o.version}.tsv`)
  await writeInput(input, 'tsv', o.records)
  const output = o.output ?? join(o.dir, `out-v${o.version}`)
  await buildStore({
    inputs: [input],
    format: 'tsv',
    cluster: o.cluster,
    store: o.store ?? 'st',
    output,
    version: o.version,
    replication: o.replication ?? 2,
    chunks: o.chunks ?? 2,
    ...(o.layout === undefined ? {} : { layout: o.layout }),
    ...(o.compression === undefined ? {} : { compression: o.compression }),
    workers: 1,
    memoryMb: 16,
  })
  return output
}
