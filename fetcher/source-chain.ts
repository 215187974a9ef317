import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { isStoreError, StoreError } from '../common/errors'
import type { FileEntry } from '../formats/store/layout/metadata'
import { backoffDelay, sleep } from './transfer/backoff'
import { downloadFile, type DownloadContext } from './transfer/download-file'
import { failureReason } from './transfer/failure-reason'
import { NotReadyError, type FetchSource } from './sources/source'

/** Where a file's bytes came from: the build output, a peer node, or a hardlink of an installed copy. */
export type FileOrigin = 'source' | 'peer' | 'link'

/** One place a file may come from, in the order the chain tries them. */
export interface ChainLink {
  readonly from: 'source' | 'peer'
  readonly source: FetchSource
  /** Directory of the file under the source's root; '' for the root itself. */
  readonly dir: string
  /** For logs: "node 2", "build output". */
  readonly label: string
}

const NOT_READY_POLL_MS = 500

export interface ChainPolicy {
  /** "Not ready" answers from one peer waited out (a poll every NOT_READY_POLL_MS) before moving on; default 240 (two minutes). */
  readonly notReadyWaits?: number
  /** Retries per file from one peer, in all (a peer that fails or trickles is left quickly, the build output is next); default 1. */
  readonly peerRetries?: number
  /** Called when a link fails and the chain moves on (or gives up). */
  readonly onLinkFailed?: (link: ChainLink, err: unknown) => void
  /** Called for each "not ready" answer waited out. */
  readonly onNotReady?: (link: ChainLink) => void
  readonly onBytes: (from: 'source' | 'peer', n: number) => void
}

/** Local failures: another source would not cure them. */
const LOCAL_CODES = new Set(['RO_IO', 'RO_NO_SPACE', 'RO_ABORTED'])

/**
 * Downloads `entry` from the first link that delivers it whole and verified. A checksum or
 * size mismatch, a stall, an error or a refusal moves to the next link; a peer's "not ready"
 * is waited out with backoff, bounded, then the chain moves on. Checksums cover whole files
 * and two sources need not send the same bytes when one of them is wrong, so a change of
 * source starts the file over: `.part` bytes are resumed (with Range) from the source that
 * sent them only. Resolves with the origin of the bytes.
 */
export async function downloadFromChain(
  base: Omit<DownloadContext, 'source' | 'sourceDir' | 'onBytes'>,
  entry: FileEntry,
  links: readonly ChainLink[],
  policy: ChainPolicy,
): Promise<'source' | 'peer'> {
  const notReadyWaits = policy.notReadyWaits ?? 240
  let last: unknown
  for (const [i, link] of links.entries()) {
    if (i > 0) await rm(join(base.destDir, `${entry.name}.part`), { force: true })
    const ctx: DownloadContext = {
      ...base,
      source: link.source,
      sourceDir: link.dir,
      ...(link.from === 'peer' ? { retries: Math.min(base.retries, policy.peerRetries ?? 1), totalRetries: policy.peerRetries ?? 1 } : {}),
      onBytes: (n) => policy.onBytes(link.from, n),
    }
    for (let waits = 0; ;) {
      try {
        await downloadFile(ctx, entry)
        return link.from
      } catch (err) {
        if (base.signal.aborted) throw err
        if (err instanceof StoreError && LOCAL_CODES.has(err.code)) throw err
        if (err instanceof NotReadyError && waits < notReadyWaits) {
          waits++
          policy.onNotReady?.(link)
          // A short, even poll: the peer is fetching the file now, and a backoff would
          // overshoot its end by as long as it had already waited.
          await sleep(Math.min(NOT_READY_POLL_MS, backoffDelay(waits, base.backoff)), base.signal)
          continue
        }
        last = err
        policy.onLinkFailed?.(link, err)
        break
      }
    }
  }
  if (last === undefined) throw new StoreError('RO_FETCH_FAILED', `${entry.name}: no source to take it from`)
  const code = isStoreError(last, 'RO_CHECKSUM_MISMATCH') ? 'RO_CHECKSUM_MISMATCH' : 'RO_FETCH_FAILED'
  throw new StoreError(code, `${entry.name}: every source failed (${links.length}); the last: ${failureReason(last)}`, { cause: last })
}
