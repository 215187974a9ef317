import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packageRoot } from '../../../common/paths'

/**
 * The folder READMEs' "may import" rules are enforced by the lint that `npm test` runs
 * (eslint.config.mjs). Linted here as text under real source paths (the ESLint CLI on
 * stdin, in its own process: the config is an ES module): an upward import is refused,
 * the same import where it is allowed is not. The same run checks the import-cycle rule.
 */
const ROOT = packageRoot(__dirname)
/** One ESLint process lints every case (its config is an ES module, which jest cannot load). */
const LINT_CASES = `
const { ESLint } = require('eslint')
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'))
const eslint = new ESLint({ cwd: process.cwd() })
;(async () => {
  const out = []
  for (const [file, code] of cases) {
    const [r] = await eslint.lintText(code, { filePath: require('path').join(process.cwd(), file) })
    out.push(r.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'rostore/no-import-cycle').map((m) => m.message))
  }
  console.log(JSON.stringify(out))
})()
`

function restricted(cases: readonly (readonly [string, string])[]): string[][] {
  const r = spawnSync(process.execPath, ['-e', LINT_CASES], { cwd: ROOT, input: JSON.stringify(cases), encoding: 'utf8', timeout: 300_000 })
  if (r.status !== 0) throw new Error(`eslint run exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout) as string[][]
}

const UPWARD: readonly (readonly [string, string, RegExp])[] = [
  [
    'formats/store/layout/layout.ts',
    "import { startNode } from '../../../server/node'\nexport const x = startNode\n",
    /formats\/ may import only common, s3, cluster/,
  ],
  [
    'swapper/disk/version-names.ts',
    "import { startNode } from '../../server/node'\nexport const x = startNode\n",
    /swapper\/ may import only common, formats/,
  ],
  [
    'common/bytes.ts',
    "import { chunkOf } from '../formats/store/layout/layout'\nexport const x = chunkOf\n",
    /common\/ may import only Node built-ins/,
  ],
  [
    'server/jobs/jobs.ts',
    "import { pushStore } from '../../client/push/push-store'\nexport const x = pushStore\n",
    /server\/ may import only/,
  ],
]
const ALLOWED: readonly (readonly [string, string])[] = [
  ['bin/commands/serve.ts', "import { startNode } from '../../server/node'\nexport const x = startNode\n"],
  ['server/jobs/jobs.ts', "import { chunkOf } from '../../formats/store/layout/layout'\nexport const x = chunkOf\n"],
]

describe('layers point one way (eslint no-restricted-imports per folder)', () => {
  let found: string[][]
  beforeAll(() => {
    found = restricted([...UPWARD.map(([f, c]) => [f, c] as const), ...ALLOWED])
  }, 300_000)

  test.each(UPWARD.map((u, i) => [u[0], i, u[2]] as const))('%s importing upwards fails the lint', (_file, i, message) => {
    // An upward import usually closes a cycle too; this case is about the layer message.
    const layer = found[i]!.filter((m) => !m.startsWith('import cycle'))
    expect(layer).toHaveLength(1)
    expect(layer[0]).toMatch(message)
  })

  test('the same kind of import where the layering allows it passes', () => {
    for (let i = UPWARD.length; i < UPWARD.length + ALLOWED.length; i++) expect(found[i]).toEqual([])
  })
})

/** A module that imports one that imports it back, and the same file as it is in the tree. */
const CYCLE: readonly [string, string] = ['client/push/events.ts', "import { pushStore } from './push-store'\nexport const x = pushStore\n"]
const NO_CYCLE: readonly [string, string] = ['client/push/events.ts', readFileSync(join(ROOT, 'client', 'push', 'events.ts'), 'utf8')]

describe('no import cycles (eslint rostore/no-import-cycle)', () => {
  let found: string[][]
  beforeAll(() => {
    found = restricted([CYCLE, NO_CYCLE])
  }, 300_000)

  test('a module reaching itself through its imports fails the lint, naming the path', () => {
    expect(found[0]).toHaveLength(1)
    expect(found[0]![0]).toMatch(/import cycle: client\/push\/events\.ts -> client\/push\/push-store\.ts -> client\/push\/events\.ts/)
  })

  test('the module as it is in the tree passes', () => {
    expect(found[1]).toEqual([])
  })
})
