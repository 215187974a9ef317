// Lint: typescript-eslint's recommended rules with type information (for
// no-floating-promises and friends), and the folder READMEs' "may import" rules as
// no-restricted-imports per folder, so the layers point one way.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import { noImportCycle } from './tools/eslint-no-import-cycle.mjs'

// What each folder may import (the folder READMEs say why): a layer never imports one above it.
const ALL = [
  'common',
  's3',
  'cluster',
  'formats',
  'builder',
  'fetcher',
  'swapper',
  'server',
  'client',
  'bin',
  'demo',
  'testkit',
  'bench',
  'test',
]
const MAY_IMPORT = {
  common: [],
  s3: ['common'],
  cluster: ['common'],
  formats: ['common', 's3', 'cluster'],
  builder: ['common', 's3', 'cluster', 'formats'],
  fetcher: ['common', 's3', 'cluster', 'formats'],
  swapper: ['common', 'formats'],
  server: ['common', 'cluster', 'formats', 'fetcher', 'swapper'],
  client: ['common', 's3', 'cluster', 'formats', 'fetcher'],
  demo: ['common', 's3', 'cluster', 'formats', 'builder', 'fetcher', 'swapper', 'server', 'client'],
  bin: ['common', 's3', 'cluster', 'formats', 'builder', 'fetcher', 'swapper', 'server', 'client', 'demo'],
  testkit: ['common', 's3', 'cluster', 'formats', 'builder', 'fetcher', 'swapper', 'server', 'client', 'bin', 'demo'],
  bench: ['common', 's3', 'cluster', 'formats', 'builder', 'fetcher', 'swapper', 'server', 'client', 'bin', 'demo', 'testkit'],
}
const layerRules = Object.entries(MAY_IMPORT).map(([folder, allowed]) => ({
  files: [`${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: ALL.filter((f) => f !== folder && !allowed.includes(f)).map((f) => ({
          group: [`**/${f}/**`, `**/${f}`],
          message: `${folder}/ may import only ${allowed.join(', ') || 'Node built-ins and npm libraries'} (see ${folder}/README.md)`,
        })),
      },
    ],
  },
}))

export default tseslint.config(
  { ignores: ['dist/**', 'lib/**', 'node_modules/**', 'bench/work/**', '.build/**', 'build/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
      // Untyped or optional modules (a peer that may be missing is reported, not fatal).
      '@typescript-eslint/no-require-imports': [
        'error',
        { allow: ['^aws4$', '^lmdb$', '^better-sqlite3$', '^hyparquet(/src/[a-z]+\.js)?$'] },
      ],
    },
  },
  // Test files may close a loop through the module they test; product code and bench may not.
  {
    files: ['**/*.ts'],
    ignores: ['test/**'],
    plugins: { rostore: { rules: { 'no-import-cycle': noImportCycle } } },
    rules: { 'rostore/no-import-cycle': 'error' },
  },
  ...layerRules,
)
