import type { Argv } from 'yargs'
import { runQuickstart } from '../../demo/quickstart'

export const command = 'demo'
export const describe = 'Quick start: a 3-node cluster on loopback; build, push, read, push v2, roll back, stop'

export const builder = (y: Argv) => y.option('keep', { type: 'boolean', default: false, describe: 'keep the work directory' })

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  await runQuickstart({ keep: a.keep })
}
