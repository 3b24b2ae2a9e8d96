// ESLint for the TypeScript (type-aware: typescript-eslint's recommended checks with type
// information, from the tsconfig of each file) and the Node scripts (JavaScript's recommended
// checks only). Formatting is Prettier's job (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['out/', 'dist/', 'python/', '.venv/', 'node_modules/']),
  {
    files: ['extension/**/*.ts', 'tests/ts/**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A parameter a signature requires but the body does not use says so with a leading `_`.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // node:test's test() returns a promise the runner awaits itself.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
    },
  },
  {
    // Fakes implement async interfaces (Rpc, the provider's hooks) without awaiting anything.
    files: ['tests/ts/**/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
  },
);
