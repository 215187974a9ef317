import type { ArgumentsCamelCase, Argv } from 'yargs'
import { errorMessage, isStoreError } from '../../common/errors'
import { createLogger } from '../../server/log'
import { startNode } from '../../server/node'
import { serveFlags } from '../serve-options'
import { nodeOptionsOf, serveArgs, type ServeArgs } from '../serve-settings'

export const command = 'serve'
export const describe = 'Serve the stores of one node over HTTP, with atomic swap and rollback of versions'

export function builder(y: Argv): Argv<ServeArgs> {
  return serveFlags(y) as unknown as Argv<ServeArgs>
}

/** Runs until SIGTERM/SIGINT; then drains and exits (0 when everything drained in time). */
export async function handler(parsed: ArgumentsCamelCase<ServeArgs>): Promise<void> {
  const argv = await serveArgs(parsed)
  const log = createLogger()
  // Signals are handled from the start: one arriving while stores are still being
  // recovered and opened stops the node as soon as it is up.
  let signals = 0
  let stopRequested: (() => void) | undefined
  const stopSignal = new Promise<void>((resolve) => (stopRequested = resolve))
  const onSignal = (signal: NodeJS.Signals): void => {
    signals++
    if (signals > 1) {
      log.warn('shutdown-forced', { signal })
      process.exit(1)
    }
    log.info('signal', { signal })
    stopRequested?.()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)

  let node
  try {
    const certFile = argv['tls-cert']
    const keyFile = argv['tls-key']
    node = await startNode({ ...(await nodeOptionsOf(argv)), log })
    const running = node
    if (certFile !== undefined && keyFile !== undefined) {
      // Certificate rotation: new connections get the new files; a bad file keeps the old ones.
      process.on('SIGHUP', () => {
        running.reloadTls(certFile, keyFile).then(
          () => log.info('tls-reloaded', { cert: certFile }),
          (err: unknown) => log.error('tls-reload-failed', { error: errorMessage(err) }),
        )
      })
    }
  } catch (err) {
    log.error('start-failed', { code: isStoreError(err) ? err.code : undefined, error: errorMessage(err) })
    process.exit(1)
  }
  await stopSignal
  let drained = false
  try {
    drained = await node.close()
  } catch (err) {
    log.error('shutdown-failed', { error: errorMessage(err) })
  }
  process.exit(drained ? 0 : 1)
}
