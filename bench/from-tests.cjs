// The tests' code the bench runs on, and the one place bench/ takes it from (eslint keeps the rest of
// bench/ off tests/ and out/). Each file named here says in its header that the bench imports it:
// it stays free of node:test and assert, and a change to what it exports is a change to the bench.
// Loaded when asked for, so that a section that needs none of it does not pay for its imports (the
// bench measures its own process).
'use strict';
const path = require('node:path');

// tests/ts compiled by `npx tsc -p tests/ts` (`make bench` runs it first).
const OUT = path.join(__dirname, '../out/tests/ts');

module.exports = {
  /** tests/ts/vscode-stub.ts: the `vscode` classes and enum values bench/vscode.cjs is built on. */
  vscodeStub: () => require(path.join(OUT, 'vscode-stub.js')),
  /** tests/ts/bridge.ts: the doubles of VS Code's BYOK bridge and of Copilot's editor path (bench/harness.mjs). */
  bridge: () => require(path.join(OUT, 'bridge.js')),
  /** tests/e2e/host.mjs: the fake gateway, code-server with the VSIX and Chromium (bench/soak-host.mjs). */
  realHost: () => import('../tests/e2e/host.mjs'),
};
