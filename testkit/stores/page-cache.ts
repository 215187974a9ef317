import { closeSync, fsyncSync, openSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { nativeFunctions } from '../../common/native'

/**
 * Evicts every file under `dir` from the page cache (fsync, then POSIX_FADV_DONTNEED), so
 * that the next reads come from the disk. Pages a process has mapped stay: evict before the
 * reader opens (or the node starts). Returns the files evicted; 0 without the addon.
 */
export function evictTree(dir: string): number {
  const native = nativeFunctions()
  if (!native) return 0
  let n = 0
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const st = statSync(path)
    if (st.isDirectory()) n += evictTree(path)
    else if (st.isFile()) {
      const fd = openSync(path, 'r')
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      if (native.dropCache(path)) n++
    }
  }
  return n
}
