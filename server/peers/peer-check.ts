import type { Cluster, NodeTls } from '../../cluster/cluster'
import { errorMessage, isErrorCode, isStoreError, StoreError } from '../../common/errors'
import { isRedacted } from '../../common/redact'
import type { DataDir } from '../../swapper/data-dir'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { FetchRunner, PartitionRequest } from '../jobs/fetch-runner'
import type { Jobs } from '../jobs/jobs'
import type { Logger } from '../log'
import { namesNode } from '../../swapper/disk/push-record'
import { askPeer, newestRecords, type PeerRecords } from './peer-records'

export interface PeerCheckOptions {
  readonly nodeId: number
  readonly cluster: Cluster
  readonly dataDir: DataDir<ServingMirror>
  readonly jobs: Jobs
  /** How the node fetches a version (self-repair); without it, a behind store waits for a push. */
  readonly fetch?: FetchRunner
  /** This node's admin token, sent to the peers (the nodes of a cluster share it). */
  readonly adminToken?: string
  readonly log: Logger
  /** Ask the peers over HTTPS, checking their certificates so (a node serving TLS). */
  readonly peerTls?: NodeTls
  /** Per peer request. Default 3000 ms. */
  readonly timeoutMs?: number
  /**
   * While no peer has answered since the start, reads of the stores the node had stay
   * refused for this long (peers restarting at the same time come up meanwhile); after
   * it the node serves what it has and keeps asking. Default 30 s.
   */
  readonly graceMs?: number
  /** Fetch and swap a missed version without waiting for a push. Default true. */
  readonly selfRepair?: boolean
  /** First pause before asking the peers again, or retrying a repair; doubles up to 60 s. Default 2000 ms. */
  readonly retryMs?: number
}

/**
 * `pending`: no peer answered yet, within the grace period (reads of old stores refused).
 * `checked`: a peer answered. `unverified`: none did within the grace period; the node
 * serves what it has and keeps asking. `single-node`: no peers. `disabled`: no admin token
 * to ask them with.
 */
export type PeerCheckState = 'pending' | 'checked' | 'unverified' | 'single-node' | 'disabled'

export interface RepairStatus {
  readonly version: number
  readonly state: 'running' | 'waiting' | 'impossible' | 'done'
  readonly attempts: number
  /** The error code of the last failed attempt (the message goes to the node's log only). */
  readonly lastError?: string
  readonly at: string
}

const MAX_RETRY_MS = 60_000

/**
 * A node that (re)starts asks its peers, before it serves the stores it had, whether it
 * missed a push. The nodes that took a high-availability push keep
 * its record (swapper/disk/push-record.ts): the version and the nodes that missed it. A store
 * this node missed is refused (503, "behind") until the node has that version: it fetches
 * it from the push's source itself (self-repair) and swaps, or a new push brings it.
 *
 * When no peer answers, the node keeps refusing reads of the stores it had and asks again
 * for `graceMs` (a whole cluster restarting comes up meanwhile); then it serves what it
 * has (unless its own record says it is behind) and keeps asking, with a growing pause,
 * until one answers: see docs/RELIABILITY.md for why. Timers are unref'd and stop at
 * close().
 */
export class PeerCheck {
  private state: PeerCheckState = 'pending'
  private answered: number[] = []
  private checkedAt: string | undefined
  private closed = false
  private roundTimer: NodeJS.Timeout | undefined
  private roundDelay: number
  private startedAt = 0
  private readonly repairs = new Map<string, RepairStatus>()
  private readonly repairing = new Set<string>()
  private readonly repairTimers = new Map<string, NodeJS.Timeout>()
  private readonly repairDelay = new Map<string, number>()

  constructor(private readonly o: PeerCheckOptions) {
    this.roundDelay = o.retryMs ?? 2000
  }

  /**
   * The first round: every peer asked (each for at most timeoutMs), the stores decided if
   * one answered; never rejects. Without an answer, later rounds go on in the background.
   */
  async start(): Promise<void> {
    this.startedAt = Date.now()
    const without = this.peers().length === 0 ? 'single-node' : this.o.adminToken === undefined ? 'disabled' : undefined
    if (without) {
      this.state = without
      if (without === 'disabled') this.o.log.warn('peer-check-disabled', { reason: 'no admin token to ask the other nodes with' })
      await Promise.all(this.o.dataDir.all().map((sv) => sv.peersChecked()))
      this.repairAll()
      return
    }
    await this.round()
  }

  /** A push record was written here: repair the store if it says this node is behind. */
  onRecord(store: string): void {
    this.repair(store)
  }

  summary(): { state: PeerCheckState; peersAnswered: number[]; at: string | null } {
    return { state: this.state, peersAnswered: this.answered, at: this.checkedAt ?? null }
  }

  repairStatus(store: string): RepairStatus | undefined {
    return this.repairs.get(store)
  }

  close(): void {
    this.closed = true
    clearTimeout(this.roundTimer)
    for (const t of this.repairTimers.values()) clearTimeout(t)
  }

  /** Every peer may hold partitions of `version`: the fetch keeps those its manifest's layout gives them. */
  private partitionRequest(version: number, withSource: boolean): PartitionRequest {
    return { fetchFrom: withSource ? 'auto' : 'peers', peers: this.peers().map((n) => ({ nodeId: n.id, version })) }
  }

  private peers(): Cluster['nodes'] {
    return this.o.cluster.nodes.filter((n) => n.id !== this.o.nodeId)
  }

