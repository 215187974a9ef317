/**
 * Where a build's time goes, in seconds of worker-thread time summed over the workers
 * (so with 2 workers the stages add up to about twice the wall time of the map and reduce
 * phases). Measured per batch, per spill and per chunk, never per record:
 * - parse: reading input and splitting it into records (the reader's own time);
 * - map: hashing keys, routing, copying records into the sort buffer;
 * - sort: ordering the buffer (radix sort, then ties);
 * - spill: writing sorted runs to disk when the buffer is full;
 * - merge: merging a bucket's runs and resolving duplicates (the reduce loop);
 * - write: filling and writing the chunk files' buffers (CRCs included);
 * - fsync: making the chunk files durable;
 * - checksum: the files' XXH64 for the metadata.
 */
export interface StageTimes {
  parse: number
  map: number
  sort: number
  spill: number
  merge: number
  write: number
  fsync: number
  checksum: number
}

export const STAGES = ['parse', 'map', 'sort', 'spill', 'merge', 'write', 'fsync', 'checksum'] as const

export function emptyStageTimes(): StageTimes {
  return { parse: 0, map: 0, sort: 0, spill: 0, merge: 0, write: 0, fsync: 0, checksum: 0 }
}

export function addStageTimes(into: StageTimes, t: StageTimes): void {
  for (const s of STAGES) into[s] += t[s]
}
