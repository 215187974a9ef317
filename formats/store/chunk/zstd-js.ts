import { StoreError } from '../../../common/errors'

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
          out = simple.decompressUsingDict(stored, dict)
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

const FRAME_MAGIC = 0xfd2fb528

/**
 * The content size a zstd frame's header declares (RFC 8878, 3.1.1.1), or undefined when
 * the header is not a frame's or declares none.
 */
export function frameContentSize(frame: Uint8Array): number | undefined {
  if (frame.length < 6) return undefined
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength)
  if (view.getUint32(0, true) !== FRAME_MAGIC) return undefined
  const descriptor = frame[4] as number
  const singleSegment = (descriptor >> 5) & 1
  const fcsFlag = descriptor >> 6
  const at = 5 + (singleSegment ? 0 : 1) + ([0, 1, 2, 4][descriptor & 3] as number)
  const size = fcsFlag === 0 ? singleSegment : ([0, 2, 4, 8][fcsFlag] as number)
  if (size === 0 || at + size > frame.length) return undefined
  if (size === 1) return frame[at] as number
  if (size === 2) return view.getUint16(at, true) + 256
  if (size === 4) return view.getUint32(at, true)
  return Number(view.getBigUint64(at, true))
}
