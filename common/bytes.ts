/** Big-endian u32 at `at`: hash bytes are compared and routed in big-endian order. */
export function readU32BE(b: Uint8Array, at: number): number {
  return (((b[at] as number) << 24) | ((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number)) >>> 0
}
