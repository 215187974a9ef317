/**
 * The JavaScript twins of the addon's store functions, with the addon's signatures: one
 * describe.each suite runs both (test/unit/formats/store/store-ops.test.ts), so the twins
 * are the native code's executable specification. Test kit only: the product reads with
 * the addon or, without it, with the pread reader (formats/store/read/pread-reader.ts).
 */
import { crc32, crc32Batch } from '../../common/crc32'
import { md5, md5Batch } from '../../common/md5'
import type { StoreOps } from '../../formats/store/read/store-ops'
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
