/**
 * Schedules retention (deleting versions beyond the kept ones) off the caller's path.
 * Requests for it while one runs are coalesced into one more pass; nothing sleeps.
 */
export class RetentionScheduler {
  private running: Promise<void> | undefined
  private again = false

  constructor(
    /** One pass: wait for readers of replaced versions, then delete what is beyond retention. */
    private readonly pass: () => Promise<void>,
    private readonly stopped: () => boolean,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Run a pass soon (after the current tick), or once more after the running one. */
  schedule(): void {
    if (this.running) {
      this.again = true
      return
    }
    this.running = new Promise<void>((resolve) => setImmediate(resolve))
      .then(async () => {
        do {
          this.again = false
          await this.pass()
        } while (this.again && !this.stopped())
      })
      .catch(this.onError)
      .finally(() => {
        this.running = undefined
      })
  }

  /** The running pass, if any. */
  get current(): Promise<void> | undefined {
    return this.running
  }
}
