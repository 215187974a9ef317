import { isSafeName } from '../../formats/store/layout/layout'
import type { ServedStore, ServedStores } from '../../swapper/served-store'

/** Longest store name (formats/store/layout/layout.ts isSafeName). */
const MAX_STORE_NAME = 128
const COLON = 0x3a

/**
 * Key naming of the RESP port. A key argument is `<store>:<key>`, split at the first
 * colon (store names cannot hold one); the key is everything after it, any bytes. With a
 * default store (`--resp-default-store S`) every key argument is a bare key of S, colons
 * included: keys such as `user:42` then mean what the application meant, and the meaning
 * of a key never depends on which other stores happen to exist.
 *
 * Store names are matched as bytes against the names seen before, so the request path
 * makes no string; a name not seen yet is decoded once, validated and remembered (only
 * names of stores this node has are remembered, so the list stays bounded).
 */
export class KeySpace {
  /** After resolve(): where the key's own bytes start in the argument. */
  keyStart = 0
  private readonly known: { readonly name: string; readonly bytes: Buffer }[] = []

  constructor(
    private readonly stores: ServedStores,
    readonly defaultStore: string | undefined,
  ) {}

  /**
   * The store a key argument `args[start, end)` names, and `keyStart`; or the text of an
   * error reply.
   */
  resolve(args: Buffer, start: number, end: number): ServedStore | string {
    if (this.defaultStore !== undefined) {
      this.keyStart = start
      return this.stores.get(this.defaultStore) ?? `RO_NOT_SERVING this node does not serve store ${this.defaultStore}`
    }
    const limit = Math.min(end, start + MAX_STORE_NAME + 1)
    let colon = -1
    for (let i = start; i < limit; i++) {
      if (args[i] === COLON) {
        colon = i
        break
      }
    }
    if (colon < 0) return 'ERR keys are <store>:<key> on this port (or start the node with --resp-default-store)'
    this.keyStart = colon + 1
    return this.named(args, start, colon)
  }

  /** The store named by `args[start, end)` (ROSTORE.GETS), or the text of an error reply. */
  named(args: Buffer, start: number, end: number): ServedStore | string {
    const len = end - start
    for (const k of this.known) {
      if (k.bytes.length === len && sameBytes(k.bytes, args, start, len)) {
        return this.stores.get(k.name) ?? `RO_NOT_SERVING this node does not serve store ${k.name}`
      }
    }
    if (len > MAX_STORE_NAME) return 'ERR invalid store name'
    const name = args.toString('latin1', start, end)
    if (!isSafeName(name)) return 'ERR invalid store name'
    const sv = this.stores.get(name)
    if (!sv) return `RO_NOT_SERVING this node does not serve store ${name}`
    this.known.push({ name, bytes: Buffer.from(name, 'latin1') })
    return sv
  }
}

function sameBytes(a: Buffer, b: Buffer, at: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[i] !== b[at + i]) return false
  return true
}
