/**
 * A stand-in for `hdfs dfs` over a local directory ($FAKE_HDFS_ROOT), with the semantics
 * rostore relies on: -mv never replaces an existing file, -put -f replaces through a
 * temporary name, -cat expands globs itself, -ls prints the usual columns. Run as
 * `node fake-hdfs-main.js dfs <command> ...` (tests put an `hdfs` wrapper on the PATH).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fakeHdfsLocal } from './fake-paths'

const root = process.env['FAKE_HDFS_ROOT']
if (!root) {
  process.stderr.write('FAKE_HDFS_ROOT is not set\n')
  process.exit(2)
}

function local(p: string): string {
  return fakeHdfsLocal(root!, p)
}

function fail(msg: string): never {
  process.stderr.write(`${msg}\n`)
  process.exit(1)
}

function glob(p: string): string[] {
  if (!p.includes('*')) return [p]
  const dir = p.slice(0, p.lastIndexOf('/'))
  const re = new RegExp(
    `^${p
      .slice(p.lastIndexOf('/') + 1)
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')}$`,
  )
  return existsSync(local(dir))
    ? readdirSync(local(dir))
        .filter((n) => re.test(n))
        .sort()
        .map((n) => `${dir}/${n}`)
    : []
}

const [sub, cmd, ...rest] = process.argv.slice(2)
if (sub !== 'dfs') fail(`fake hdfs: only "dfs" is supported, not ${sub}`)
const flags = rest.filter((a) => /^-[a-zA-Z]+$/.test(a))
const args = rest.filter((a) => !/^-[a-zA-Z]+$/.test(a))
let status = 0

switch (cmd) {
  case '-test': {
    const p = local(args[0]!)
    const ok = flags.includes('-d') ? existsSync(p) && statSync(p).isDirectory() : existsSync(p)
    process.exit(ok ? 0 : 1)
    break
  }
  case '-ls': {
    const p = local(args[0]!)
    if (!existsSync(p)) fail(`ls: \`${args[0]}': No such file or directory`)
    const isDir = statSync(p).isDirectory()
    const names = isDir ? readdirSync(p).sort() : [basename(p)]
    const base = isDir ? args[0]!.replace(/\/+$/, '') : dirname(args[0]!)
    if (isDir) process.stdout.write(`Found ${names.length} items\n`)
    for (const n of names) {
      const s = statSync(isDir ? join(p, n) : p)
      process.stdout.write(
        `${s.isDirectory() ? 'd' : '-'}rw-r--r--   1 tester supergroup ${String(s.isDirectory() ? 0 : s.size).padStart(10)} 2024-01-01 00:00 ${base}/${n}\n`,
      )
    }
    break
  }
  case '-mkdir':
    for (const a of args) mkdirSync(local(a), { recursive: true })
    break
  case '-put': {
    const dst = args[args.length - 1]!
    const srcs = args.slice(0, -1)
    const toDir = srcs.length > 1 || (existsSync(local(dst)) && statSync(local(dst)).isDirectory())
    for (const src of srcs) {
      const target = toDir ? join(local(dst), basename(src)) : local(dst)
      if (existsSync(target) && !flags.includes('-f')) fail(`put: \`${dst}': File exists`)
      copyFileSync(src, `${target}._COPYING_`)
      renameSync(`${target}._COPYING_`, target)
    }
    break
  }
  case '-mv': {
    const dst = args[args.length - 1]!
    const srcs = args.slice(0, -1)
    const toDir = existsSync(local(dst)) && statSync(local(dst)).isDirectory()
    for (const src of srcs) {
      const target = toDir ? join(local(dst), basename(src)) : local(dst)
      if (existsSync(target)) {
        process.stderr.write(`mv: \`${target}': File exists\n`)
        status = 1
        continue
      }
      renameSync(local(src), target)
    }
    break
  }
  case '-get':
    copyFileSync(local(args[0]!), args[1]!)
    break
  case '-cat':
    for (const a of args.flatMap(glob)) process.stdout.write(readFileSync(local(a)))
    break
  case '-rm':
    for (const a of args) {
      if (!existsSync(local(a)) && !flags.includes('-f')) fail(`rm: \`${a}': No such file or directory`)
      rmSync(local(a), { recursive: flags.includes('-r'), force: true })
    }
    break
  default:
    fail(`fake hdfs: unsupported command ${cmd}`)
}
process.exitCode = status
