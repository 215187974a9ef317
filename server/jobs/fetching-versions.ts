/**
 * The format-2 fetches under way on this node, by store and version: where their staging
 * directory is and which files they will hold. The peer file route serves a file of such
 * a fetch once it is there under its own name (the fetcher renames a file from `.part`
 * only once its checksum matched), so the replicas of a partition can take it from a node
 * that is still fetching others.
 */
export interface FetchingVersion {
  readonly dir: string
  /** The files the fetch will hold (its node view's), and manifest.json. */
  readonly names: ReadonlySet<string>
}

export class FetchingVersions {
  private readonly byKey = new Map<string, FetchingVersion>()

  /** Registers a fetch; the returned function removes it (the fetch ended, either way). */
  add(store: string, version: number, entry: FetchingVersion): () => void {
    const key = `${store}\n${version}`
    this.byKey.set(key, entry)
    return () => {
      if (this.byKey.get(key) === entry) this.byKey.delete(key)
    }
  }

  get(store: string, version: number): FetchingVersion | undefined {
    return this.byKey.get(`${store}\n${version}`)
  }
}
