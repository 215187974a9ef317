/**
 * The part of a cluster that decides where keys go: node ids and their partitions. Hosts
 * and ports are not in it, so a build stays valid when nodes move.
 */
export interface ClusterLayoutNode {
  readonly id: number
  readonly partitions: readonly number[]
}
