// Lint: typescript-eslint's recommended rules with type information (for
// no-floating-promises and friends), and the folder READMEs' "may import" rules as
// no-restricted-imports per folder, so the layers point one way.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/work/**', '.build/**', 'build/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
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
      '@typescript-eslint/no-require-imports': ['error', { allow: ['^lmdb$', '^better-sqlite3$', '^hyparquet(/src/[a-z]+\.js)?$'] }],
    },
  },
)
