import type { InputFormat, KeyKind, ValueKind } from '../../../formats/input/types'
import type { InputSplit } from '../../../formats/input/splits'
import type { Compression } from '../../../formats/store/layout/metadata'
import type { ClusterLayoutNode } from '../../../cluster/layout'
import type { DuplicatePolicy, OutputLayout } from '../../build-options'
import type { BucketTarget } from '../../bucket-plan'
import type { PartitionPatchTask } from '../../partition-diff'
import type { PatchEntry } from '../../../formats/store/layout/partition-files'
import type { SegmentRef } from '../../run-merge'
import type { SortedRun } from '../../sort-buffer'
import type { StageTimes } from '../../stage-times'

/** Messages between the build job (main thread) and its worker threads. */
export interface WorkerSetup {
  readonly format: InputFormat
  readonly keyField?: string
  readonly valueField?: string
  readonly layout: readonly ClusterLayoutNode[]
  readonly replication: number
  readonly output: OutputLayout
  readonly chunks: number
  readonly keyHash: string
  readonly compression: Compression
  readonly zstdLevel: number
  /** zstd: the version's dictionary (the same bytes in every worker). */
  readonly zstdDictionary?: Uint8Array
  readonly onDuplicate: DuplicatePolicy
  readonly files: readonly string[]
  readonly runDir: string
  readonly sortBufferBytes: number
  readonly mergeBufferBytes: number
  readonly workerId: number
}

export interface ReduceTask {
  readonly target: BucketTarget
  /** The directory the chunk's files go into. */
  readonly dir: string
  readonly store: string
  readonly version: number
  readonly segments: readonly SegmentRef[]
}

export type ToWorker =
  | { readonly type: 'map'; readonly split: InputSplit }
  | { readonly type: 'flush' }
  | { readonly type: 'reduce'; readonly task: ReduceTask }
  | { readonly type: 'patch'; readonly task: PartitionPatchTask }

export interface KindCounts {
  keys: Record<KeyKind, number>
  values: Record<ValueKind, number>
}

/** One bucket's written chunk: `nodeId` in format 1, `partition` in format 2 (bucket-plan.ts). */
export interface ReducedChunk {
  readonly bucket: number
  readonly nodeId?: number
  readonly partition?: number
  readonly chunk: number
  readonly records: number
  readonly duplicates: number
  readonly indexSize: number
  readonly dataSize: number
  readonly indexChecksum: string
  readonly dataChecksum: string
}

/** Replies carry the worker's cumulative stage times (stage-times.ts). */
export type FromWorker =
  | { readonly type: 'progress'; readonly records: number; readonly bytes: number }
  | {
      readonly type: 'mapped'
      readonly records: number
      readonly kinds: KindCounts
      readonly times: StageTimes
      /** Value bytes of the split before and after the codec (0 and 0 without one). */
      readonly valueBytes: { readonly raw: number; readonly stored: number }
    }
  | { readonly type: 'flushed'; readonly runs: readonly SortedRun[]; readonly times: StageTimes }
  | { readonly type: 'reduced'; readonly chunk: ReducedChunk; readonly times: StageTimes }
  /** `patch` undefined: the partition's patch would have been too large and was not kept. */
  | { readonly type: 'patched'; readonly patch?: PatchEntry }
  | { readonly type: 'error'; readonly code?: string; readonly message: string }
