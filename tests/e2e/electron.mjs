// The API tests (tests/e2e/api-tests/) in VS Code desktop, on the OS this runs on: what
// tests/e2e/api.mjs runs in code-server on Linux, run in the real VS Code build of each runner of
// .github/workflows/test.yml, downloaded and launched by @vscode/test-electron. A fresh profile,
// extensions folder and workspace; the VSIX given is installed with VS Code's own CLI; the fake
// gateway's URL is in the user settings and the key in the environment, as in api.mjs, and the
// workspace's settings try to move baseUrl to a trap that must see nothing. Linux needs a display:
// run it under `xvfb-run -a`.
//
//   node tests/e2e/electron.mjs FILE.vsix
//
// VS Code is downloaded once into .vscode-test/ (VSCODE_VERSION). Exits 0 when every API test passed.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { downloadAndUnzipVSCode, runTests, runVSCodeCommand } from '@vscode/test-electron';
import * as host from './host.mjs';

/** The VS Code the API tests run in: the build code-server 4.139.1 carries (tests/e2e/setup-host.sh). */
const VSCODE_VERSION = '1.139.1';
const CACHE = path.join(host.ROOT, '.vscode-test');
/** The whole run, download included; each API test has its own limit within it (api-tests/index.js). */
const LIMIT_MS = 25 * 60_000;

const vsix = process.argv[2] && path.resolve(process.argv[2]);
if (!vsix || !fs.existsSync(vsix)) {
  console.error('usage: node tests/e2e/electron.mjs FILE.vsix');
  process.exit(2);
}
setTimeout(() => {
  console.error(`[api-test] the VS Code run went past its limit of ${LIMIT_MS / 60_000} minutes`);
  process.exit(1); // host.mjs's exit handler stops the fake gateway and removes the scratch folders
}, LIMIT_MS).unref();

const dirs = host.scratchDirs('electron');
const gateway = await host.startGateway(host.PYTHON);
host.writeSettings(dirs, {
  'vercelAiGateway.baseUrl': `${gateway}/v1`,
  'vercelAiGateway.logLevel': 'debug',
  'vercelAiGateway.maxRetries': 0,
  'vercelAiGateway.modelOptions': { 'fake/t*': { temperature: 0.25 } }, // the per-model options test
  'workbench.startupEditor': 'none',
  'telemetry.telemetryLevel': 'off',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
});
// The workspace's settings point baseUrl at a trap (host.mjs, workspaceTrap).
const { trap, trapped, trapUrl } = await host.workspaceTrap(dirs);

const profile = [`--user-data-dir=${dirs.ud}`, `--extensions-dir=${dirs.ext}`];
let code;
try {
  const executable = await downloadAndUnzipVSCode({ version: VSCODE_VERSION, cachePath: CACHE, timeout: 60_000 });
  // VS Code's CLI, as a user installs a VSIX (on Windows a .cmd, which runVSCodeCommand runs in a shell).
  await runVSCodeCommand(['--install-extension', vsix, '--force', ...profile], { version: VSCODE_VERSION, cachePath: CACHE });
  const apiTests = path.join(host.ROOT, 'tests/e2e/api-tests');
  code = await runTests({
    vscodeExecutablePath: executable,
    extensionDevelopmentPath: apiTests,
    extensionTestsPath: path.join(apiTests, 'index.js'),
    // Linux runners have no keyring for VS Code's secret storage: its own file-based store instead.
    launchArgs: [dirs.ws, ...profile, ...(process.platform === 'linux' ? ['--password-store=basic'] : [])],
    extensionTestsEnv: {
      FAKE_GATEWAY_URL: gateway,
      AI_GATEWAY_API_KEY: host.FAKE_KEY,
      WORKSPACE_TRAP_URL: trapUrl,
      E2E_USER_DIR: path.join(dirs.ud, 'User'),
    },
  });
  console.log(`[api-test] ${trapped.length} request(s) reached the workspace's baseUrl${trapped.length ? `: ${trapped.join(', ')}` : ''}`);
  if (trapped.length) code = 1;
} catch (error) {
  // runTests rejects when VS Code exits non-zero (a test failed, or it crashed).
  console.log(`[api-test] the VS Code run failed: ${error instanceof Error ? error.message : String(error)}`);
  code = 1;
} finally {
  trap.close();
}
if (code !== 0) await host.printDiagnostics(dirs, gateway);
process.exit(code === 0 ? 0 : 1);
