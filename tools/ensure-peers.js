#!/usr/bin/env node
/**
 * `npm test`'s pretest step: make sure the real peers the tests use are on this machine,
 * installing what is missing when it can, or stopping at once with the exact command to
 * run. Plain JavaScript (it runs before the TypeScript build).
 *
 * - Debian packages: nginx (the static file server fetches pull from), redis-server and
 *   redis-tools (redis-cli and real Redis clients against the RESP port), prometheus
 *   (prometheus and promtool: the shipped rules, a real server scraping a cluster),
 *   python3-redis (redis-py, for the system python3, against the RESP port), systemd
 *   (systemd-analyze verify of the shipped unit) and chromium (the console's browser
 *   tests). Installed with
 *   apt-get when running as root; the distribution's own services are kept from starting
 *   (policy-rc.d), since tests start their own instances on free ports.
 * - The native addon (native/, built by `npm ci`): when it is missing because the C
 *   toolchain was, the toolchain is installed (build-essential) and the addon built, so
 *   the tests run the memory-mapped reader as users get it.
 * - Python: a project-local virtual environment `.venv/` with the packages of
 *   tools/python-requirements.txt (independent Arrow/Parquet writers, the Ray engine).
 *
 * ROSTORE_SKIP_PEERS=1 skips all of it (a developer who runs a subset of tests).
 */
'use strict'
const { spawnSync } = require('node:child_process')
const { existsSync, readFileSync, writeFileSync, unlinkSync } = require('node:fs')
const { join } = require('node:path')

const ROOT = join(__dirname, '..')
const DEBIAN = [
  { command: 'nginx', paths: ['/usr/sbin/nginx'], pkg: 'nginx' },
  { command: 'redis-server', paths: ['/usr/bin/redis-server'], pkg: 'redis-server' },
  { command: 'redis-cli', paths: ['/usr/bin/redis-cli'], pkg: 'redis-tools' },
  { command: 'prometheus', paths: ['/usr/bin/prometheus'], pkg: 'prometheus' },
  { command: 'promtool', paths: ['/usr/bin/promtool'], pkg: 'prometheus' },
  { command: 'systemd-analyze', paths: ['/usr/bin/systemd-analyze'], pkg: 'systemd' },
  // A Python module, not a command: redis-py for the system python3 (/usr/bin/python3).
  { command: null, paths: ['/usr/lib/python3/dist-packages/redis/__init__.py'], pkg: 'python3-redis' },
  // The console's browser tests drive a real headless Chromium (puppeteer-core).
  { command: 'chromium', paths: ['/usr/bin/chromium'], pkg: 'chromium' },
]

function has(command, paths) {
  if (paths.some((p) => existsSync(p))) return true
  if (command === null) return false
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0
}

function stop(message) {
  process.stderr.write(`\nnpm test cannot run here yet: ${message}\n\n`)
  process.exit(1)
}

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } })
  return r.status === 0
}

function ensureDebian() {
  const missing = [...new Set(DEBIAN.filter((d) => !has(d.command, d.paths)).map((d) => d.pkg))]
  if (missing.length === 0) return
  const command = `apt-get update && apt-get install -y ${missing.join(' ')}`
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  if (!root || !has('apt-get', ['/usr/bin/apt-get'])) stop(`missing Debian packages ${missing.join(', ')}. Run:\n\n  sudo ${command}`)
  process.stderr.write(`pretest: installing ${missing.join(', ')} with apt-get\n`)
  // Keep the packages' services from starting: tests run their own instances.
  const policy = '/usr/sbin/policy-rc.d'
  const ownPolicy = !existsSync(policy)
  if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 })
  try {
    const env = { DEBIAN_FRONTEND: 'noninteractive' }
    if (!run('apt-get', ['update', '-qq'], env) || !run('apt-get', ['install', '-y', '-qq', ...missing], env)) {
      stop(`apt-get could not install ${missing.join(', ')}. Run:\n\n  ${command}`)
    }
  } finally {
    if (ownPolicy) unlinkSync(policy)
  }
}

function ensureAddon() {
  if (process.env.ROSTORE_NATIVE === '0' || existsSync(join(ROOT, 'build', 'Release', 'rostore_native.node'))) return
  const tools = [
    { command: 'cc', paths: ['/usr/bin/cc'] },
    { command: 'make', paths: ['/usr/bin/make'] },
    { command: 'python3', paths: ['/usr/bin/python3'] },
  ]
  const missing = tools.filter((t) => !has(t.command, t.paths))
  if (missing.length > 0) {
    const root = typeof process.getuid === 'function' && process.getuid() === 0
    const command = 'apt-get update && apt-get install -y build-essential python3 && npm rebuild rostore || node native/install.js'
    if (!root) stop(`the native addon is not built (no ${missing.map((t) => t.command).join(', ')}). Run:\n\n  sudo ${command}`)
    process.stderr.write('pretest: installing build-essential for the native addon\n')
    const env = { DEBIAN_FRONTEND: 'noninteractive' }
    if (!run('apt-get', ['update', '-qq'], env) || !run('apt-get', ['install', '-y', '-qq', 'build-essential', 'python3'], env))
      stop(`apt-get failed. Run:\n\n  ${command}`)
  }
  process.stderr.write('pretest: building the native addon\n')
  run(process.execPath, [join(ROOT, 'native', 'install.js')])
  if (!existsSync(join(ROOT, 'build', 'Release', 'rostore_native.node'))) {
    stop('the native addon did not build: see build/native-build.log (or set ROSTORE_NATIVE=0 to test the pread fallback only)')
  }
}

function ensurePython() {
  const file = join(__dirname, 'python-requirements.txt')
  const wanted = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter(Boolean)
  if (wanted.length === 0) return
  const venv = join(ROOT, '.venv')
  const python = join(venv, 'bin', 'python')
  const base = process.env.ROSTORE_PYTHON || 'python3'
  if (!existsSync(python)) {
    if (!has(base, [])) stop(`no ${base}. Install Python 3.11 (Debian: apt-get install -y python3 python3-venv)`)
    if (!run(base, ['-m', 'venv', venv]))
      stop(`${base} -m venv failed. Run:\n\n  apt-get install -y python3-venv && ${base} -m venv ${venv}`)
  }
  const probe =
    'import importlib.metadata as m, re, sys\nfor r in sys.argv[1:]:\n    try: m.version(re.split(r"[<>=!~\\[ ]", r, maxsplit=1)[0])\n    except m.PackageNotFoundError: print(r)'
  const r = spawnSync(python, ['-c', probe, ...wanted], { encoding: 'utf8' })
  const missing = (r.stdout || '').split('\n').filter(Boolean)
  if (missing.length === 0) return
  process.stderr.write(`pretest: pip-installing ${missing.join(', ')} into .venv\n`)
  if (!run(python, ['-m', 'pip', 'install', '--quiet', '--retries', '1', '--timeout', '15', ...missing])) {
    stop(`pip could not install ${missing.join(', ')}. Run:\n\n  ${python} -m pip install ${missing.join(' ')}`)
  }
}

if (process.env.ROSTORE_SKIP_PEERS !== '1') {
  ensureDebian()
  ensureAddon()
  ensurePython()
}
