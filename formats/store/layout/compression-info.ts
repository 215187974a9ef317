import type { Compression, FileEntry } from './metadata'

/** What `rostore inspect` and a node's /status say about a version's value compression. */
export interface CompressionInfo {
  readonly codec: Compression
  /** zstd: the level the build used; null otherwise or when not recorded. */
  readonly level: number | null
  /** zstd: the dictionary's size in bytes; null without one. */
  readonly dictionaryBytes: number | null
  /** Stored value bytes over the input's value bytes (0.3: values take 30% of their size); null when the build did not record them. */
  readonly valueRatio: number | null
}

export function compressionInfo(meta: {
  readonly compression: Compression
  readonly dictionary?: FileEntry
  readonly build: Readonly<Record<string, string | number | boolean | null>>
}): CompressionInfo {
  const num = (k: string): number | null => {
    const v = meta.build[k]
    return typeof v === 'number' ? v : null
  }
  const raw = num('valueBytes')
  const stored = num('storedValueBytes')
  return {
    codec: meta.compression,
    level: meta.compression === 'zstd' ? num('zstdLevel') : null,
    dictionaryBytes: meta.dictionary?.size ?? null,
    valueRatio: raw !== null && stored !== null && raw > 0 ? Math.round((stored / raw) * 1000) / 1000 : null,
  }
}
