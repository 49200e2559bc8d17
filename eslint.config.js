// ESLint with the rules that need TypeScript's type checker, for what they catch in an actor
// runtime: a floating or misused promise is a lost message, and a switch over a union that
// misses a case is a message nobody handles. Formatting is prettier's.
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'data-cluster/'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // A `default` that hands the remaining cases to another exhaustive switch counts as handling
      // them (http/s3/errors.ts does this per group of codes).
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/await-thenable': 'error',
    },
  },
)
