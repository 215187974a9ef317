import type { Argv } from 'yargs'
import { builder as pushBuilder, handler as pushHandler } from './push'

export const command = 'repair'
export const describe =
  'Bring stale nodes (after a push with --allow-failed-nodes) up to a build: push it again; nodes that hold it skip the fetch'

export const builder = (y: Argv) => pushBuilder(y)

export async function handler(a: Awaited<ReturnType<typeof builder>['argv']>): Promise<void> {
  await pushHandler(a)
}
