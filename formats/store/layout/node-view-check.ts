import { buildRing, heldPartitions } from '../../../cluster/routing'
import type { ClusterLayoutNode } from '../../../cluster/layout'
import type { Bad } from './metadata-fields'
import { partitionDataFileName, partitionIndexFileName } from './partition-files'

/**
 * The format-2 fields of a node's metadata.json (a node view, partition-files.ts
 * `nodeView`), called once metadata-io.ts has checked the fields both formats share
 * (layout, chunks, replication). Returns the number of chunk slots.
 *
 * `held` must be exactly what the layout gives the node: a reader routes by it, and a
 * router routes by the layout, so a directory holding another set would answer
 * "absent" for keys the cluster sends it. A node with nothing to hold has no version
 * directory to serve.
 */
export function checkNodeView(m: Record<string, unknown>, partitionCount: number, bad: Bad): number {
  const version = m['version'] as number
  const chunks = m['chunks'] as number
  const dv = m['dataVersion']
  if (typeof dv !== 'number' || !Number.isSafeInteger(dv) || dv < 1 || dv > version) {
    bad(`"dataVersion" must be an integer from 1 to "version" (${version})`)
  }
  const held = m['held']
  if (!Array.isArray(held) || held.length === 0) return bad('"held" must list the partitions the node holds (format 2)')
  held.forEach((p: unknown, i) => {
    if (!Number.isSafeInteger(p) || (p as number) < 0 || (p as number) >= partitionCount)
      bad(`"held": ${JSON.stringify(p)} is not a partition of the layout (0..${partitionCount - 1})`)
    if (i > 0 && (p as number) <= (held[i - 1] as number)) bad('"held" must be ascending, without repeats')
  })
  const nodeId = m['nodeId'] as number
  const expected = heldPartitions(buildRing(m['layout'] as ClusterLayoutNode[]), m['replication'] as number, nodeId)
  if (expected.join() !== held.join()) {
    bad(`"held" [${held.join(', ')}] is not what the layout gives node ${nodeId}: [${expected.join(', ')}]`)
  }
  const names = (held as number[]).flatMap((p) => partitionFileNames(p, chunks))
  checkFileList(m['files'], names, bad)
  return held.length * chunks
}

/** The files of one partition in manifest order: index then data, chunk by chunk. */
export function partitionFileNames(partition: number, chunks: number): string[] {
  const names: string[] = []
  for (let c = 0; c < chunks; c++) names.push(partitionIndexFileName(partition, c), partitionDataFileName(partition, c))
  return names
}

/** `files` must be exactly `names`, in that order, each with a size and a checksum. */
export function checkFileList(files: unknown, names: readonly string[], bad: Bad): void {
  if (!Array.isArray(files)) return bad('"files" must be an array')
  if (files.length !== names.length) bad(`"files" must list ${names.length} chunk files, lists ${files.length}`)
  files.forEach((f: unknown, i) => {
    const e = f as Record<string, unknown>
    if (typeof f !== 'object' || f === null || e['name'] !== names[i]) {
      bad(`"files"[${i}] must be ${names[i]} (held partitions' files in slot order), got ${JSON.stringify(e?.['name'])}`)
    }
    if (!Number.isSafeInteger(e['size']) || (e['size'] as number) < 0) bad(`file ${String(e['name'])}: bad size`)
    if (typeof e['checksum'] !== 'string' || !/^[0-9a-f]{8,128}$/.test(e['checksum'])) bad(`file ${String(e['name'])}: bad checksum`)
  })
}
