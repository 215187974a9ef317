import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../../common/paths'
import { makeTmp } from '../../../testkit/stores/tmp'

/**
 * The package as a user gets it: `npm pack`, install the tarball into a fresh project, then
 * import every entry by name from ESM and from CommonJS, check that the reader entry loads
 * no build or server dependency, type-check the README's API example verbatim (extracted
 * from README.md here, so the two cannot drift), and run the installed CLI.
 */
const ROOT = packageRoot(__dirname)
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 })
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string }
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`, { cause: err })
  }
}

/** The ```ts block of the README's "TypeScript API" section. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## TypeScript API'))
  const m = /```ts\n([\s\S]*?)```/.exec(section)
  if (!m) throw new Error('README.md has no ```ts block under "## TypeScript API"')
  return m[1] as string
}

describe('npm pack, installed into a fresh project', () => {
  const tmp = makeTmp('rostore-pack-')
  let project: string

  beforeAll(() => {
    const packed = join(tmp.dir, 'packed')
    mkdirSync(packed)
    run(NPM, ['pack', '--pack-destination', packed, '--silent'], ROOT)
    const tarball = readdirSync(packed).find((f) => f.endsWith('.tgz'))
    if (!tarball) throw new Error('npm pack wrote no tarball')
    project = join(tmp.dir, 'app')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    run(NPM, ['install', '--no-audit', '--no-fund', '--prefer-offline', join(packed, tarball)], project)
  }, 900_000)

  afterAll(() => tmp.cleanup())

  test('the tarball holds the library, not the tests or benchmarks', () => {
    const pkg = join(project, 'node_modules', 'rostore')
    const top = readdirSync(pkg).sort()
    expect(top).toEqual(expect.arrayContaining(['lib', 'package.json', 'README.md']))
    expect(top).not.toContain('dist')
    expect(readdirSync(join(pkg, 'lib'))).not.toEqual(expect.arrayContaining(['test']))
    for (const d of ['test', 'bench', 'testkit']) expect(readdirSync(join(pkg, 'lib'))).not.toContain(d)
    for (const f of ['index.d.ts', 'build.d.ts', 'server.d.ts']) expect(readdirSync(join(pkg, 'lib'))).toContain(f)
    // What operators install beside the node (docs/DEPLOY.md).
    for (const f of ['systemd/rostore.service', 'prometheus/rostore-rules.yml', 'grafana/rostore.json'])
      expect(readdirSync(join(pkg, 'deploy', f, '..'))).toContain(f.split('/')[1])
    // The console's page, script and style ship as they are: no build step for users.
    expect(readdirSync(join(pkg, 'ui')).sort()).toEqual(['console.css', 'console.js', 'index.html'])
  })

  test('every entry imports by name from ESM and from CommonJS', () => {
    const check = `
      const expectFn = (m, names) => { for (const n of names) if (typeof m[n] !== 'function') throw new Error(n + ' is ' + typeof m[n]) }
      expectFn(main, ['openStore', 'StoreClient', 'pushStore', 'rollbackCluster', 'clusterVersions', 'loadCluster', 'parseCluster', 'StoreError', 'isStoreError'])
      if (!Array.isArray(main.ERROR_CODES) || !main.ERROR_CODES.includes('RO_CORRUPT')) throw new Error('ERROR_CODES')
      expectFn(build, ['buildStore', 'verifyStore', 'readInput'])
      expectFn(server, ['startNode', 'createLogger'])
      console.log('entries ok')`
    writeFileSync(
      join(project, 'esm.mjs'),
      `import * as main from 'rostore'\nimport * as build from 'rostore/build'\nimport * as server from 'rostore/server'\nimport { openStore } from 'rostore'\nif (typeof openStore !== 'function') throw new Error('named import')\n${check}\n`,
    )
    writeFileSync(
      join(project, 'cjs.cjs'),
      `const main = require('rostore')\nconst build = require('rostore/build')\nconst server = require('rostore/server')\n${check}\n`,
    )
    expect(run(process.execPath, ['esm.mjs'], project)).toContain('entries ok')
    expect(run(process.execPath, ['cjs.cjs'], project)).toContain('entries ok')
  })

  test('importing rostore loads no Arrow, Parquet, prom-client or S3 module', () => {
    writeFileSync(
      join(project, 'deps.cjs'),
      `require('rostore')\nconsole.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('node_modules'))))\n`,
    )
    const loaded = JSON.parse(run(process.execPath, ['deps.cjs'], project)) as string[]
    expect(loaded.length).toBeGreaterThan(0)
    for (const banned of ['apache-arrow', 'parquet', 'hyparquet', 'prom-client', 'yargs', 'cli-progress', 'aws4']) {
      expect(loaded.filter((p) => p.includes(`/node_modules/${banned}`))).toEqual([])
    }
    // The S3 client is loaded when an s3:// URL is first used, never by the reader entry.
    expect(loaded.filter((p) => /\/node_modules\/rostore\/lib\/s3\/(?!s3-url)/.test(p))).toEqual([])
  })

  test("the README's API example type-checks against the published declarations", () => {
    writeFileSync(join(project, 'api-example.mts'), readmeExample())
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: ['api-example.mts'],
      }),
    )
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
    expect(run(process.execPath, [tsc, '-p', 'tsconfig.json'], project)).toBe('')
  })

  test('the installed CLI runs', () => {
    const out = run(process.execPath, [join(project, 'node_modules', '.bin', 'rostore'), '--help'], project)
    expect(out).toMatch(/rostore build/)
    expect(out).toMatch(/serve/)
  })
})
