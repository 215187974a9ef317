import { setPriority } from 'node:os'
import { nativeFunctions } from './native'

/**
 * The priority a node's job threads (verify, patch rebuilds) run at beside its reads
 * (`rostore serve --job-priority`). 'low': nice 10 and the idle I/O class, so the kernel
 * gives the cores and the disk to the serving threads first and the jobs the rest;
 * 'normal': as every other thread. Native side: native/io/job-priority.c.
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

/**
 * For a job worker thread as it starts: lowers itself (nice and I/O class with the addon,
 * else its nice value only) when its process runs jobs low. Best effort: a thread that may
 * not change its priority runs the job at the priority it has.
 */
export function lowerIfJobThread(): void {
  if (process.env[JOB_PRIORITY_ENV] !== 'low') return
  const native = nativeFunctions()
  if (native) {
    native.lowerThreadPriority(JOB_NICE, IO_CLASS_IDLE, 0)
    return
  }
  try {
    // Linux: setpriority(PRIO_PROCESS, 0) applies to the calling thread.
    setPriority(0, JOB_NICE)
  } catch {
    // Not allowed here (a sandbox): the job runs at the thread's priority.
  }
}
