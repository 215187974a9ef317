/**
 * `rostore`: read stores and run the cluster. Re-exports only; what is not here is internal
 * and may change. Build-side code is in `rostore/build`, the serving node in `rostore/server`,
 * so importing this entry loads neither Arrow/Parquet nor prom-client.
 */
export { openStore, type OpenOptions, type StoreReader, type StoredValues } from './formats/store/read/store-reader'
export type { SearchStrategy } from './formats/store/chunk/search'
export type {
  StoreMetadata,
  FileEntry,
  Compression,
  ChecksumAlgorithm,
  KeySerializer,
  ValueSerializer,
} from './formats/store/layout/metadata'
export { StoreClient, type StoreClientOptions } from './client/store-client'
export { pushStore, type PushOptions, type PushResult, type PushEvent, type NodeOutcome, type NodeState } from './client/push/push-store'
export { rollbackCluster, type RollbackOptions, type RollbackResult } from './client/push/rollback'
export { clusterVersions, type NodeVersions } from './client/versions'
export { loadCluster, parseCluster, clusterLayout, sameLayout, type Cluster, type ClusterNode } from './cluster/cluster'
export type { ClusterLayoutNode } from './cluster/layout'
export { StoreError, isStoreError, ERROR_CODES, type ErrorCode } from './common/errors'
