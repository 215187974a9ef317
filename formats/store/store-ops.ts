import { crc32, crc32Batch } from '../../common/crc32'
import { md5, md5Batch } from '../../common/md5'
import { nativeFunctions, type NativeFunctions } from '../../common/native'
import { createLookupJs } from './js-lookup'
import {
  adviseRandomJs,
  dropCacheJs,
  lockPagesJs,
  mapResidentJs,
  prefetchJs,
  readFileWindows,
  refreshResidencyJs,
  scanIndexJs,
  warmRecordsJs,
} from './js-mapping'

/**
 * The functions the memory-mapped reader is built on, in two implementations with one
 * signature: the addon's (common/native.ts) and their JavaScript twins. Production uses
 * the addon's; the twins let one test suite check both, and document the native code.
 */
export type StoreOps = Omit<
  NativeFunctions,
  'zstdDecompress' | 'anonBuffer' | 'packMapped' | 'sendNow' | 'writeFileDurably' | 'writeBehind' | 'dropRange'
>

export const jsStoreOps: StoreOps = {
  md5,
  crc32,
  md5Batch,
  crc32Batch,
  dropCache: dropCacheJs,
  mapFile: readFileWindows,
  // Its windows are ordinary ArrayBuffers, which V8 counts and collects on its own.
  releaseMappings: () => undefined,
  scanIndex: scanIndexJs,
  prefetch: prefetchJs,
  mapResident: mapResidentJs,
  createLookup: createLookupJs,
  adviseRandom: adviseRandomJs,
  refreshResidency: refreshResidencyJs,
  warmRecords: warmRecordsJs,
  lockPages: lockPagesJs,
}

/** The addon's functions, or undefined when it is not available (see common/native.ts). */
export function nativeStoreOps(): StoreOps | undefined {
  return nativeFunctions()
}
