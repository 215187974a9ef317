import type { NormalizedBuildOptions } from '../../build-options'

/** The build's onProgress calls: bytes read while mapping, then buckets done; at most every 200 ms. */
export function progressTracker(o: NormalizedBuildOptions, bytesTotal: number) {
  let records = 0
  let bytesRead = 0
  let bucketsDone = 0
  let bucketsTotal = 0
  let phase: 'map' | 'reduce' = 'map'
  let last = 0
  const report = (force = false): void => {
    const now = Date.now()
    if (!o.onProgress || (!force && now - last < 200)) return
    last = now
    o.onProgress({ phase, records, bytesRead, bytesTotal, bucketsDone, bucketsTotal })
  }
  return {
    add: (r: number, b: number): void => {
      records += r
      bytesRead += b
      report()
    },
    splitDone: (b: number): void => {
      bytesRead = Math.min(bytesTotal, bytesRead + b)
      report()
    },
    startReduce: (n: number): void => {
      phase = 'reduce'
      bytesRead = bytesTotal
      bucketsTotal = n
      report(true)
    },
    bucketDone: (): void => {
      bucketsDone++
      report(bucketsDone === bucketsTotal)
    },
  }
}
