import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { AddressBook, MAX_ADDRESSES, parseNodeAddresses, type NodeAddress } from '../../cluster/address-book'
import type { Cluster } from '../../cluster/cluster'
import { errorMessage, isStoreError, StoreError } from '../../common/errors'
import { fsyncDir } from '../../common/fs-durable'

/** In the data directory: the nodes learned after the cluster file, `{"nodes": [...]}`. */
export const LEARNED_NODES_FILE = 'cluster-nodes.json'

/**
 * The node's address book: the cluster file, then the nodes kept in `cluster-nodes.json`
 * (a learned id that the cluster file lists now keeps the file's address). A missing file is
 * an empty one; a broken one stops the node with RO_BAD_CLUSTER naming it (it is written
 * whole or not at all, so a broken one was edited by hand).
 */
export async function openAddressBook(cluster: Cluster, dataDir: string): Promise<AddressBook> {
  const book = new AddressBook(cluster)
  const path = join(dataDir, LEARNED_NODES_FILE)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return book
    throw new StoreError('RO_IO', `${path}: cannot read: ${errorMessage(err)}`, { cause: err })
  }
  try {
    book.learn(parseNodeAddresses(JSON.parse(text), path), 'keep')
  } catch (err) {
    throw new StoreError('RO_BAD_CLUSTER', `${path}: ${isStoreError(err) ? err.message : `not valid JSON: ${errorMessage(err)}`}`, {
      cause: err,
    })
  }
  return book
}

/**
 * Learning node addresses at run time (`POST /admin/cluster/nodes`): checks them against
 * the book, writes the learned set durably (temp file, fsync, rename, fsync of the
 * directory), and only then adds them to the book and tells the serving workers. One
 * request at a time, so two never write the file out of order.
 */
export class NodeLearning {
  private queue: Promise<unknown> = Promise.resolve()
  private readonly listeners: ((book: AddressBook) => Promise<unknown>)[] = []

  constructor(
    readonly book: AddressBook,
    private readonly dataDir: string,
  ) {}

  /** Called after every change, before the request is answered (a supervisor fans out to its workers). */
  onLearned(listener: (book: AddressBook) => Promise<unknown>): void {
    this.listeners.push(listener)
  }

  learn(addrs: readonly NodeAddress[]): Promise<NodeAddress[]> {
    const run = this.queue.then(async () => {
      const fresh = this.book.unknown(addrs, 'refuse')
      if (fresh.length === 0) return fresh
      // The learned set is bounded as one request is: repeated requests cannot grow it forever.
      const learned = this.book.learned().length
      if (learned + fresh.length > MAX_ADDRESSES) {
        throw new StoreError(
          'RO_TOO_LARGE',
          `the node knows ${learned} learned nodes; ${fresh.length} more would pass the limit of ${MAX_ADDRESSES}`,
        )
      }
      await this.save([...this.book.learned(), ...fresh])
      this.book.learn(fresh, 'refuse')
      for (const l of this.listeners) await l(this.book)
      return fresh
    })
    this.queue = run.catch(() => undefined)
    return run
  }

  private async save(nodes: readonly NodeAddress[]): Promise<void> {
    await mkdir(this.dataDir, { recursive: true })
    const path = join(this.dataDir, LEARNED_NODES_FILE)
    const tmp = `${path}.tmp-${process.pid}`
    try {
      const fh = await open(tmp, 'w')
      try {
        await fh.writeFile(`${JSON.stringify({ nodes: [...nodes].sort((a, b) => a.id - b.id) }, null, 2)}\n`)
        await fh.sync()
      } finally {
        await fh.close()
      }
      await rename(tmp, path)
      await fsyncDir(this.dataDir)
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined)
      // The public message names the file, not the directory.
      throw new StoreError('RO_IO', `cannot write ${LEARNED_NODES_FILE}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {
        cause: err,
      })
    }
  }
}
