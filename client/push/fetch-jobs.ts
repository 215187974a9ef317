import { StoreError, isStoreError } from '../../common/errors'
import type { ClusterAdmin } from '../cluster-admin'
import { isConnectionRefused } from '../http'
import type { NodeClient, RemoteFetchBody, RemoteJob } from '../node-client'
import type { PushEvent } from './events'

/** The fetch jobs of a push on the nodes: waiting for them, polling patiently, cancelling. */

export async function holdsVersion(admin: ClusterAdmin, id: number, store: string, version: number): Promise<boolean> {
  try {
    return (await admin.node(id).versions(store)).versions.some((v) => v.version === version)
  } catch {
    return false
  }
}

/**
 * Fetches the push's version on one node. A fetch of the store already running there (the
 * job of a push whose process died) is waited for first: if it brings this version, the
 * node fetches nothing again. Returns the finished job, or undefined when the node had
 * the version from that earlier fetch.
 */
export async function fetchOnNode(
  admin: ClusterAdmin,
  id: number,
  o: {
    store: string
    body: RemoteFetchBody & { readonly version: number }
    deadline: number
    pollMs: number
    emit: (e: PushEvent) => void
    signal: AbortSignal
  },
): Promise<RemoteJob | undefined> {
  const node = admin.node(id)
  const running = (await node.jobs()).filter((j) => j.kind === 'fetch' && j.store === o.store && j.state === 'running')
  for (const j of running) {
    o.emit({ type: 'step', message: `node ${id} is still fetching ${o.store} for an earlier push; waiting for it` })
    await waitForJob(admin, id, j, o.deadline, o.pollMs, o.emit, o.signal).catch(() => undefined)
  }
  if (running.length > 0 && (await holdsVersion(admin, id, o.store, o.body.version))) return undefined
  const job = await node.startFetch(o.store, o.body)
  return waitForJob(admin, id, job, o.deadline, o.pollMs, o.emit, o.signal)
}

/** Polls a node's fetch job until it ends; past the deadline, cancels it. */
export async function waitForJob(
  admin: ClusterAdmin,
  id: number,
  job: RemoteJob,
  deadline: number,
  pollMs: number,
  emit: (e: PushEvent) => void,
  signal: AbortSignal,
): Promise<RemoteJob> {
  const node = admin.node(id)
  let j = job
  while (j.state === 'running') {
    if (Date.now() > deadline || signal.aborted) {
      await node.cancelJob(j.id).catch(() => undefined)
      // Wait for the cancellation to finish, so the node has removed its partial copy.
      for (let i = 0; i < 100 && j.state === 'running'; i++) {
        await new Promise((r) => setTimeout(r, 50))
        j = await node.job(j.id).catch(() => ({ ...j, state: 'cancelled' as const }))
      }
      throw new StoreError(
        signal.aborted ? 'RO_ABORTED' : 'RO_FETCH_FAILED',
        signal.aborted
          ? `node ${id}: fetch cancelled because another node failed`
          : `node ${id}: fetch did not finish before the push timeout`,
      )
    }
    // A long poll: the node answers when the fetch ends, so the push learns it then, not up
    // to a poll period later. A node that answers at once (from before long polls) is asked
    // again after the poll period, not in a loop.
    const asked = Date.now()
    j = await pollJob(node, j, deadline, Math.min(LONG_POLL_MS, Math.max(0, deadline - asked)))
    const early = pollMs - (Date.now() - asked)
    if (j.state === 'running' && early > 0) await new Promise((r) => setTimeout(r, early))
    const p = j.progress
    if (p && typeof p.bytesDone === 'number')
      emit({ type: 'progress', nodeId: id, bytesDone: p.bytesDone, bytesTotal: p.bytesTotal ?? 0, rate: p.rateBytesPerSec ?? 0 })
  }
  if (j.state !== 'succeeded')
    throw new StoreError('RO_FETCH_FAILED', `node ${id}: fetch ${j.state}: ${j.error?.message ?? 'no reason given'}`)
  return j
}

/** The longest a node holds a job poll (it answers at once when the job ends); progress events come at least this often. */
const LONG_POLL_MS = 1000

/** How long a push keeps polling a job that the node does not answer about. */
const POLL_FAILURE_GRACE_MS = 60_000

/**
 * One poll of a running job. A poll is idempotent: a node that is slow to answer, or
 * resets the connection (a node busy for seconds closes its idle keep-alive connections
 * as it catches up), is asked again with a growing pause, for up to a minute, instead of
 * failing a push whose fetch is going fine. A node that refuses the
 * connection is down, and its job with it: that fails at once.
 */
async function pollJob(node: NodeClient, j: RemoteJob, deadline: number, waitMs: number): Promise<RemoteJob> {
  const giveUp = Math.min(Date.now() + POLL_FAILURE_GRACE_MS, deadline)
  for (let pause = 100; ; pause = Math.min(pause * 2, 5000)) {
    try {
      return await node.job(j.id, waitMs)
    } catch (err) {
      if (!isStoreError(err, 'RO_UNAVAILABLE') || isConnectionRefused(err) || Date.now() + pause > giveUp) throw err
      await new Promise((r) => setTimeout(r, pause))
    }
  }
}