  private async round(): Promise<void> {
    const settled = await Promise.allSettled(
      this.peers().map((p) => askPeer(p, this.o.adminToken, this.o.timeoutMs ?? 3000, this.o.peerTls)),
    )
    const answers = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
    try {
      await this.apply(answers)
    } catch (err) {
      this.o.log.error('peer-check-failed', { error: errorMessage(err) })
    }
    this.checkedAt = new Date().toISOString()
    this.answered = answers.map((a) => a.nodeId)
    const graceLeft = this.startedAt + (this.o.graceMs ?? 30_000) - Date.now()
    if (answers.length > 0) {
      this.state = 'checked'
    } else if (this.state === 'pending' && graceLeft > 0) {
      // Peers restarting too may be a moment away: keep refusing, ask again soon.
      this.scheduleRound(graceLeft)
      this.o.log.warn('peer-check', { state: this.state, peersFailed: failures(settled), graceLeftMs: graceLeft })
      return
    } else if (this.state !== 'checked') {
      this.state = 'unverified'
      this.scheduleRound()
    }
    await Promise.all(this.o.dataDir.all().map((sv) => sv.peersChecked()))
    const behind = this.o.dataDir.all().flatMap((sv) => (sv.behind === undefined ? [] : [{ store: sv.store, version: sv.behind }]))
    this.o.log[answers.length > 0 ? 'info' : 'warn']('peer-check', {
      state: this.state,
      peersAnswered: this.answered,
      peersFailed: failures(settled),
      behind,
    })
    this.repairAll()
  }

  /** Keep every peer record newer than ours; create a store this node missed entirely. */
  private async apply(answers: readonly PeerRecords[]): Promise<void> {
    for (const [store, record] of newestRecords(answers)) {
      let sv = this.o.dataDir.get(store)
      if (!sv && namesNode(record, this.o.nodeId)) sv = await this.o.dataDir.getOrCreate(store)
      if (sv && (!sv.pushRecord || record.seq > sv.pushRecord.seq)) await sv.setPushRecord(record)
    }
  }

  private scheduleRound(atMost = MAX_RETRY_MS): void {
    if (this.closed) return
    clearTimeout(this.roundTimer)
    this.roundTimer = setTimeout(() => void this.round(), Math.min(this.roundDelay, atMost)).unref()
    this.roundDelay = Math.min(this.roundDelay * 2, MAX_RETRY_MS)
  }

  private repairAll(): void {
    for (const sv of this.o.dataDir.all()) if (sv.behind !== undefined) this.repair(sv.store)
  }

  private repair(store: string): void {
    if (this.closed || this.repairing.has(store) || this.o.selfRepair === false) return
    this.repairing.add(store)
    clearTimeout(this.repairTimers.get(store))
    void this.repairOnce(store).finally(() => this.repairing.delete(store))
  }

  /** Fetch the missed version from the push's source (unless present), then swap to it. */
  private async repairOnce(store: string): Promise<void> {
    const sv = this.o.dataDir.get(store)
    const version = sv?.behind
    const record = sv?.pushRecord
    if (!sv || version === undefined || !record) return
    const attempts = (this.repairs.get(store)?.version === version ? (this.repairs.get(store)?.attempts ?? 0) : 0) + 1
    const set = (state: RepairStatus['state'], lastError?: string): void => {
      this.repairs.set(store, { version, state, attempts, at: new Date().toISOString(), ...(lastError ? { lastError } : {}) })
    }
    const fetch = this.o.fetch
    const have = sv.versions().includes(version)
    const source = record.source !== undefined && !isRedacted(record.source) ? record.source : undefined
    // Format 2: every partition is on the peers that hold it, so the build output may be gone.
    const fromPeers = record.partitioned === true
    if (!have && (fetch === undefined || (source === undefined && !fromPeers))) {
      set(
        'impossible',
        'the push record names no source this node can fetch from (none, or one whose credentials were removed); push again',
      )
      this.o.log.warn('repair-impossible', { store, version })
      return
    }
    set('running')
    this.o.log.info('repair-started', { store, version, fetch: !have })
    try {
      const job = this.o.jobs.start(
        'repair',
        store,
        async ({ signal, progress }) => {
          const fetched = have
            ? undefined
            : await fetch!({
                sv,
                ...(source === undefined ? {} : { source }),
                ...(fromPeers ? { partitions: this.partitionRequest(version, source !== undefined) } : {}),
                version,
                signal,
                onProgress: progress,
              })
          // A newer push may have come while this one fetched: swap only to what is still wanted.
          if (sv.behind !== version) return { ...fetched, swapped: false }
          return { ...fetched, swapped: true, swap: await sv.swap(version) }
        },
        version,
      )
      const done = await this.o.jobs.wait(job.id)
      if (done.state !== 'succeeded') {
        throw new StoreError(isErrorCode(done.error?.code) ? done.error.code : 'RO_FETCH_FAILED', done.error?.message ?? done.state)
      }
      set('done')
      this.o.log.info('repaired', { store, version, behind: sv.behind ?? null })
      this.repairDelay.delete(store)
    } catch (err) {
      if (this.closed) return
      const delay = this.repairDelay.get(store) ?? this.o.retryMs ?? 2000
      this.repairDelay.set(store, Math.min(delay * 2, MAX_RETRY_MS))
      set('waiting', isStoreError(err) ? err.code : 'RO_INTERNAL')
      this.o.log.warn('repair-failed', { store, version, attempts, error: errorMessage(err), retryInMs: delay })
      // Ask the peers again first: a newer push may have changed what this node should hold.
      this.repairTimers.set(store, setTimeout(() => void this.round(), delay).unref())
    }
  }
}

function failures(settled: readonly PromiseSettledResult<unknown>[]): string[] {
  return settled.flatMap((s) => (s.status === 'rejected' ? [errorMessage(s.reason)] : []))
}
