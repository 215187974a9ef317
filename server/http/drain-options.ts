/** How a listener stops taking connections at shutdown. */
export interface DrainOptions {
  /**
   * The listener is shared through node:cluster's primary (a serving worker). Closing it
   * first is then no way to refuse connections: the primary accepts until every worker has
   * closed, and a connection it hands to a worker that has just closed waits in the primary
   * with nowhere to go until the node exits. So a shared listener stays open while the
   * drain runs and resets every connection that arrives meanwhile; the caller closes it
   * (closeListener) once every listener of the process has drained. Closing each as its own
   * drain ends is not enough: an idle RESP listener would close while an HTTP request still
   * holds the process, and when that makes it the node's last, the race above is open for
   * the whole drain.
   */
  readonly shared?: boolean
}
