import { PATCH_DELETE } from '../../formats/store/patch/patch-file'
import { openPatch } from '../../formats/store/patch/patch-read'

/** What a partition patch holds (`rostore diff --patch`): its identity and operations, read in bounded memory. */
export interface PatchSummary {
  readonly partition: number
  readonly baseDataVersion: number
  readonly dataVersion: number
  /** Records added or changed (a patch does not tell which: that needs the base). */
  readonly puts: number
  readonly deleted: number
}

export async function readPatchSummary(file: string, onOp?: (kind: 'put' | 'deleted', key: Buffer) => void): Promise<PatchSummary> {
  const { header, ops } = await openPatch(file)
  let puts = 0
  let deleted = 0
  for await (const op of ops) {
    const kind = op.op === PATCH_DELETE ? 'deleted' : 'put'
    if (kind === 'put') puts++
    else deleted++
    onOp?.(kind, op.key)
  }
  return { partition: header.partition, baseDataVersion: header.baseDataVersion, dataVersion: header.dataVersion, puts, deleted }
}
