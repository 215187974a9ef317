import { checkDictionaryField } from '../chunk/dictionary-file'
import { CHECKSUM_ALGORITHMS, COMPRESSIONS } from './metadata'

/** Throws RO_CORRUPT naming the file being validated. */
export type Bad = (msg: string) => never

export function int(m: Record<string, unknown>, k: string, bad: Bad, min = 0): number {
  const v = m[k]
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) bad(`"${k}" must be an integer >= ${min}`)
  return v as number
}

function str(m: Record<string, unknown>, k: string, bad: Bad): string {
  const v = m[k]
  if (typeof v !== 'string' || v.length === 0) bad(`"${k}" must be a non-empty string`)
  return v as string
}

/**
 * The fields a node's metadata.json (either format) and a format-2 version manifest
 * share: store, version, serializers, codec, checksum, chunks, records, and a layout
 * that is a whole ring holding `replication` nodes (routing, verify and clients need it).
 */
export function checkStoreFields(
  m: Record<string, unknown>,
  bad: Bad,
): { readonly chunks: number; readonly records: number; readonly partitionCount: number } {
  int(m, 'formatMinor', bad)
  str(m, 'store', bad)
  int(m, 'version', bad, 1)
  str(m, 'clusterName', bad)
  const replication = int(m, 'replication', bad, 1)
  str(m, 'keyHash', bad)
  const chunks = int(m, 'chunks', bad, 1)
  const records = int(m, 'records', bad)
  if (!['string', 'bytes'].includes(m['keySerializer'] as string)) bad('"keySerializer" must be string or bytes')
  if (!['string', 'json', 'bytes', 'mixed'].includes(m['valueSerializer'] as string)) bad('unknown "valueSerializer"')
  if (!(COMPRESSIONS as readonly unknown[]).includes(m['compression'])) bad(`unknown compression ${JSON.stringify(m['compression'])}`)
  checkDictionaryField(m, bad)
  if (!(CHECKSUM_ALGORITHMS as readonly unknown[]).includes(m['checksumAlgorithm']))
    bad(`unknown checksum algorithm ${JSON.stringify(m['checksumAlgorithm'])}`)
  const layout = m['layout']
  if (!Array.isArray(layout) || layout.length === 0) bad('"layout" must be a non-empty array')
  const ids = new Set<number>()
  const partitions = new Set<number>()
  for (const n of layout as unknown[]) {
    const node = n as Record<string, unknown>
    if (typeof n !== 'object' || n === null || !Number.isSafeInteger(node['id']) || !Array.isArray(node['partitions'])) {
      bad('"layout" entries must have "id" and "partitions"')
    }
    if (ids.has(node['id'] as number)) bad(`"layout" lists node ${String(node['id'])} twice`)
    ids.add(node['id'] as number)
    for (const p of node['partitions'] as unknown[]) {
      if (!Number.isSafeInteger(p) || (p as number) < 0 || partitions.has(p as number))
        bad(`"layout": bad or repeated partition ${JSON.stringify(p)}`)
      partitions.add(p as number)
    }
  }
  for (let p = 0; p < partitions.size; p++)
    if (!partitions.has(p)) bad(`"layout": partitions must be 0..${partitions.size - 1}, ${p} is missing`)
  if (replication > ids.size) bad(`"replication" ${replication} exceeds the ${ids.size} nodes of "layout"`)
  return { chunks, records, partitionCount: partitions.size }
}
