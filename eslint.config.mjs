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
    // Token counting on the extension's side (extension/counts/, rfcs/0001 "Folders"): Copilot's walk
    // asks thousands of counts one at a time, so nothing on its path reads VS Code's API by itself (a read
    // of vscode.lm.tools per count made a walk cost 175–290 ms, rfcs/0004). What the folder needs of
    // VS Code (the tools, the keychain, the log) is handed in by provider.ts and extension.ts; it
    // imports `vscode` for types only, and of the extension only the leaves it stands on.
    files: ['extension/counts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'extension/counts/ takes what it needs of VS Code from its callers.', allowTypeImports: true }],
          patterns: [
            {
              regex: '^\\.\\./(?!(contract|config|bounded|storage|saved|sidecar/rpc)$)',
              message: 'extension/counts/ imports of the extension only contract, config, bounded, storage, saved and the Rpc seam.',
            },
            { regex: '^\\.\\./sidecar/rpc$', allowTypeImports: true, message: 'extension/counts/ asks the sidecar through the Rpc it is handed.' },
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
    // The real-host tests pass functions to Playwright's page.waitForFunction and evaluate, which run
    // them in the workbench's page: there they read the page's `document` and `window`.
    files: ['tests/e2e/**'],
    languageOptions: { globals: { ...globals.node, document: 'readonly', window: 'readonly' } },
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
