/**
 * The zstd frames of stored values (RFC 8878): written without their 4-byte magic number
 * (FORMAT.md, ".data", zstd), read with or without it (versions built before). A frame header
 * descriptor never equals the magic's first byte (0x28 sets its reserved bit), so the
 * first four bytes tell the two kinds apart.
 */
const FRAME_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd])

export function hasFrameMagic(stored: Uint8Array): boolean {
  return stored.length >= 4 && stored[0] === 0x28 && stored[1] === 0xb5 && stored[2] === 0x2f && stored[3] === 0xfd
}

/** The frame with its magic number, as decoders without a magicless mode read it (a copy when it has none). */
export function withFrameMagic(stored: Uint8Array): Uint8Array {
  return hasFrameMagic(stored) ? stored : Buffer.concat([FRAME_MAGIC, stored])
}

/**
 * The content size a zstd frame's header declares (RFC 8878, 3.1.1.1), or undefined when
 * the header is not a frame's or declares none. Read in place (no copy, no native call):
 * a lookup of a compressed value sizes its output with it.
 */
export function frameContentSize(stored: Uint8Array): number | undefined {
  const start = hasFrameMagic(stored) ? 4 : 0
  if (stored.length < start + 2) return undefined
  const descriptor = stored[start] as number
  if (descriptor & 0b1000) return undefined // the reserved bit
  const singleSegment = (descriptor >> 5) & 1
  const fcsFlag = descriptor >> 6
  const at = start + 1 + (singleSegment ? 0 : 1) + ([0, 1, 2, 4][descriptor & 3] as number)
  const size = fcsFlag === 0 ? singleSegment : ([0, 2, 4, 8][fcsFlag] as number)
  if (size === 0 || at + size > stored.length) return undefined
  const b = (i: number): number => stored[at + i] as number
  if (size === 1) return b(0)
  if (size === 2) return b(0) + b(1) * 256 + 256
  const low = (b(0) | (b(1) << 8) | (b(2) << 16) | (b(3) << 24)) >>> 0
  if (size === 4) return low
  return low + ((b(4) | (b(5) << 8) | (b(6) << 16) | (b(7) << 24)) >>> 0) * 2 ** 32
}
