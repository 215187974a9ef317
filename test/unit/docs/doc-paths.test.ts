import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { packageRoot } from '../../../common/paths'

/**
 * Docs that match the code: every repository path the documentation names (in backticks
 * or as a link) exists. A file moved or renamed without its docs fails here.
 */
const ROOT = packageRoot(__dirname)
const TOP = new Set(readdirSync(ROOT).filter((n) => !['node_modules', 'dist', 'lib', '.git'].includes(n)))
/** Folders made at run time (gitignored): named by the docs, absent in a fresh clone. */
const RUNTIME = ['bench/work/']

/** Paths in `code spans` and [links](target) that start at a top-level entry of the repository. */
function namedPaths(text: string): string[] {
  const found = new Set<string>()
  for (const m of text.matchAll(/`([^`\n]+)`/g)) {
    const token = (m[1] as string).trim()
    if (/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+\/?$/.test(token) && TOP.has(token.split('/')[0] as string)) found.add(token)
  }
  return [...found]
}

function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f))
  const readmes = [...TOP].filter((d) => existsSync(join(ROOT, d, 'README.md'))).map((d) => join(d, 'README.md'))
  return ['README.md', ...docs, ...readmes]
}

describe.each(markdownFiles())('%s', (file) => {
  const text = readFileSync(join(ROOT, file), 'utf8')

  test('every repository path it names exists', () => {
    const missing = namedPaths(text).filter((p) => !existsSync(join(ROOT, p)) && !RUNTIME.some((r) => p.startsWith(r)))
    expect(missing).toEqual([])
  })

  test('every relative link points at a file that exists', () => {
    const missing: string[] = []
    for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      const target = m[1] as string
      if (/^[a-z]+:/.test(target)) continue
      if (!existsSync(join(ROOT, dirname(file), target))) missing.push(target)
    }
    expect(missing).toEqual([])
  })
})
