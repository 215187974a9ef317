/**
 * Fault injection for the crash-recovery tests: when the environment variable
 * ROSTORE_CRASH_AT names a point, the process kills itself with SIGKILL when it reaches
 * that point (the same as `kill -9` at exactly that moment). Unset in production, where
 * every call is one string comparison.
 *
 * Points: install:staged, install:verified, install:renamed, swap:opened,
 * pointer:temp-written, pointer:renamed, swap:flipped, retention:trashed, delete:trashed.
 */
export const CRASH_POINTS = [
  'install:staged',
  'install:verified',
  'install:renamed',
  'swap:opened',
  'pointer:temp-written',
  'pointer:renamed',
  'swap:flipped',
  'retention:trashed',
  'delete:trashed',
] as const
export type CrashPointName = (typeof CRASH_POINTS)[number]

const target = process.env.ROSTORE_CRASH_AT

export function crashPoint(name: CrashPointName): void {
  if (crashPointArmed(name)) {
    process.stderr.write(`${JSON.stringify({ ts: new Date().toISOString(), level: 'warn', event: 'crash-point', point: name })}\n`)
    process.kill(process.pid, 'SIGKILL')
  }
}

/** Whether the process is set to crash at `name` (for work that must stop right there, done in one native call). */
export function crashPointArmed(name: CrashPointName): boolean {
  return target !== undefined && target === name
}
