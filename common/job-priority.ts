import { setPriority } from 'node:os'
import { errorMessage } from './errors'
import { nativeFunctions } from './native'

/**
 * The priority a node's jobs (fetch, verify, install, patch rebuilds) run at beside its
 * reads (`rostore serve --job-priority`). 'low': their threads get nice 10 and the idle
 * I/O class, so the kernel gives the cores and the disk to the serving threads first and
 * the jobs the rest; 'normal': as every other thread. Native side: native/io/job-priority.c.
 */
export const JOB_PRIORITIES = ['low', 'normal'] as const
export type JobPriority = (typeof JOB_PRIORITIES)[number]

/**
 * Set to 'low' in the environment of a process whose job threads run low: a job worker
 * thread (verify, patch) reads it when it starts and lowers itself (threads inherit the
 * environment, and a layer that starts them need not know the node's options).
 */
export const JOB_PRIORITY_ENV = 'ROSTORE_JOB_PRIORITY'

const JOB_NICE = 10
const IO_CLASS_IDLE = 3

/** What lowering changed: the threads, and whether their I/O class too (the addon) or only their nice value. */
export interface PriorityChange {
  readonly threads: number
  readonly io: boolean
  readonly error?: string
}

/**
 * Lowers the calling thread ('self') or every thread of the process but the main one
 * ('others'). Without the addon only the calling thread's nice value can be changed.
 */
export function lowerThreadPriorities(which: 'self' | 'others'): PriorityChange {
  const native = nativeFunctions()
  if (native) {
    const r = native.lowerThreadPriorities(JOB_NICE, IO_CLASS_IDLE, 0, which === 'self')
    return r >= 0 ? { threads: r, io: true } : { threads: 0, io: false, error: `errno ${-r}` }
  }
  if (which === 'others') return { threads: 0, io: false, error: 'the native addon is not loaded' }
  try {
    // Linux: setpriority(PRIO_PROCESS, 0) applies to the calling thread.
    setPriority(0, JOB_NICE)
    return { threads: 1, io: false }
  } catch (err) {
    return { threads: 0, io: false, error: errorMessage(err) }
  }
}

/** For a job worker thread as it starts: lowers itself when its process runs jobs low. */
export function lowerIfJobThread(): void {
  if (process.env[JOB_PRIORITY_ENV] === 'low') lowerThreadPriorities('self')
}
