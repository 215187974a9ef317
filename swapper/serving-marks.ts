import { errorMessage } from '../common/errors'
import type { SwapLogger } from './events'
import type { ServingMirror } from './serving-mirror'
import { expectedVersion, readPushRecord, writePushRecord, type PushRecord } from './disk/push-record'
import { clearStaleMark, readStaleMark, writeStaleMark, type StaleMark } from './disk/stale-mark'

/**
 * Why reads of one store are refused (503), if they are, in this order:
 * 1. the STALE mark an operator (or an older rostore's push) set, kept on disk;
 * 2. the startup hold: the node has not asked its peers yet whether it missed a push;
 * 3. "behind": the last push record (push-record.ts) says this node missed a push of a
 *    version it does not serve. Computed from the record and the
 *    live version, so it ends by itself when the node swaps to that version or a newer
 *    record (a later push, a rollback) no longer names it.
 * StoreVersions owns one and serializes the writes.
 */
export class ServingMarks {
  private staleMark: StaleMark | undefined
  private record: PushRecord | undefined
  private hold: StaleMark | undefined
  /** The refusal last sent to the serving side, to send only changes. */
  private published: StaleMark | undefined

  constructor(
    private readonly storeDir: string,
    private readonly store: string,
    private readonly nodeId: number | undefined,
    private readonly log: SwapLogger,
  ) {}

  /** Reads STALE and PUSH; with `holdForPeers`, reads are refused until peersChecked(). */
  async load(holdForPeers: boolean): Promise<void> {
    this.staleMark = await readStaleMark(this.storeDir)
    try {
      this.record = await readPushRecord(this.storeDir)
    } catch (err) {
      // The peers' records replace it; until then this node cannot tell whether it is behind.
      this.log.error('push-record-unreadable', { store: this.store, error: errorMessage(err) })
    }
    if (holdForPeers)
      this.hold = { reason: 'starting: asking the other nodes whether this node missed a push', since: new Date().toISOString() }
  }

  stale(live: number | undefined): StaleMark | undefined {
    if (this.staleMark) return this.staleMark
    if (this.hold) return this.hold
    const behind = this.behind(live)
    if (behind === undefined || !this.record) return undefined
    return {
      reason:
        `behind: version ${behind} went live on the other nodes while this node missed the push (${this.record.at}); ` +
        `this node has ${live === undefined ? 'no live version' : `version ${live}`} until it gets it`,
      since: this.record.at,
    }
  }

  /** The version this node should serve by the last push record, when it serves another one. */
  behind(live: number | undefined): number | undefined {
    const expected = expectedVersion(this.record, this.nodeId, live)
    return expected !== undefined && expected !== live ? expected : undefined
  }

  get pushRecord(): PushRecord | undefined {
    return this.record
  }

  /** Set or clear (undefined) the operator's STALE mark, durably. */
  async setStale(reason: string | undefined): Promise<StaleMark | undefined> {
    if (reason === undefined) {
      await clearStaleMark(this.storeDir)
      this.staleMark = undefined
    } else {
      this.staleMark = await writeStaleMark(this.storeDir, reason)
    }
    return this.staleMark
  }

  /** Keep `record` durably if it is newer (higher seq); returns whether it is now the record. */
  async setPushRecord(record: PushRecord): Promise<boolean> {
    if (this.record && record.seq < this.record.seq) return false
    if (this.record && record.seq === this.record.seq && JSON.stringify(record) === JSON.stringify(this.record)) return true
    await writePushRecord(this.storeDir, record)
    this.record = record
    return true
  }

  peersChecked(): void {
    this.hold = undefined
  }

  /** Tell the serving side why reads are refused with `live` serving, when that changed. */
  async publish(live: number | undefined, serving: ServingMirror): Promise<void> {
    const stale = this.stale(live)
    if (JSON.stringify(stale) === JSON.stringify(this.published)) return
    await serving.setStale(stale)
    this.published = stale
  }
}
