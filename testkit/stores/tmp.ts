import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A fresh temp directory per test file; removed by the returned cleanup. `fresh()` makes a
 * new empty subdirectory of it, one per test.
 */
export function makeTmp(prefix = 'rostore-test-'): { dir: string; cleanup: () => void; fresh: () => string } {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  let n = 0
  return {
    dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
    fresh: () => {
      const d = join(dir, `s${n++}`)
      mkdirSync(d)
      return d
    },
  }
}
