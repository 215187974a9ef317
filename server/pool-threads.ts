/**
 * Threads of the libuv pool a serving process asks for when UV_THREADPOOL_SIZE is not set.
 * A cold read waits on a pool thread for one device read (formats/store/read/residency.ts), so
 * the pool's size is the most cold reads a process has in flight: Node's default of 4
 * keeps an SSD far below its queue depth. libuv reads the variable when the pool starts,
 * so it is set in a worker's environment at fork, and by the CLI before any pool work.
 * (libuv's io_uring, UV_USE_IO_URING=1, is left as Node sets it: measured on the
 * benchmark VM, its polling threads made a node's cold reads slower, section 4g.)
 */
export const SERVING_POOL_THREADS = 16

/** The environment a serving process is started with: UV_THREADPOOL_SIZE unless the caller set it. */
export function servingPoolEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return env['UV_THREADPOOL_SIZE'] ? {} : { UV_THREADPOOL_SIZE: String(SERVING_POOL_THREADS) }
}
