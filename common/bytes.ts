/** Big-endian u32 at `at`: hash bytes are compared and routed in big-endian order. */
export function readU32BE(b: Uint8Array, at: number): number {
  return (((b[at] as number) << 24) | ((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number)) >>> 0
}

export function writeU32BE(b: Uint8Array, at: number, v: number): void {
  b[at] = v >>> 24
  b[at + 1] = (v >>> 16) & 0xff
  b[at + 2] = (v >>> 8) & 0xff
  b[at + 3] = v & 0xff
}
