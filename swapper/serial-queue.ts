/**
 * Runs async changes one at a time, in the order they were queued. A failed change does
 * not block the ones after it (each caller gets its own result or error).
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve()

  /** Run `fn` after every change queued before it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn)
    this.tail = run.catch(() => undefined)
    return run
  }

  /** The promise of the last queued change (settles when the queue is empty for now). */
  get last(): Promise<unknown> {
    return this.tail
  }
}
