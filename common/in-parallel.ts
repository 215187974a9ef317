/**
 * Runs `work` over `items`, `concurrency` at a time; after a failure no new item starts, and
 * the first failure is thrown once every started one has settled (so a cleanup after it
 * races nothing: a directory removed while a write into it runs would fail and hide it).
 */
export async function inParallel<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let first: { err: unknown } | undefined
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (first === undefined && next < items.length) {
        const item = items[next++] as T
        try {
          await work(item)
        } catch (err) {
          first ??= { err }
        }
      }
    }),
  )
  if (first !== undefined) throw first.err
}
