// The sidecar's first-start setup against fake interpreters: what a user sees when Python is
// missing or too old or pip fails, and that a finished setup is reused.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, afterEach, beforeEach, test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { SetupError, sidecarPython } from '../../extension/setup';

const originalPath = process.env.PATH;
let base: string;
let calls: string; // every fake interpreter appends its arguments here
const log = { info() {}, warn() {}, error() {} } as unknown as vscode.LogOutputChannel;

/** A shell script standing in for a Python: prints `version`, makes venvs of itself, runs `pip`. */
function fakePython(name: string, version: string, pip = 'exit 0'): string {
  const file = path.join(base, 'bin', name);
  fs.writeFileSync(
    file,
    `#!/bin/sh
PATH=/usr/bin:/bin
echo "$0 $*" >> "${calls}"
[ -n "$PIP_PROXY" ] && echo "PIP_PROXY=$PIP_PROXY" >> "${calls}"
case "$1 $2" in
  "-c "*) echo ${version} ;;
  "-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" ;;
  "-m pip") ${pip} ;;
esac
`,
    { mode: 0o755 },
  );
  return file;
}

function context(): vscode.ExtensionContext {
  const extensionPath = path.join(base, 'extension');
  fs.mkdirSync(path.join(extensionPath, 'python'), { recursive: true });
  fs.writeFileSync(path.join(extensionPath, 'python', 'requirements.txt'), 'httpx==0.28.1\n');
  fs.writeFileSync(path.join(extensionPath, 'python', 'ai_gateway_lm-0.1.0-py3-none-any.whl'), '');
  return {
    extension: { packageJSON: { version: '0.1.0' } },
    extensionPath,
    globalStorageUri: { fsPath: path.join(base, 'storage') },
  } as unknown as vscode.ExtensionContext;
}

async function setupError(promise: Promise<unknown>): Promise<SetupError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof SetupError, `expected a SetupError, got ${String(error)}`);
  return error;
}

beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-setup-'));
  calls = path.join(base, 'calls.log');
  fs.mkdirSync(path.join(base, 'bin'));
  fs.writeFileSync(calls, '');
  process.env.PATH = path.join(base, 'bin'); // only the fakes are found
  delete process.env.AI_GATEWAY_LM_PYTHON;
  for (const key of Object.keys(stub.settings)) delete stub.settings[key];
});

afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

after(() => (process.env.PATH = originalPath));

test('no Python at all: the error says Python 3.10 or newer is needed and offers to choose one', async () => {
  const error = await setupError(sidecarPython(context(), log));
  assert.match(error.message, /needs Python 3\.10 or newer\. No Python was found\./);
  assert.equal(error.canChooseInterpreter, true);
});

test('only old Pythons: the error names each one with its version', async () => {
  stub.settings['vercelAiGateway.pythonPath'] = fakePython('python3.8', '3.8');
  fakePython('python3', '3.9');
  const error = await setupError(sidecarPython(context(), log));
  assert.match(error.message, /Found only: .*python3\.8 is 3\.8, python3 is 3\.9\./);
  assert.equal(error.canChooseInterpreter, true);
});

test("pip failing: the error carries pip's own last line, and the next start tries again", async () => {
  fakePython('python3', '3.12', 'echo "ERROR: No matching distribution found for httpx==0.28.1" >&2; exit 1');
  const ctx = context();
  const error = await setupError(sidecarPython(ctx, log));
  assert.equal(error.message, "Installing the sidecar's packages failed: ERROR: No matching distribution found for httpx==0.28.1");
  assert.equal(error.canChooseInterpreter, false);
  const envDir = path.join(base, 'storage', 'sidecar-0.1.0');
  assert.equal(fs.existsSync(path.join(envDir, '.ready')), false, 'a failed setup is not marked ready');

  fakePython('python3', '3.12'); // pip works now (say, the network came back)
  fs.mkdirSync(path.join(base, 'storage', 'sidecar-0.0.9'), { recursive: true }); // an older version's environment
  const python = await sidecarPython(ctx, log);
  assert.equal(python, path.join(envDir, 'bin', 'python'));
  assert.equal(fs.readFileSync(path.join(envDir, '.ready'), 'utf8'), '0.1.0');
  assert.equal(fs.existsSync(path.join(base, 'storage', 'sidecar-0.0.9')), false, 'old environments are removed');
  const pipCall = fs.readFileSync(calls, 'utf8').trim().split('\n').at(-1)!;
  assert.match(pipCall, /-m pip install .*-r .*requirements\.txt .*ai_gateway_lm-0\.1\.0-py3-none-any\.whl$/);

  const before = fs.readFileSync(calls, 'utf8');
  assert.equal(await sidecarPython(ctx, log), python);
  assert.equal(fs.readFileSync(calls, 'utf8'), before, 'a finished setup runs nothing on later starts');
});

test('the pythonPath setting wins over Pythons on PATH', async () => {
  const chosen = fakePython('my-python', '3.11');
  fakePython('python3', '3.13');
  stub.settings['vercelAiGateway.pythonPath'] = chosen;
  await sidecarPython(context(), log);
  assert.match(
    fs
      .readFileSync(calls, 'utf8')
      .split('\n')
      .find((line) => line.includes('-m venv'))!,
    /my-python -m venv/,
  );
});

test("pip goes through VS Code's http.proxy, given in its environment and never on its command line", async () => {
  fakePython('python3', '3.12');
  stub.settings['http.proxy'] = 'http://user:s3cret@proxy.example:3128';
  try {
    await sidecarPython(context(), log);
  } finally {
    delete stub.settings['http.proxy'];
  }
  const lines = fs.readFileSync(calls, 'utf8').split('\n');
  assert.ok(lines.includes('PIP_PROXY=http://user:s3cret@proxy.example:3128'), 'in the environment');
  assert.doesNotMatch(
    lines.find((line) => line.includes('-m pip'))!,
    /s3cret|proxy\.example/,
    'not on the command line',
  );
});
