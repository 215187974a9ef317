// ESLint rule `rostore/no-import-cycle`: a module must not reach itself through its relative
// imports (type-only imports included: a cycle of types is still a concept in the wrong file).
// Written here rather than taken from eslint-plugin-import-x because that rule needs a
// TypeScript resolver package beside it and walks node_modules; ours follows only `./` and
// `../` specifiers to `.ts` files, which is the whole of this repository's convention.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/g

/** Relative imports of `file` resolved to .ts paths, read once per lint run. */
const edges = new Map()

function resolveTs(from, spec) {
  const base = resolve(dirname(from), spec)
  for (const candidate of [`${base}.ts`, `${base}/index.ts`]) if (existsSync(candidate)) return candidate
  return undefined
}

function parseImports(file, source) {
  const out = []
  for (const m of source.matchAll(SPECIFIER)) {
    const target = resolveTs(file, m[1] ?? m[2])
    if (target) out.push(target)
  }
  return out
}

/** Other modules are read from disk; the one being linted from its text (the editor's). */
function importsOf(file) {
  let out = edges.get(file)
  if (out) return out
  let source = ''
  try {
    source = readFileSync(file, 'utf8')
  } catch {
    // A module that cannot be read imports nothing here; the compiler reports it.
  }
  out = parseImports(file, source)
  edges.set(file, out)
  return out
}

/** A path of imports from `start` (whose own imports are `first`) back to `start`, or undefined. */
function cycleThrough(start, first) {
  const seen = new Set()
  const stack = [[start, [start]]]
  while (stack.length > 0) {
    const [file, path] = stack.pop()
    for (const next of file === start ? first : importsOf(file)) {
      if (next === start) return [...path, start]
      if (seen.has(next)) continue
      seen.add(next)
      stack.push([next, [...path, next]])
    }
  }
  return undefined
}

export const noImportCycle = {
  meta: { type: 'problem', docs: { description: 'no module reaches itself through its relative imports' }, schema: [] },
  create(context) {
    const file = context.filename
    return {
      Program() {
        const cycle = cycleThrough(file, parseImports(file, context.sourceCode.text))
        if (!cycle) return
        const root = context.cwd
        context.report({
          loc: { line: 1, column: 0 },
          message: `import cycle: ${cycle.map((f) => relative(root, f)).join(' -> ')}; move the shared piece to its own file`,
        })
      },
    }
  },
}
