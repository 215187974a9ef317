import { closeSync, createReadStream, openSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { nativeFunctions } from '../../../common/native'
import { ReadBehind } from '../../../common/read-behind'
import { readUpTo } from '../../../common/sync-io'
import { createXXHash64, type IHasher } from 'hash-wasm'
import type { ChecksumAlgorithm } from '../layout/metadata'

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

/** The xxh64 checksum of `bytes`, in hex as metadata.json names files by. */
export async function xxh64Hex(bytes: Uint8Array): Promise<string> {
  const hasher = await createFileHasher('xxh64')
  hasher.update(bytes)
  return hasher.digest()
}

/**
 * The checksum of a whole file. `dropBehind`: what was read leaves the page cache as the
 * read goes on (native/io/drop-behind.c), for files read once that must not evict hot pages
 * (a fetched version's verify); without the addon it reads like the plain path.
 */
export async function checksumFile(
  path: string,
  algorithm: ChecksumAlgorithm = 'xxh64',
  opts: { readonly dropBehind?: boolean } = {},
): Promise<string> {
  const hasher = await createFileHasher(algorithm)
  if (opts.dropBehind !== true || !nativeFunctions()) {
    for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hasher.update(chunk as Buffer)
    return hasher.digest()
  }
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.allocUnsafeSlow(1 << 20)
    const behind = new ReadBehind(fh.fd)
    let pos = 0
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos)
      if (bytesRead === 0) break
      hasher.update(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead))
      pos += bytesRead
      behind.passed(pos)
    }
    behind.end()
  } finally {
    await fh.close()
  }
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
