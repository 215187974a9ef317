import { nativeFunctions, type NativeFunctions } from '../../../common/native'

/**
 * The functions the memory-mapped reader is built on, in two implementations with one
 * signature: the addon's (common/native.ts) and their JavaScript twins
 * (testkit/js-twins/: a test oracle, not shipped). Production uses the addon's; the twins
 * let one test suite check both, and document the native code.
 */
export type StoreOps = Omit<
  NativeFunctions,
  | 'zstdDecompress'
  | 'zstdTrain'
  | 'zstdPrepare'
  | 'zstdCompress'
  | 'zstdEncodeBatch'
  | 'zstdDecompressWith'
  | 'zstdFrameSize'
  | 'snappyDecode'
  | 'anonBuffer'
  | 'packMapped'
  | 'sendNow'
  | 'writeFileDurably'
  | 'writeBehind'
  | 'dropRange'
  | 'lowerThreadPriority'
  | 'uringProbe'
  | 'openRandom'
  | 'readRecords'
  | 'preadRing'
> &
  // The io_uring warm-up has no twin: without it a reader warms on the pool (cold-io.ts).
  Partial<Pick<NativeFunctions, 'uringProbe' | 'openRandom' | 'readRecords' | 'preadRing'>>

/** The addon's functions, or undefined when it is not available (see common/native.ts). */
export function nativeStoreOps(): StoreOps | undefined {
  return nativeFunctions()
}
