#!/usr/bin/env node
// Builds the native addon (binding.gyp -> build/Release/rostore_native.node) during
// `npm ci` / `npm install`. A failed build is not fatal: the package still installs and
// readers use the pread fallback; this script then prints one line saying so (the full
// compiler output is kept in build/native-build.log). Plain JavaScript because it runs
// before the TypeScript is compiled.
'use strict'
const { spawnSync } = require('node:child_process')
const { existsSync, mkdirSync, writeFileSync } = require('node:fs')
const { dirname, join } = require('node:path')

const root = join(__dirname, '..')
const say = (line) => process.stderr.write(`rostore: ${line}\n`)

if (process.env.ROSTORE_NATIVE === '0') {
  say('ROSTORE_NATIVE=0: native addon not built; stores are read with pread')
  process.exit(0)
}

function nodeGyp() {
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp)) return process.env.npm_config_node_gyp
  try {
    return require.resolve('node-gyp/bin/node-gyp.js')
  } catch {
    // The copy bundled with npm, when this runs outside an npm script.
    const bundled = join(dirname(dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
    return existsSync(bundled) ? bundled : undefined
  }
}

const gyp = nodeGyp()
if (!gyp) {
  say('native addon not built (node-gyp not found); stores are read with pread (see native/README.md)')
  process.exit(0)
}
const args = [gyp, 'rebuild']
// Headers installed beside this node (distribution packages, nodesource, official
// tarballs) are used as they are, so no download is needed; otherwise node-gyp fetches
// the headers of this Node version itself.
const prefix = dirname(dirname(process.execPath))
if (!process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${prefix}`)
const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 })
mkdirSync(join(root, 'build'), { recursive: true })
writeFileSync(join(root, 'build', 'native-build.log'), `${args.join(' ')}\n\n${r.stdout ?? ''}\n${r.stderr ?? ''}\n`)
if (r.status === 0 && existsSync(join(root, 'build', 'Release', 'rostore_native.node'))) {
  say('native addon built: stores are memory-mapped')
} else {
  const lines = `${r.stderr ?? ''}${r.error ? r.error.message : ''}`.split('\n').filter((l) => /error/i.test(l))
  const reason = (lines[0] ?? `node-gyp exited with ${r.status}`).trim().slice(0, 200)
  say(`native addon not built (${reason}); stores are read with pread. Details: build/native-build.log, native/README.md`)
}
