/** What the in-process lookup benchmark needs of every engine. */
export interface Getter {
  get(key: string): Buffer | Uint8Array | undefined | null
  /** Index entries compared by the last get (rostore only). */
  probes?(): number
  close(): void
}
