/**
 * What a multi-get read in one pass: each key's value and the version that answered it,
 * and the version each node that answered serves.
 */
export interface FirstPass {
  /** Per key: its replica node ids, master first. */
  readonly replicas: readonly (readonly number[])[]
  readonly values: readonly (Buffer | undefined)[]
  /** Per key: the version of the answer in `values`. */
  readonly versionOf: readonly number[]
  /** Nodes that answered, and the version each serves. */
  readonly nodeVersions: ReadonlyMap<number, number>
}

/** Reads keys (by index) from one node: the values in order and the node's version; throws when the node fails. */
export type ReadFromNode = (nodeId: number, idxs: readonly number[]) => Promise<{ version: number; values: (Buffer | undefined)[] }>

/**
 * A multi-get whose answers came from several versions (the nodes are mid-swap, or a push
 * left the cluster split until the nodes converge): every key from ONE version, rather than
 * failing. Versions are tried newest first (a client that read a version should not go
 * back); for each, the keys answered by another version are asked of their other replicas
 * that serve it (or whose version is not known yet). Undefined when no version can serve
 * every key.
 */
export async function readOneVersion(
  first: FirstPass,
  read: ReadFromNode,
): Promise<{ values: (Buffer | undefined)[]; version: number } | undefined> {
  const nodeVersions = new Map(first.nodeVersions)
  const failed = new Set<number>()
  const candidates = [...new Set(first.versionOf)].sort((a, b) => b - a)
  for (const target of candidates) {
    const values = [...first.values]
    let need = first.versionOf.flatMap((v, i) => (v === target ? [] : [i]))
    for (let attempt = 0; need.length > 0; attempt++) {
      // Each key to its first replica that may serve the target version.
      const byNode = new Map<number, number[]>()
      const stuck: number[] = []
      for (const i of need) {
        const id = first.replicas[i]!.find((n) => !failed.has(n) && (nodeVersions.get(n) ?? target) === target)
        if (id === undefined) stuck.push(i)
        else byNode.set(id, [...(byNode.get(id) ?? []), i])
      }
      if (stuck.length > 0 || byNode.size === 0 || attempt > first.replicas[0]!.length) break
      const again: number[] = []
      await Promise.all(
        [...byNode].map(async ([id, idxs]) => {
          try {
            const r = await read(id, idxs)
            nodeVersions.set(id, r.version)
            if (r.version !== target) return void again.push(...idxs)
            idxs.forEach((i, j) => (values[i] = r.values[j]))
          } catch {
            failed.add(id)
            again.push(...idxs)
          }
        }),
      )
      need = again
    }
    if (need.length === 0) return { values, version: target }
  }
  return undefined
}
