#!/usr/bin/env node
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import yargs from 'yargs'
import { hideBin } from 'yargs/helpers'
import { StoreError } from '../common/errors'
import { servingPoolEnv } from '../server/pool-threads'
import { reportFailure } from './report-failure'

/**
 * Loading every command costs about 0.3 s of start-up (each pulls in its part of the
 * library) and a run names one: only that one is loaded. Help, no command or an unknown
 * name load them all (for the command list and "did you mean").
 */
function onlyCommand(args: readonly string[]): RegExp | undefined {
  const name = args[0]
  if (name === undefined || !/^[a-z]+$/.test(name)) return undefined
  return existsSync(join(__dirname, 'commands', `${name}.js`)) ? new RegExp(`[\\\\/]${name}\\.js$`) : undefined
}

/** Thin CLI: every command lives in bin/commands/ as parse -> options -> library call. */
const args = hideBin(process.argv)
// Before anything uses the libuv pool (server/pool-threads.ts says why).
if (args[0] === 'serve') Object.assign(process.env, servingPoolEnv())
void yargs(args)
  .scriptName('rostore')
  // --version is a store version (build, push); the tool's own version is not needed there.
  .version(false)
  .commandDir('commands', { extensions: ['js'], include: onlyCommand(args) ?? /\.js$/ })
  .demandCommand(1, 'name a command; see rostore --help')
  .strict()
  .recommendCommands()
  .help()
  .wrap(Math.min(110, process.stdout.columns || 100))
  .fail((msg, err) => {
    // yargs wraps what an option's coerce throws (integer-option.ts) in a YError: a usage error.
    if (err?.name === 'YError') return reportFailure(new StoreError('RO_BAD_OPTION', err.message))
    if (err) return reportFailure(err)
    process.stderr.write(`rostore: ${msg}\n(see rostore --help)\n`)
    process.exit(2)
  })
  .parseAsync()
  .catch(reportFailure)
