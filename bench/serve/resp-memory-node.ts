/**
 * Diagnostic for section 3b, run as its own process:
 *   node resp-memory-node.js <port> <records> <valueBytes>
 *
 * The RESP listener (server/resp) over a reader that costs next to nothing: a key is
 * present when its 12 digits are below `records`, and every present key answers the same
 * preallocated value of `valueBytes` bytes. What this process spends per request is the
 * RESP layer's own cost (parsing, dispatch, reply encoding, socket I/O) without the store
 * lookup, so "rostore RESP" minus this row is the lookup's share. Not a product setup.
 * Prints "listening <port>" once it accepts connections; loopback only.
 */
import type { Cluster } from '../../cluster/cluster'
import type { StoreMetadata } from '../../formats/store/layout/metadata'
import type { ServingReader } from '../../formats/store/read/store-reader-api'
import { writeFramed, writeFramedInto, writeValueInto } from '../../formats/store/chunk/value-framing'
import { ReadAuth } from '../../server/auth'
import { nullLogger } from '../../server/log'
import { startRespServer } from '../../server/resp/resp-server'
import type { ServedStore } from '../../swapper/served-store'
import { LiveStore } from '../../swapper/live-store'
import { STORE } from '../kit/rostore'

async function main(): Promise<void> {
  const [port, records, valueBytes] = process.argv.slice(2).map(Number) as [number, number, number]
  const value = Buffer.alloc(valueBytes, 0x61)
  const get = (key: Uint8Array | string): Buffer | undefined => {
    const k = typeof key === 'string' ? Buffer.from(key) : key
    let n = 0
    for (const c of k) {
      if (c < 0x30 || c > 0x39) return undefined
      n = n * 10 + c - 0x30
    }
    return k.length === 12 && n < records ? value : undefined
  }
  const metadata = {
    store: STORE,
    version: 1,
    keyHash: 'md5',
    layout: [{ id: 0, partitions: [0] }],
    replication: 1,
    records,
  } as unknown as StoreMetadata
  const reader: ServingReader = {
    dir: '',
    metadata,
    accessMode: 'pread',
    lastProbes: 0,
    get,
    getMany: (keys) => keys.map(get),
    getStored: get,
    getManyStored: (keys) => keys.map(get),
    storedValues: () => ({ compression: 'none' }),
    getManyFramed: ((keys, framing, maxBytes?: number) =>
      writeFramed(framing, keys.length, keys.map(get), undefined, maxBytes)) as ServingReader['getManyFramed'],
    getManyFramedInto: (keys, framing, sink, maxBytes) => writeFramedInto(sink, framing, keys.length, keys.map(get), undefined, maxBytes),
    getFramedInto: (key, framing, sink) => writeValueInto(sink, framing, get(key)),
    getAsync: (key) => Promise.resolve(get(key)),
    getManyAsync: (keys) => Promise.resolve(keys.map(get)),
    warm: () => undefined,
    residency: () => undefined,
    close: () => undefined,
  }
  const live = new LiveStore(STORE)
  void live.replace(reader)
  const sv: ServedStore = { store: STORE, live, stale: undefined, loadError: undefined, noteReadFault: () => undefined }
  const cluster: Cluster = { name: 'bench', nodes: [{ id: 0, host: '127.0.0.1', port: 1, partitions: [0] }] }
  const server = await startRespServer(
    {
      nodeId: 0,
      cluster,
      stores: { get: (n) => (n === STORE ? sv : undefined), all: () => [sv] },
      log: nullLogger,
      readAuth: new ReadAuth(undefined),
    },
    { host: '127.0.0.1', port, defaultStore: STORE },
  )
  process.on('SIGTERM', () => void server.close(1000).then(() => process.exit(0)))
  process.stdout.write(`listening ${server.port}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
