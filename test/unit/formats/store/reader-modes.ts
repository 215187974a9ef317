import { nativeFunctions } from '../../../../common/native'
import { readMetadata } from '../../../../formats/store/layout/metadata-io'
import { jsStoreOps } from '../../../../testkit/js-twins/store-ops'
import { normalize, openMappedStore, openServingReader } from '../../../../formats/store/read/store-reader'
import type { ReaderOptions, ServingReader } from '../../../../formats/store/read/store-reader-api'

/**
 * The ways a reader can run, for describe.each: 'mmap' (the addon; absent when
 * ROSTORE_NATIVE=0), 'mmap-js' (the same reader over the addon's JavaScript twins) and
 * 'pread' (the fallback).
 */
export type ReaderMode = 'mmap' | 'mmap-js' | 'pread'

export const READER_MODES: readonly ReaderMode[] = [...(nativeFunctions() ? (['mmap'] as const) : []), 'mmap-js', 'pread']

export async function openIn(mode: ReaderMode, dir: string, opts: ReaderOptions = {}): Promise<ServingReader> {
  if (mode === 'mmap-js') return openMappedStore(jsStoreOps, dir, await readMetadata(dir), normalize(opts))
  return openServingReader(dir, { ...opts, access: mode })
}
