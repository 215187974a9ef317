import { statfs } from 'node:fs/promises'
import { StoreError } from '../../common/errors'

/** Bytes an unprivileged writer may still use on the file system holding `dir`. */
export async function freeBytesOf(dir: string): Promise<number> {
  try {
    const s = await statfs(dir)
    return s.bavail * s.bsize
  } catch (err) {
    throw new StoreError('RO_IO', `cannot read free space of ${dir}: ${(err as Error).message}`, { cause: err })
  }
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let v = n
  let u = 0
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`
}

/**
 * Refuses a fetch that would fill the disk: a full disk under a serving node breaks the
 * live versions too (logs, swaps), so the margin is kept free on top of the fetch itself.
 */
export async function ensureFreeSpace(
  needBytes: number,
  marginBytes: number,
  freeBytes: () => Promise<number>,
  where: string,
): Promise<void> {
  const have = await freeBytes()
  const need = needBytes + marginBytes
  if (!(have >= need)) {
    throw new StoreError(
      'RO_NO_SPACE',
      `not enough free space in ${where}: need ${formatBytes(need)} (${formatBytes(needBytes)} of files + ${formatBytes(marginBytes)} margin), have ${formatBytes(have)}`,
    )
  }
}
