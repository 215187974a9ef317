import { StoreError } from '../../../common/errors'
import { frameContentSize, withFrameMagic } from './zstd-frame'

/**
 * libzstd compiled to JavaScript (zstd-codec, an Emscripten build): the decoder of
 * dictionary-compressed values where the native addon is not loaded. fzstd, the lighter
 * fallback, cannot use a dictionary. Its module starts asynchronously, so a version's codec
 * loads it when the version is opened (versionCodec), never on a read.
 */

/** The part of zstd-codec's API used here (it ships no types). */
interface ZstdCodecModule {
  readonly Simple: new () => { decompressUsingDict(data: Uint8Array, dict: unknown): Uint8Array | null }
  readonly Dict: { readonly Decompression: new (dictionary: Uint8Array) => unknown }
}

/** A decoder of one dictionary's frames. */
export type DictionaryDecoder = (stored: Uint8Array) => Buffer

export interface ZstdJs {
  decoderFor(dictionary: Uint8Array): DictionaryDecoder
}

let loading: Promise<ZstdJs> | undefined

/** The JavaScript zstd module, started once per process. */
export function loadZstdJs(): Promise<ZstdJs> {
  loading ??= new Promise<ZstdJs>((resolve, reject) => {
    try {
      // Loaded only where the addon is missing: the native path never needs it.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { ZstdCodec } = require('zstd-codec') as { ZstdCodec: { run(cb: (zstd: ZstdCodecModule) => void): void } }
      ZstdCodec.run((zstd) => resolve(wrap(zstd)))
    } catch (err) {
      reject(new StoreError('RO_BAD_FORMAT', `the JavaScript zstd decoder does not load: ${(err as Error).message}`, { cause: err }))
    }
  })
  return loading
}

function wrap(zstd: ZstdCodecModule): ZstdJs {
  return {
    decoderFor: (dictionary) => {
      const dict = new zstd.Dict.Decompression(dictionary)
      const simple = new zstd.Simple()
      return (stored) => {
        let out: Uint8Array | null
        try {
          out = simple.decompressUsingDict(withFrameMagic(stored), dict)
        } catch (err) {
          throw new StoreError('RO_CORRUPT', `a zstd value frame does not decompress (${(err as Error).message})`, { cause: err })
        }
        // zstd-codec answers null for a frame of no content; such a frame is an empty value.
        if (out === null && frameContentSize(stored) === 0) return Buffer.alloc(0)
        if (out === null) throw new StoreError('RO_CORRUPT', 'a zstd value frame does not decompress with the dictionary')
        return Buffer.from(out.buffer, out.byteOffset, out.byteLength)
      }
    },
  }
}
