import { Counter, Gauge, type Registry } from 'prom-client'
import { StoreError } from '../../common/errors'
import { TokenBucket } from '../../fetcher/transfer/token-bucket'

/** Peer file streams served at once by default; more wait for a 503 and ask again. */
export const DEFAULT_PEER_STREAMS = 8

/**
 * What a node spends serving version files to its peers: one token bucket for all of them
 * (default the node's fetch rate, `--max-bytes-per-sec`: throttles apply to peer traffic
 * on both ends) and a bound on the streams open at once.
 */
export class PeerEgress {
  readonly bucket: TokenBucket | undefined
  private active = 0
  private readonly bytes: Counter | undefined

  constructor(
    bytesPerSec: number | undefined,
    readonly maxStreams = DEFAULT_PEER_STREAMS,
    registry?: Registry,
  ) {
    this.bucket = bytesPerSec === undefined ? undefined : new TokenBucket(bytesPerSec)
    if (registry === undefined) return
    this.bytes =
      (registry.getSingleMetric('rostore_peer_file_bytes_sent_total') as Counter | undefined) ??
      new Counter({
        name: 'rostore_peer_file_bytes_sent_total',
        help: 'Bytes of version files sent to peers (the peer file route)',
        registers: [registry],
      })
    if (registry.getSingleMetric('rostore_peer_file_streams') !== undefined) return
    const streams = (): number => this.active
    new Gauge({
      name: 'rostore_peer_file_streams',
      help: 'Peer file streams being served now',
      registers: [registry],
      collect() {
        this.set(streams())
      },
    })
  }

  /** `n` bytes of a file went to a peer. */
  sent(n: number): void {
    this.bytes?.inc(n)
  }

  get streams(): number {
    return this.active
  }

  /** Takes a stream slot; RO_UNAVAILABLE (503) when all are taken. The returned function gives it back, once. */
  open(): () => void {
    if (this.active >= this.maxStreams) {
      throw new StoreError('RO_UNAVAILABLE', `this node serves ${this.maxStreams} peer file streams already; ask again later`)
    }
    this.active++
    let done = false
    return () => {
      if (done) return
      done = true
      this.active--
    }
  }
}
