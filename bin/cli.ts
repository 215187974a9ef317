#!/usr/bin/env node
import yargs from 'yargs'
import { hideBin } from 'yargs/helpers'
import { StoreError } from '../common/errors'
import { reportFailure } from './report-failure'

/** Thin CLI: every command lives in bin/commands/ as parse -> options -> library call. */
void yargs(hideBin(process.argv))
  .scriptName('rostore')
  // --version is a store version (build, push); the tool's own version is not needed there.
  .version(false)
  .commandDir('commands', { extensions: ['js'] })
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
