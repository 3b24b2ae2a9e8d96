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
    // The code the Show Usage page runs (extension/webview/) and the code it shares with the
    // extension (extension/shared/) run in a webview, where there is no `vscode` module: they import
    // neither it nor the extension's other modules (the generated contract's types excepted).
    files: ['extension/shared/**/*.ts', 'extension/webview/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'A webview has no vscode module (extension/shared/ and extension/webview/).' }],
          patterns: [
            {
              regex: '^\\.\\./(?!contract$|shared/)',
              message: 'extension/shared/ and extension/webview/ import only each other and ../contract: they run in a webview.',
            },
          ],
        },
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
  {
    // The bench takes the tests' code from one module, bench/from-tests.cjs, which names each file.
    files: ['bench/**'],
    ignores: ['bench/from-tests.cjs'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)(tests|out)/', message: "The bench takes the tests' code from bench/from-tests.cjs only." }] },
      ],
    },
  },
);
