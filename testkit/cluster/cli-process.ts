import { spawn, type ChildProcess } from 'node:child_process'
import { cliPath } from '../../common/paths'

/**
 * A `rostore` CLI child process (push, rollback, unlock, versions...), as a user would run
 * it: stdout and stderr kept whole, `kill9()` to kill it mid-way, `done` for its exit.
 * The admin token travels in the environment, never on the command line.
 */
export class CliProcess {
  readonly child: ChildProcess
  stdout = ''
  stderr = ''
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>

  constructor(args: readonly string[], opts: { token?: string; env?: Readonly<Record<string, string>> } = {}) {
    const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env }
    delete env.ROSTORE_ADMIN_TOKEN
    if (opts.token !== undefined) env.ROSTORE_ADMIN_TOKEN = opts.token
    this.child = spawn(process.execPath, [cliPath(), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    this.child.stdout?.setEncoding('utf8').on('data', (t: string) => (this.stdout += t))
    this.child.stderr?.setEncoding('utf8').on('data', (t: string) => (this.stderr += t))
    this.done = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })))
  }

  /** Runs a command to its end. */
  static async run(
    args: readonly string[],
    opts: { token?: string; env?: Readonly<Record<string, string>> } = {},
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const p = new CliProcess(args, opts)
    const { code } = await p.done
    return { code, stdout: p.stdout, stderr: p.stderr }
  }

  async kill9(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL')
    await this.done
  }
}
