import type { DataDir } from '../../swapper/data-dir'
import type { ServingMirror } from '../../swapper/serving-mirror'
import type { StoreVersions } from '../../swapper/store-versions'

/**
 * A store comes into being with its first installed version. Install and fetch jobs run
 * inside `use`: the store is created (its directory made) when the first of them needs
 * it, and when the last one for a store ends with nothing installed, the store is dropped
 * again (DataDir.dropIfEmpty), so a failed fetch of a new store leaves no empty store for
 * `/stores` to list forever. Jobs meeting a drop in progress wait for it, then create the
 * store afresh.
 */
export class StoreCreation {
  private readonly users = new Map<string, number>()
  private readonly dropping = new Map<string, Promise<unknown>>()

  constructor(private readonly dataDir: DataDir<ServingMirror>) {}

  async use<T>(store: string, fn: (sv: StoreVersions<ServingMirror>) => Promise<T>): Promise<T> {
    this.users.set(store, (this.users.get(store) ?? 0) + 1)
    try {
      await this.dropping.get(store)
      return await fn(await this.dataDir.getOrCreate(store))
    } finally {
      const left = (this.users.get(store) ?? 1) - 1
      if (left > 0) this.users.set(store, left)
      else {
        this.users.delete(store)
        const drop = this.dataDir
          .dropIfEmpty(store)
          .catch(() => false)
          .finally(() => this.dropping.delete(store))
        this.dropping.set(store, drop)
        await drop
      }
    }
  }
}
