import { createReadStream } from 'node:fs'
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
