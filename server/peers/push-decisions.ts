import { join } from 'node:path'
import { StoreError, errorMessage } from '../../common/errors'
import type { DataDir } from '../../swapper/data-dir'
import {
  readDecisionState,
  writeDecisionState,
  type DecisionEntry,
  type DecisionState,
  type Outcome,
  type PreparedPush,
} from '../../swapper/disk/push-decision'
import { SerialQueue } from '../../swapper/serial-queue'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { Logger } from '../log'

/** One push as a node answers about it (GET /admin/stores/<s>/decisions/<push>). */
export interface VoteView {
  readonly pushId: string
  readonly version: number | null
  readonly vote: Outcome | null
  readonly outcome: Outcome | null
  /** This node prepared for it and has not applied its outcome yet. */
  readonly prepared: boolean
}

/**
 * A node's side of the push decisions (swapper/disk/push-decision.ts, docs/RELIABILITY.md §4):
 * prepares, write-once votes, and the outcome applied by the node itself: commit swaps to
 * the version (and keeps the push record), abort removes a version fetched for the push.
 * Every change of a store's state runs in that store's queue and is on disk before it is
 * answered.
 */
export class PushDecisions {
  private readonly states = new Map<string, DecisionState>()
  private readonly queues = new Map<string, SerialQueue>()
  /** Versions fetched under a push lease and not prepared yet (memory only: a restart keeps them as backups). */
  private readonly fetchedUnder = new Map<string, { store: string; lease: string; version: number }>()

  constructor(private readonly o: { dataDir: DataDir<ServingMirror>; log: Logger }) {}

  /** Loads every store's state; the stores with a prepared push to finish. */
  async load(): Promise<string[]> {
    const pending: string[] = []
    for (const sv of this.o.dataDir.all()) {
      try {
        if ((await this.state(sv.store)).prepared) pending.push(sv.store)
      } catch (err) {
        this.o.log.error('push-decisions-unreadable', { store: sv.store, error: errorMessage(err) })
      }
    }
    return pending
  }

  /** Stores whose state is in memory (every store with a prepared push is). */
  loadedStores(): string[] {
    return [...this.states.keys()]
  }

  /** The prepared push of a store, as last loaded (undefined when none or not loaded). */
  prepared(store: string): PreparedPush | undefined {
    return this.states.get(store)?.prepared
  }

  async view(store: string): Promise<DecisionState> {
    return this.state(store)
  }

  async voteView(store: string, pushId: string): Promise<VoteView> {
    const st = await this.state(store)
    const e = st.decisions.find((d) => d.pushId === pushId)
    const prepared = st.prepared?.pushId === pushId
    return {
      pushId,
      version: e?.version ?? (prepared ? st.prepared!.version : null),
      vote: e?.vote ?? null,
      outcome: e?.outcome ?? null,
      prepared,
    }
  }

  /** Records that this node holds the push's version, verified, and waits for the decision. */
  async prepare(store: string, p: PreparedPush): Promise<PreparedPush> {
    const sv = this.o.dataDir.get(store)
    if (!sv?.versions().includes(p.version)) throw new StoreError('RO_NOT_FOUND', `store ${store} has no version ${p.version} to prepare`)
    return this.queue(store).run(async () => {
      const st = await this.state(store)
      const decided = st.decisions.find((d) => d.pushId === p.pushId)
      if (decided?.outcome !== undefined) throw new StoreError('RO_CONFLICT', `push ${p.pushId} is decided already: ${decided.outcome}`)
      if (st.prepared && st.prepared.pushId !== p.pushId)
        throw new StoreError(
          'RO_CONFLICT',
          `push ${st.prepared.pushId} of store ${store} is prepared and not decided yet; the nodes are finishing it`,
        )
      await this.save(store, { ...st, prepared: p })
      this.o.log.info('push-prepared', { store, pushId: p.pushId, version: p.version, participants: p.participants })
      return p
    })
  }

