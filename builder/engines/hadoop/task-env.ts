import { randomBytes } from 'node:crypto'

/**
 * What a Streaming task learns from its environment. Hadoop exports every job setting to
 * the task's environment with each character other than [A-Za-z0-9] turned into '_':
 * mapreduce.task.attempt.id -> mapreduce_task_attempt_id, and so on. Older releases used
 * the mapred.* names, which are read as a fallback.
 */
export interface TaskEnv {
  /** Unique per attempt: names the attempt's private directory. */
  readonly attemptId: string
  /** The same for every attempt of one task: the map statistics key. */
  readonly taskId: string
  /** The map input file (text input); undefined outside a FileSplit map task. */
  readonly inputFile?: string
}

export function taskEnv(env: NodeJS.ProcessEnv = process.env): TaskEnv {
  const get = (...names: string[]): string | undefined => {
    for (const n of names) {
      const v = env[n]
      if (v !== undefined && v !== '') return v
    }
    return undefined
  }
  const attemptId = get('mapreduce_task_attempt_id', 'mapred_task_id') ?? `attempt_local_${process.pid}_${randomBytes(4).toString('hex')}`
  const taskId = get('mapreduce_task_id', 'mapred_tip_id') ?? taskOfAttempt(attemptId)
  return { attemptId, taskId, inputFile: get('mapreduce_map_input_file', 'map_input_file') }
}

/** attempt_<cluster>_<job>_<m|r>_<task>_<n> -> task_<cluster>_<job>_<m|r>_<task>. */
export function taskOfAttempt(attemptId: string): string {
  const m = /^attempt_(.+)_\d+$/.exec(attemptId)
  return m ? `task_${m[1]}` : attemptId
}

/**
 * A Streaming status line (stderr, "reporter:" prefix): shows in the task's status and
 * counts as progress while a commit keeps the task from reading input. Only under Hadoop.
 */
export function hadoopStatus(message: string): void {
  if (process.env['mapreduce_task_attempt_id'] !== undefined) process.stderr.write(`reporter:status:${message.replace(/\n/g, ' ')}\n`)
}
