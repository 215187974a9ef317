import { realpath } from 'node:fs/promises'
import { basename, dirname, join, sep } from 'node:path'
import type { FsGate } from '../transfer/fs-gate'

/** `path` is `dir` or below it; both absolute and normalised (no trailing separator but for "/"). */
export function isInsideDir(path: string, dir: string): boolean {
  if (path === dir) return true
  const base = dir.endsWith(sep) ? dir : `${dir}${sep}`
  return path.startsWith(base)
}

/**
 * An absolute path with every symlink resolved, as far as it exists: the existing part
 * through realpath, the rest appended as written (so a path that does not exist yet below
 * a symlink is judged by where the symlink leads). Each realpath goes through `gate`.
 */
export async function resolveLocalPath(path: string, gate: FsGate, signal: AbortSignal): Promise<string> {
  const missing: string[] = []
  let at = path
  for (;;) {
    try {
      const real = await gate.run(() => realpath(at), signal)
      return missing.length === 0 ? real : join(real, ...missing.reverse())
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // Aborts and stalls are not errno errors: the caller's to handle.
      if (typeof code !== 'string') throw err
      const parent = dirname(at)
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || parent === at) {
        // Unreadable (EACCES...): judge the path as written; opening it will fail anyway.
        return missing.length === 0 ? at : join(at, ...missing.reverse())
      }
      missing.push(basename(at))
      at = parent
    }
  }
}