  /**
   * Writes this node's vote if it has none (first write wins; a vote never changes) and,
   * with `outcome`, what the cluster decided, then applies it. Answers what the node holds.
   */
  async decide(store: string, pushId: string, version: number, vote: Outcome, outcome?: Outcome): Promise<VoteView> {
    const sv = this.o.dataDir.get(store)
    if (!sv) throw new StoreError('RO_NOT_FOUND', `no store ${store} on this node`)
    return this.queue(store).run(async () => {
      const st = await this.state(store)
      const held = st.decisions.find((d) => d.pushId === pushId)
      if (held && held.version !== version)
        throw new StoreError('RO_CONFLICT', `push ${pushId} is for version ${held.version}, not ${version}`)
      if (held?.outcome !== undefined && outcome !== undefined && held.outcome !== outcome)
        throw new StoreError('RO_CONFLICT', `push ${pushId} was decided ${held.outcome} here`)
      // A node votes commit only for a version it holds; any node may vote abort.
      const canVote = held?.vote === undefined && (vote === 'abort' || sv.versions().includes(version))
      const entry: DecisionEntry = {
        pushId,
        version,
        ...(held?.vote !== undefined ? { vote: held.vote } : canVote ? { vote } : {}),
        ...((held?.outcome ?? outcome) !== undefined ? { outcome: held?.outcome ?? outcome } : {}),
        at: held?.at ?? new Date().toISOString(),
      }
      if (entry.vote !== held?.vote || entry.outcome !== held?.outcome) {
        await this.save(store, { ...st, decisions: [...st.decisions.filter((d) => d !== held), entry] })
        this.o.log.info('push-vote', { store, pushId, version, vote: entry.vote ?? null, outcome: entry.outcome ?? null })
      }
      if (entry.outcome !== undefined) await this.apply(store, entry)
      return this.voteView(store, pushId)
    })
  }

  /** The outcome on this node: commit swaps (or rolls back) to the version, abort drops a version fetched for the push. */
  private async apply(store: string, e: DecisionEntry): Promise<void> {
    const st = await this.state(store)
    const p = st.prepared
    const sv = this.o.dataDir.get(store)
    if (!p || p.pushId !== e.pushId || !sv) return
    if (e.outcome === 'commit') {
      if (sv.liveVersion !== p.version) {
        if (p.kind === 'rollback' && sv.liveVersion !== undefined) await sv.rollback(p.version)
        else await sv.swap(p.version)
      }
      await sv.setPushRecord({ version: p.version, missed: p.missed, ...(p.source ? { source: p.source } : {}), seq: p.seq, at: p.at })
    } else if (p.fetched && sv.liveVersion !== p.version && sv.versions().includes(p.version)) {
      await sv.deleteVersion(p.version)
    }
    await this.save(store, { ...st, prepared: undefined })
    this.o.log.info('push-decided', { store, pushId: e.pushId, version: p.version, outcome: e.outcome })
  }

  /** A fetch under `lease` brought `version`: it is removed if the lease ends and the push never used it. */
  noteFetched(store: string, lease: string, version: number): void {
    this.fetchedUnder.set(`${store}\0${version}`, { store, lease, version })
  }

  /**
   * Removes the versions that pushes whose process died fetched and never prepared, once
   * no push holds the store: the push's files would otherwise stay on disk for good.
   */
  async dropUnused(holder: (store: string) => string | undefined): Promise<void> {
    for (const [k, f] of this.fetchedUnder) {
      const owner = holder(f.store)
      if (owner === f.lease) continue
      if (owner !== undefined) continue
      this.fetchedUnder.delete(k)
      const sv = this.o.dataDir.get(f.store)
      const st = await this.state(f.store).catch(() => undefined)
      if (!sv || !st || st.prepared || sv.liveVersion === f.version || !sv.versions().includes(f.version)) continue
      if (st.decisions.some((d) => d.version === f.version && d.outcome === 'commit')) continue
      await this.queue(f.store)
        .run(() => sv.deleteVersion(f.version))
        .catch(() => undefined)
      this.o.log.info('unused-fetch-removed', { store: f.store, version: f.version, lease: f.lease })
    }
  }

  private async state(store: string): Promise<DecisionState> {
    let st = this.states.get(store)
    if (!st) {
      st = await readDecisionState(join(this.o.dataDir.dir, store))
      this.states.set(store, st)
    }
    return st
  }

  private async save(store: string, st: DecisionState): Promise<void> {
    await writeDecisionState(join(this.o.dataDir.dir, store), st)
    this.states.set(store, st)
  }

  private queue(store: string): SerialQueue {
    let q = this.queues.get(store)
    if (!q) this.queues.set(store, (q = new SerialQueue()))
    return q
  }
}
