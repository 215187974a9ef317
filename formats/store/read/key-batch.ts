/**
 * The keys of one getMany, packed for the addon: all key bytes back to back in one
 * Buffer, their end offsets in a Uint32Array, and room for 4 result numbers per key.
 * Reused from batch to batch (grown when needed), so a batch allocates nothing per key.
 */
export class KeyBatch {
  bytes: Buffer = Buffer.alloc(4096)
  ends: Uint32Array = new Uint32Array(64)
  out: Float64Array = new Float64Array(256)

  fill(keys: readonly (Uint8Array | string)[]): void {
    const n = keys.length
    if (this.ends.length < n) {
      this.ends = new Uint32Array(n)
      this.out = new Float64Array(4 * n)
    }
    let at = 0
    for (let i = 0; i < n; i++) {
      const key = keys[i] as Uint8Array | string
      const room = this.bytes.length - at
      if (typeof key === 'string') {
        const max = key.length * 3
        if (max > room) this.grow(at, Buffer.byteLength(key, 'utf8'))
        at += this.bytes.write(key, at, 'utf8')
      } else {
        if (key.length > room) this.grow(at, key.length)
        this.bytes.set(key, at)
        at += key.length
      }
      this.ends[i] = at
    }
  }

  /** Room for `need` more bytes after the first `used`. */
  private grow(used: number, need: number): void {
    if (this.bytes.length - used >= need) return
    const next = Buffer.alloc(Math.max(this.bytes.length * 2, used + need))
    this.bytes.copy(next, 0, 0, used)
    this.bytes = next
  }
}
