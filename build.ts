/**
 * `rostore/build`: build stores offline and verify them. Re-exports only.
 */
export { buildStore, type BuildSummary } from './builder/engines/local/build-job'
export {
  DUPLICATE_POLICIES,
  OUTPUT_LAYOUTS,
  type BuildOptions,
  type BuildProgress,
  type DuplicatePolicy,
  type OutputLayout,
} from './builder/build-options'
export { readManifest, validateManifest } from './formats/store/layout/manifest-io'
export type { VersionManifest } from './formats/store/layout/partition-files'
export { verifyStore, type VerifyReport } from './formats/store/scan/verify'
export { INPUT_FORMATS, MAX_KEY_BYTES, type InputFormat, type InputRecord, type ReadOptions } from './formats/input/types'
export { readInput, listInputFiles } from './formats/input/read-input'
export { COMPRESSIONS, type Compression, type StoreMetadata } from './formats/store/layout/metadata'
