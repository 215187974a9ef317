import { closeSync, createReadStream, openSync } from 'node:fs'
import { readUpTo } from '../../common/sync-io'
import { createXXHash64, type IHasher } from 'hash-wasm'
import type { ChecksumAlgorithm } from './metadata'

/** Streaming file checksum: fed chunk by chunk, so fetches verify while they download. */
export interface FileHasher {
  update(chunk: Uint8Array): void
  digest(): string
}

export async function createFileHasher(algorithm: ChecksumAlgorithm): Promise<FileHasher> {
  if (algorithm !== 'xxh64') throw new RangeError(`unknown checksum algorithm ${String(algorithm)}`)
  const hasher: IHasher = await createXXHash64()
  hasher.init()
  return {
    update: (chunk) => void hasher.update(chunk),
    digest: () => hasher.digest('hex'),
  }
}

export async function checksumFile(path: string, algorithm: ChecksumAlgorithm = 'xxh64'): Promise<string> {
  const hasher = await createFileHasher(algorithm)
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hasher.update(chunk as Buffer)
  return hasher.digest()
}

/**
 * checksumFile for a writer that checksums file after file (a build worker): one hasher
 * and one read buffer for all of them, synchronous reads. Fresh stream buffers per file
 * cost a page fault per 4 KiB read, and this reads every byte the build wrote.
 */
export async function createFileChecksummer(algorithm: ChecksumAlgorithm = 'xxh64'): Promise<(path: string) => string> {
  if (algorithm !== 'xxh64') throw new RangeError(`unknown checksum algorithm ${String(algorithm)}`)
  const hasher: IHasher = await createXXHash64()
  const buf = Buffer.allocUnsafeSlow(1 << 20)
  return (path) => {
    const fd = openSync(path, 'r')
    try {
      hasher.init()
      for (let pos = 0; ;) {
        const n = readUpTo(fd, buf, pos)
        if (n === 0) break
        hasher.update(n === buf.length ? buf : buf.subarray(0, n))
        pos += n
      }
      return hasher.digest('hex')
    } finally {
      closeSync(fd)
    }
  }
}
