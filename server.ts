/**
 * `rostore/server`: run a serving node in this process (what `rostore serve` does).
 * Re-exports only.
 */
export { startNode, type NodeOptions, type NodeTimeouts, type RunningNode } from './server/node'
export { createLogger, nullLogger, type Logger } from './server/log'
