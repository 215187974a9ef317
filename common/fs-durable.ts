import { open } from 'node:fs/promises'
import { slowDiskDelay } from './test-slow-disk'

/** fsync a directory so a rename or create inside it survives a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  await slowDiskDelay()
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
