// The sidecar's first start against fake interpreters (shell scripts that print what real Pythons,
// venv and pip print: tests/ts/fixtures/setup/), on the machines of issue 21's table: what the user
// is told, with which way out, and that the way out works without a reload. The last tests run the
// real sidecar behind a chosen interpreter and from a platform VSIX's bundled runtime.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { PYTHON, ROOT, startGateway } from './real';
import { until } from './until';
import { activate } from '../../extension/extension';
import { forgetShown } from '../../extension/errors';
import type { GatewayChatProvider } from '../../extension/provider';
import { chooseInterpreter, host, SetupError, sidecarPython } from '../../extension/sidecar/setup';
import { SidecarConnection } from '../../extension/sidecar/connection';

const FIXTURES = path.join(ROOT, 'tests/ts/fixtures/setup');
const originalPath = process.env.PATH;
const originalHost = { ...host };
let base: string;
let calls: string; // every fake interpreter appends its arguments here
const log = new stub.LogOutputChannel() as unknown as vscode.LogOutputChannel;

interface Fake {
  version?: string;
  platform?: string;
  /** Runs for `-m venv DIR` after DIR/bin/python is made (a link to the fake, as venv makes it). */
  venv?: string;
  pip?: string;
  /** Runs instead of making DIR/bin/python (a venv that fails). */
  venvFails?: string;
}

/** A shell script standing in for a Python: answers the probe, makes venvs of itself, runs `pip`. */
function fakePython(name: string, fake: Fake = {}): string {
  const file = path.join(base, 'bin', name);
  const makeVenv = fake.venvFails ?? `mkdir -p "$last/bin" && ln -s "$0" "$last/bin/python" && ln -s "$0" "$last/Scripts\\\\python.exe"; ${fake.venv ?? ''}`;
  fs.writeFileSync(
    file,
    `#!/bin/sh
PATH=/usr/bin:/bin
echo "$0 $*" >> "${calls}"
[ -n "$PIP_PROXY" ] && echo "PIP_PROXY=$PIP_PROXY" >> "${calls}"
for last; do :; done
case " $* " in
  *" -I -X utf8 -c import sys, sysconfig;"*) echo "${fake.version ?? '3.12'}|cpython|${fake.platform ?? 'linux-x86_64'}|0|$0" ;;
  *" -c "*) echo ${fake.version ?? '3.12'} ;;
  *" -m venv "*) ${makeVenv} ;;
  *" -m pip "*) ${fake.pip ?? 'exit 0'} ;;
esac
`,
    { mode: 0o755 },
  );
  return file;
}

/** pip failing as it fails in a fixture (all of its output on stderr). */
const pipPrints = (fixture: string) => `cat "${path.join(FIXTURES, fixture)}" >&2; exit 1`;

function context(extensionPath = path.join(base, 'extension')): vscode.ExtensionContext {
  fs.mkdirSync(path.join(extensionPath, 'python'), { recursive: true });
  fs.writeFileSync(path.join(extensionPath, 'python', 'requirements.txt'), 'httpx==0.28.1 --hash=sha256:0\n');
  fs.writeFileSync(path.join(extensionPath, 'python', 'ai_gateway_lm-0.1.0-py3-none-any.whl'), '');
  return {
    extension: { packageJSON: { version: '0.1.0' } },
    extensionPath,
    globalStorageUri: { fsPath: path.join(base, 'storage') },
    subscriptions: [] as { dispose(): unknown }[],
    secrets: new stub.SecretStorage(),
    globalState: new stub.Memento(),
    workspaceState: new stub.Memento(),
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

const buttons = (error: SetupError) => error.buttons.map((b) => b.title);
const ran = () => fs.readFileSync(calls, 'utf8');
const envDir = () => path.join(base, 'storage', 'sidecar-0.1.0');

beforeEach(() => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-setup-'));
  calls = path.join(base, 'calls.log');
  fs.mkdirSync(path.join(base, 'bin'));
  fs.writeFileSync(calls, '');
  process.env.PATH = path.join(base, 'bin'); // only the fakes are found
  delete process.env.AI_GATEWAY_LM_PYTHON;
  for (const key of Object.keys(stub.settings)) delete stub.settings[key];
  stub.shownErrors.length = 0;
  forgetShown();
});

afterEach(() => {
  Object.assign(host, originalHost);
  fs.rmSync(base, { recursive: true, force: true });
});

after(() => (process.env.PATH = originalPath));

test('no Python at all: the error says Python 3.10 or newer is needed, how to get one, and offers to choose one or retry', async () => {
  const error = await setupError(sidecarPython(context(), log));
  assert.match(error.message, /needs Python 3\.10 or newer\. No Python was found\. Install Python 3\.10 or newer with your package manager/);
  assert.deepEqual(buttons(error), ['Choose Interpreter', 'Retry']);
});

test('only old Pythons: the error names each one with its version', async () => {
  fakePython('python3', { version: '3.9' });
  // Python 2.7 knows no -I: it says so as CPython 2.7's main.c does, and exits 2.
  const usage = "Unknown option: -I\nusage: python [option] ... [-c cmd | -m mod | file | -] [arg] ...\nTry `python -h' for more information.";
  fs.writeFileSync(path.join(base, 'bin', 'python'), `#!/bin/sh\n/bin/cat >&2 <<'EOF'\n${usage}\nEOF\nexit 2\n`, { mode: 0o755 });
  const error = await setupError(sidecarPython(context(), log));
  assert.match(error.message, /Found only: python3 is 3\.9, python is older than 3\.4\./);
  assert.equal(error.canChooseInterpreter, true);
});

test('RHEL 9: python3 is 3.9, python3.11 and python3.12 are beside it; the newest is used', async () => {
  fakePython('python3', { version: '3.9' });
  fakePython('python3.11', { version: '3.11' });
  const python312 = fakePython('python3.12', { version: '3.12' });
  const command = await sidecarPython(context(), log);
  assert.equal(command.command, path.join(envDir(), 'bin', 'python'));
  assert.deepEqual(command.args, ['-I', '-X', 'utf8'], "the environment's Python runs isolated from the user's PYTHONPATH");
  assert.match(ran(), new RegExp(`${python312} -I -X utf8 -m venv`));
  assert.doesNotMatch(ran(), /python3\.11 -I -X utf8 -m venv/);
});

test("a workspace's .venv the Python extension reports is never run; one outside the workspace is", async () => {
  const workspace = path.join(base, 'project');
  fs.mkdirSync(path.join(workspace, '.venv', 'bin'), { recursive: true });
  const planted = path.join(workspace, '.venv', 'bin', 'python');
  fs.renameSync(fakePython('planted', { version: '3.13' }), planted);
  const python3 = fakePython('python3', { version: '3.12' });
  let reported = planted;
  const saved = { getExtension: stub.extensions.getExtension, folders: stub.workspace.workspaceFolders };
  const pythonExtension = { activate: () => Promise.resolve({ environments: { getActiveEnvironmentPath: () => ({ path: reported }) } }) };
  (stub.extensions as { getExtension: (id: string) => unknown }).getExtension = (id: string) => (id === 'ms-python.python' ? pythonExtension : undefined);
  // A link from outside into the workspace is inside it too.
  (stub.workspace as { workspaceFolders: unknown }).workspaceFolders = [{ uri: { fsPath: workspace }, name: 'project', index: 0 }];
  try {
    await sidecarPython(context(), log);
    assert.doesNotMatch(ran(), /\.venv/, "the workspace's interpreter is never run");
    assert.match(ran(), new RegExp(`${python3} -I -X utf8 -m venv`));
    assert.equal(fs.realpathSync(path.join(envDir(), 'bin', 'python')), python3);

    fs.rmSync(path.join(base, 'storage'), { recursive: true, force: true });
    fs.symlinkSync(planted, path.join(base, 'outside-link'));
    reported = path.join(base, 'outside-link');
    await sidecarPython(context(), log);
    assert.doesNotMatch(ran(), /\.venv|outside-link/, 'nor through a link from outside');

    fs.rmSync(path.join(base, 'storage'), { recursive: true, force: true });
    reported = fakePython('python3.13', { version: '3.13' });
    await sidecarPython(context(), log);
    assert.match(ran(), new RegExp(`${reported} -I -X utf8 -m venv`), "the Python extension's interpreter outside the workspace is used, first");
  } finally {
    (stub.extensions as { getExtension: unknown }).getExtension = saved.getExtension;
    (stub.workspace as { workspaceFolders: unknown }).workspaceFolders = saved.folders;
  }
});

test("macOS and Windows: a workspace's .venv named in another case is still inside the workspace, and never run", async () => {
  // APFS and NTFS ignore case: VS Code may name the folder /Users/ana/Project while the Python
  // extension reports /Users/ana/project/.venv/bin/python, the same file.
  const workspace = path.join(base, 'project');
  fs.mkdirSync(path.join(workspace, '.venv', 'bin'), { recursive: true });
  const planted = path.join(workspace, '.venv', 'bin', 'python');
  fs.renameSync(fakePython('planted', { version: '3.13' }), planted);
  const python3 = fakePython('python3', { version: '3.12' });
  const saved = { getExtension: stub.extensions.getExtension, folders: stub.workspace.workspaceFolders };
  const pythonExtension = { activate: () => Promise.resolve({ environments: { getActiveEnvironmentPath: () => ({ path: planted }) } }) };
  (stub.extensions as { getExtension: (id: string) => unknown }).getExtension = (id: string) => (id === 'ms-python.python' ? pythonExtension : undefined);
  (stub.workspace as { workspaceFolders: unknown }).workspaceFolders = [{ uri: { fsPath: path.join(base, 'PROJECT') }, name: 'project', index: 0 }];
  try {
    host.platform = 'darwin';
    host.macStubs = [];
    await sidecarPython(context(), log);
    assert.doesNotMatch(ran(), /\.venv/, "the workspace's interpreter is never run");
    assert.match(ran(), new RegExp(`${python3} -I -X utf8 -m venv`));
  } finally {
    (stub.extensions as { getExtension: unknown }).getExtension = saved.getExtension;
    (stub.workspace as { workspaceFolders: unknown }).workspaceFolders = saved.folders;
  }
});

test('Windows: the py launcher is tried before the names on PATH', async () => {
  host.platform = 'win32';
  const py = fakePython('py', { version: '3.13' });
  fakePython('python', { version: '3.9' });
  const command = await sidecarPython(context(), log);
  assert.equal(command.command, path.join(envDir(), 'Scripts\\python.exe'));
  assert.match(ran(), new RegExp(`^${py} -3 -I -X utf8 -c`, 'm'), 'the probe runs isolated: no sysconfig.py of the current folder is imported');
  assert.match(ran(), new RegExp(`${py} -3 -I -X utf8 -m venv`));
});

test('Windows: Microsoft Store Pythons are found by their aliases in WindowsApps, off PATH, though stat fails on them', async () => {
  host.platform = 'win32';
  const local = path.join(base, 'Local');
  const apps = path.join(local, 'Microsoft', 'WindowsApps');
  const packages = path.join(base, 'Program Files', 'WindowsApps');
  fs.mkdirSync(apps, { recursive: true });
  // An App Execution Alias is a 0-byte reparse point whose stat fails (EACCES, nodejs/node#36790)
  // and which runs. Here: one whose stat fails (a link to a package folder that is gone), one of 0
  // bytes (it runs, as sh, and says nothing); neither may be passed over unprobed.
  fs.symlinkSync(path.join(packages, 'PythonSoftwareFoundation.Python.3.13_qbz5n2kfra8p0', 'python.exe'), path.join(apps, 'python3.13.exe'));
  fs.writeFileSync(path.join(apps, 'python3.11.exe'), '', { mode: 0o755 });
  fs.writeFileSync(path.join(apps, 'python3.9.exe'), '', { mode: 0o755 }); // too old by its name: not run
  const saved = process.env.LOCALAPPDATA;
  process.env.LOCALAPPDATA = local;
  try {
    const error = await setupError(sidecarPython(context(), log));
    assert.match(
      error.message,
      /Found only: python3\.13\.exe \(Microsoft Store\) does not run \(.*\), python3\.11\.exe \(Microsoft Store\) did not say its version\. Install Python from python\.org or the Microsoft Store/,
    );
    // Python 3.12 from the Store: its alias leads into its package's folder.
    const store312 = path.join(packages, 'PythonSoftwareFoundation.Python.3.12_qbz5n2kfra8p0', 'python.exe');
    fs.mkdirSync(path.dirname(store312), { recursive: true });
    fs.renameSync(fakePython('store', { version: '3.12', platform: 'win-amd64' }), store312);
    fs.symlinkSync(store312, path.join(apps, 'python3.12.exe'));
    const command = await sidecarPython(context(), log);
    assert.equal(command.command, path.join(envDir(), 'Scripts\\python.exe'));
    assert.match(ran(), new RegExp(`^${path.join(apps, 'python3.12.exe')} -I -X utf8 -m venv`, 'm'));
    assert.doesNotMatch(ran(), /python3\.9\.exe/);
  } finally {
    if (saved === undefined) delete process.env.LOCALAPPDATA;
    else process.env.LOCALAPPDATA = saved;
  }
});

/** The first bytes of a Windows program built for `machine` (0x8664 x64, 0xaa64 arm64). */
function peProgram(machine: number): Buffer {
  const bytes = Buffer.alloc(512);
  bytes.write('MZ', 0);
  bytes.writeUInt32LE(0x80, 0x3c);
  bytes.writeUInt32LE(0x00004550, 0x80);
  bytes.writeUInt16LE(machine, 0x84);
  return bytes;
}

test('Windows 10 on Arm: no x64 Python is run, bundled or found; the message says what works there', async () => {
  Object.assign(host, { platform: 'win32', arch: 'arm64', release: '10.0.19045' });
  const ctx = context();
  const bundled = path.join(ctx.extensionPath, 'runtime', 'python.exe');
  fs.mkdirSync(path.dirname(bundled), { recursive: true });
  fs.writeFileSync(bundled, peProgram(0x8664)); // the win32-arm64 VSIX's runtime is x64
  const error = await setupError(sidecarPython(ctx, log));
  assert.equal(
    error.message,
    `This build of the extension carries an x64 Python (${bundled}), which Windows 10 on Arm cannot run: it emulates 32-bit x86 programs only, and x64 emulation needs Windows 11. Update to Windows 11, or use the extension in WSL (the WSL extension), where it runs its Linux arm64 build.`,
  );
  assert.deepEqual(buttons(error), [], 'no interpreter would help');
  // Windows 11 on Arm runs it under its x64 emulation.
  host.release = '10.0.22631';
  assert.deepEqual(await sidecarPython(ctx, log), { command: bundled, args: ['-I', '-X', 'utf8'] });

  // The untargeted VSIX on Windows 10 on Arm: an x64 python.exe on PATH is named, not run.
  fs.rmSync(path.dirname(bundled), { recursive: true });
  host.release = '10.0.19045';
  fs.writeFileSync(path.join(base, 'bin', 'python.exe'), peProgram(0x8664), { mode: 0o755 });
  const found = await setupError(sidecarPython(ctx, log));
  assert.equal(
    found.message,
    'The Vercel AI Gateway extension needs Python 3.10 or newer. Found only: python is an x64 program, which Windows 10 on Arm cannot run (x64 emulation needs Windows 11). On Windows 10 on Arm no Python can run the sidecar: x64 programs do not run there (x64 emulation needs Windows 11), and tiktoken publishes no package for Arm or 32-bit x86 Windows. Update to Windows 11, or use the extension in WSL (the WSL extension), where it runs its Linux arm64 build.',
  );
  assert.equal(ran(), '', 'nothing ran');
  // An arm64 Python runs, but finds no tiktoken wheel: the message says what works there too.
  fs.rmSync(path.join(base, 'bin', 'python.exe'));
  fakePython('python3', { version: '3.13', platform: 'win-arm64', pip: pipPrints('no-wheel.txt') });
  const arm = await setupError(sidecarPython(ctx, log));
  assert.match(arm.message, /\(win-arm64, Python 3\.13\).* On Windows 10 on Arm no Python can run the sidecar: .* use the extension in WSL/);
  host.release = '10.0.22631';
  const arm11 = await setupError(sidecarPython(ctx, log));
  assert.match(arm11.message, /On Windows 11 on Arm an x64 Python runs under Windows' emulation: choose one\.$/);
});

test("a Mac without the Command Line Tools: Apple's /usr/bin/python3 stub is never run", async () => {
  const stubPython = fakePython('python3', { version: '3.9' });
  host.platform = 'darwin';
  host.macStubs = [stubPython];
  host.xcodeSelect = path.join(base, 'xcode-select');
  fs.writeFileSync(
    host.xcodeSelect,
    `#!/bin/sh\necho "$0 $*" >> "${calls}"\necho "xcode-select: error: unable to get active developer directory" >&2\nexit 2\n`,
    { mode: 0o755 },
  );
  const error = await setupError(sidecarPython(context(), log));
  assert.doesNotMatch(ran(), /python3 /, 'the stub did not run');
  assert.match(ran(), /xcode-select -p/);
  assert.match(error.message, /python3 was not run \(Apple's stub.*\)\. Install Python from python\.org or with Homebrew/);
  assert.deepEqual(buttons(error), ['Choose Interpreter', 'Retry']);

  // With the tools installed it is a Python like any other (here, too old).
  fs.writeFileSync(host.xcodeSelect, '#!/bin/sh\necho /Library/Developer/CommandLineTools\n', { mode: 0o755 });
  const withTools = await setupError(sidecarPython(context(), log));
  assert.match(withTools.message, /Found only: python3 is 3\.9\./);
});

test("Debian without python3-venv: venv's hint (on its stdout) reaches the message, and the next interpreter is tried", async () => {
  const debian = fakePython('python3', { version: '3.11', venvFails: `cat "${path.join(FIXTURES, 'debian-no-venv.txt')}"; exit 1` });
  const error = await setupError(sidecarPython(context(), log));
  assert.equal(
    error.message,
    "Could not create the sidecar's Python environment with python3 (Python 3.11): its venv module is not installed. Install it (sudo apt install python3.11-venv), then Retry, or choose another interpreter.",
  );
  assert.deepEqual(buttons(error), ['Choose Interpreter', 'Retry']);
  assert.equal(fs.existsSync(envDir()), false, 'the half-made environment is gone');

  fakePython('python3.12', { version: '3.12' }); // say, deadsnakes' python3.12-venv is installed
  await sidecarPython(context(), log);
  assert.match(ran(), /python3\.12 -I -X utf8 -m venv/);
  assert.ok(ran().indexOf(`${debian} -I -X utf8 -m venv`) < ran().lastIndexOf('python3.12 -I -X utf8 -m venv'));
});

for (const [fixture, expected] of [
  [
    'offline.txt',
    "Could not reach the Python package index to install the sidecar's packages: its name could not be resolved (no network, or no DNS). Connect to a network that reaches it, then Retry.",
  ],
  [
    'proxy-403.txt',
    "Could not reach the Python package index to install the sidecar's packages: the proxy refused (403 Forbidden). Check VS Code's http.proxy setting (pip uses it) or ask for the index to be allowed, then Retry.",
  ],
  [
    'certificate.txt',
    "Could not reach the Python package index (localhost:40921) to install the sidecar's packages: its certificate is not trusted (unable to get local issuer certificate). A network that inspects TLS needs its CA certificate in the system's trusted certificates or in pip's configuration (cert); then Retry.",
  ],
  [
    'lagging-index.txt',
    'The Python package index (127.0.0.1:32885) does not have tiktoken==0.14.0 yet (its latest: 0.11.0, 0.12.0, 0.13.0): a mirror or private index that lags PyPI. Retry once it has caught up, or point pip at an index that has it.',
  ],
] as const) {
  test(`pip failing as in ${fixture}: the message names the cause and the next step, and offers Retry`, async () => {
    fakePython('python3', { pip: pipPrints(fixture) });
    const error = await setupError(sidecarPython(context(), log));
    assert.equal(error.message, expected);
    assert.deepEqual(buttons(error), ['Retry']);
    assert.equal(fs.existsSync(path.join(envDir(), '.ready')), false, 'a failed setup is not marked ready');
  });
}

test('a platform without a wheel: binary wheels only, hash-checked, and the message names the platform', async () => {
  fakePython('python3', { version: '3.13', platform: 'win-arm64', pip: pipPrints('no-wheel.txt') });
  const error = await setupError(sidecarPython(context(), log));
  assert.match(error.message, /^No prebuilt package of tiktoken==0\.14\.0 exists for this platform \(win-arm64, Python 3\.13\)/);
  assert.deepEqual(buttons(error), ['Choose Interpreter']);
  const pip = ran()
    .split('\n')
    .find((line) => line.includes('-m pip install'))!;
  assert.match(pip, / --only-binary=:all: --require-hashes -r \S+requirements\.txt$/);
});

test('pip works after a failure: the next start builds, later starts run nothing, old versions are removed', async () => {
  fakePython('python3', { pip: pipPrints('offline.txt') });
  const ctx = context();
  await setupError(sidecarPython(ctx, log));

  fakePython('python3'); // the network came back
  fs.mkdirSync(path.join(base, 'storage', 'sidecar-0.0.9'), { recursive: true });
  const command = await sidecarPython(ctx, log);
  assert.equal(command.command, path.join(envDir(), 'bin', 'python'));
  assert.equal(fs.existsSync(path.join(base, 'storage', 'sidecar-0.0.9')), false, 'old environments are removed');
  const lines = ran().trim().split('\n');
  assert.match(lines.at(-2)!, /-m pip install .* --only-binary=:all: --require-hashes -r \S+requirements\.txt$/);
  assert.match(lines.at(-1)!, /-m pip install .* --no-deps --no-index \S+ai_gateway_lm-0\.1\.0-py3-none-any\.whl$/);

  const before = ran();
  assert.deepEqual(await sidecarPython(ctx, log), command);
  assert.equal(ran(), before, 'a finished setup runs nothing on later starts');
});

test('the interpreter under a ready environment was removed (Homebrew): the environment is made again', async () => {
  const old = fakePython('python3.12', { version: '3.12' });
  const ctx = context();
  await sidecarPython(ctx, log);
  fs.rmSync(old); // brew upgrade: python@3.12 is gone, python3.13 arrived
  const python313 = fakePython('python3.13', { version: '3.13' });
  const command = await sidecarPython(ctx, log);
  assert.equal(fs.realpathSync(command.command), python313, 'the environment leads to a Python that runs');
  assert.match(ran(), new RegExp(`${python313} -I -X utf8 -m venv`));
});

test(
  "a FIFO at the environment's .ready: the start neither blocks nor fails; the environment is made again",
  { skip: process.platform === 'win32', timeout: 20_000 },
  async () => {
    fakePython('python3');
    const ctx = context();
    await sidecarPython(ctx, log);
    fs.rmSync(path.join(envDir(), '.ready'));
    execFileSync('/usr/bin/mkfifo', [path.join(envDir(), '.ready')]); // PATH here is the fake Pythons'
    const command = await sidecarPython(ctx, log);
    assert.equal(command.command, path.join(envDir(), 'bin', 'python'));
    assert.ok(fs.statSync(path.join(envDir(), '.ready')).isFile(), 'marked ready again, in a file');
  },
);

test('the pythonPath setting is used alone: one that is too old is named, not passed over', async () => {
  stub.settings['vercelAiGateway.pythonPath'] = fakePython('my-python', { version: '3.9' });
  fakePython('python3', { version: '3.13' });
  const error = await setupError(sidecarPython(context(), log));
  assert.match(error.message, /^The Python in vercelAiGateway\.pythonPath cannot run the sidecar: \S+my-python is 3\.9\. It needs Python 3\.10 or newer/);
  assert.deepEqual(buttons(error), ['Choose Interpreter']);

  const chosen = fakePython('my-python', { version: '3.11' });
  await sidecarPython(context(), log);
  assert.match(ran(), new RegExp(`${chosen} -I -X utf8 -m venv`));
  assert.doesNotMatch(ran(), /python3 -I -X utf8 -m venv/);
});

test('a pythonPath under ~/ is under the home folder', async () => {
  const saved = process.env.HOME;
  process.env.HOME = base; // what os.homedir() reads here
  try {
    const chosen = fakePython('my-python', { version: '3.12' });
    stub.settings['vercelAiGateway.pythonPath'] = '~/bin/my-python';
    await sidecarPython(context(), log);
    assert.match(ran(), new RegExp(`^${chosen} -I -X utf8 -m venv`, 'm'));
  } finally {
    process.env.HOME = saved;
  }
});

test("pip goes through VS Code's http.proxy, given in its environment and never on its command line", async () => {
  fakePython('python3');
  stub.settings['http.proxy'] = 'http://user:s3cret@proxy.example:3128';
  await sidecarPython(context(), log);
  const lines = ran().split('\n');
  assert.ok(lines.includes('PIP_PROXY=http://user:s3cret@proxy.example:3128'), 'in the environment');
  assert.doesNotMatch(
    lines.find((line) => line.includes('-m pip'))!,
    /s3cret|proxy\.example/,
    'not on the command line',
  );
});

test('a failing setup is shown once per window, not once per retried model list; a retry the user asks for is shown again', async () => {
  fakePython('python3', { pip: pipPrints('offline.txt') });
  const traces = new stub.LogOutputChannel() as unknown as vscode.LogOutputChannel;
  const sidecar = new SidecarConnection(context(), log, traces);
  try {
    for (let i = 0; i < 3; i++) await assert.rejects(sidecar.request('gateway/models', {}), /Could not reach the Python package index/);
    assert.equal(stub.shownErrors.length, 1, stub.shownErrors.map((e) => e.message).join('\n'));
    assert.deepEqual(stub.shownErrors[0].actions, ['Retry', 'Show Logs']);
    forgetShown(); // what Retry, Restart Server and a new interpreter do
    await assert.rejects(sidecar.request('gateway/models', {}));
    assert.equal(stub.shownErrors.length, 2);
  } finally {
    sidecar.dispose();
  }
});

// The real sidecar behind the fakes: a "good" interpreter whose environment's python runs the
// development venv's Python (which has the sidecar) for everything but pip.
const children: ChildProcess[] = [];
let gateway: string;
before(async () => {
  gateway = await startGateway(children);
  process.env.AI_GATEWAY_API_KEY = 'test-key-0123456789'; // the default key: its list is served (rfcs/0010)
});
after(() => {
  children.forEach((child) => child.kill());
  delete process.env.AI_GATEWAY_API_KEY;
});

function goodPython(name: string): string {
  const wrapper = `#!/bin/sh\ncase " $* " in *" -m pip "*) echo "$0 $*" >> "${calls}"; exit 0 ;; esac\nexec "${PYTHON}" "$@"\n`;
  return fakePython(name, { version: '3.12', venv: `rm "$last/bin/python" && printf '%s' '${wrapper}' > "$last/bin/python" && chmod 755 "$last/bin/python"` });
}

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;

async function modelsWithin(provider: GatewayChatProvider, ms: number): Promise<string[]> {
  let models: string[] = [];
  const listed = async () => (models = (await provider.provideLanguageModelChatInformation({ silent: true }, token())).map((m) => m.id)).length > 0;
  await until(listed, 'the model list is served', ms, 100);
  return models;
}

test('Choose Interpreter opens a file picker; a bad pick is refused, a good one recovers without a reload', async () => {
  fakePython('python3', { version: '3.9' });
  const tooOld = fakePython('python3.9-picked', { version: '3.9' });
  const good = goodPython('good-python');
  stub.settings['vercelAiGateway.baseUrl'] = `${gateway}/v1`;
  const ctx = context();
  await activate(ctx);
  try {
    const provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
    // The first failure's notification: the user clicks Choose Interpreter and picks a 3.9 first.
    stub.answers.errorButton.push('Choose Interpreter');
    stub.answers.openDialog.push([stub.Uri.file(tooOld)]);
    for (let i = 0; i < 3; i++) assert.deepEqual(await provider.provideLanguageModelChatInformation({ silent: true }, token()), []);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(stub.openDialogs.length, 1, 'a file picker, not the settings editor');
    const shown = stub.shownErrors.map((e) => e.message);
    assert.equal(shown.filter((m) => m.includes('Found only')).length, 1, `once for three model lists:\n${shown.join('\n')}`);
    assert.match(shown.at(-1)!, /python3\.9-picked cannot run the sidecar: it is 3\.9/);
    assert.equal(stub.settings['vercelAiGateway.pythonPath'], undefined, 'a bad pick is not saved');

    // Its own notification offers the picker again: now the good one.
    stub.answers.openDialog.push([stub.Uri.file(good)]);
    await stub.commands.executeCommand('vercelAiGateway.chooseInterpreter');
    assert.equal(stub.settings['vercelAiGateway.pythonPath'], good);
    assert.ok((await modelsWithin(provider, 20_000)).includes('fake/agent-loop'), 'the model list, from the real sidecar, without a reload');
    assert.match(ran(), new RegExp(`${good} -I -X utf8 -m venv`));
  } finally {
    (ctx.subscriptions as { dispose(): unknown }[]).forEach((d) => d.dispose());
    delete stub.settings['vercelAiGateway.baseUrl'];
  }
});

test('a real Python under a user folder the code page cannot encode: run with -X utf8, Choose Interpreter takes it', { timeout: 30_000 }, async () => {
  // On Windows a pipe's encoding is the ANSI code page unless -X utf8 (-I drops PYTHONUTF8), so a
  // Python under a user folder named in Cyrillic, on a Western code page, failed as it printed its
  // own path. An ASCII locale that is not C (where Python turns UTF-8 mode on by itself) plays that
  // code page here.
  const locales = path.join(base, 'locales');
  fs.mkdirSync(locales);
  execFileSync('/usr/bin/localedef', ['-i', 'en_US', '-f', 'ANSI_X3.4-1968', path.join(locales, 'en_US.ascii')], {
    env: { PATH: '/usr/bin:/bin' }, // it reads the gzipped charmap through gzip
    stdio: 'ignore',
    timeout: 20_000,
  });
  const python = path.join(base, 'Users', 'Дмитрий', 'python3');
  fs.mkdirSync(path.dirname(python), { recursive: true });
  fs.symlinkSync(PYTHON, python);
  const saved = { LOCPATH: process.env.LOCPATH, LC_ALL: process.env.LC_ALL };
  Object.assign(process.env, { LOCPATH: locales, LC_ALL: 'en_US.ascii' });
  try {
    // The check is real: without -X utf8 this Python fails as it prints where it is.
    assert.throws(() => execFileSync(python, ['-I', '-c', 'import sys; print(sys.executable)'], { stdio: 'pipe' }), /UnicodeEncodeError/);
    stub.answers.openDialog.push([stub.Uri.file(python)]);
    assert.equal(await chooseInterpreter(log), python);
    assert.deepEqual(
      stub.shownErrors.map((e) => e.message),
      [],
    );
    assert.equal(stub.settings['vercelAiGateway.pythonPath'], python);
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
});

test("a platform VSIX's bundled runtime: no search, no venv, no pip; the user's PYTHONPATH cannot leak into it", async () => {
  fakePython('python3'); // there, but must not run
  const ctx = context();
  const runtime = path.join(ctx.extensionPath, 'runtime', 'bin');
  fs.mkdirSync(runtime, { recursive: true });
  fs.writeFileSync(path.join(runtime, 'python3'), `#!/bin/sh\necho "$0 $*" >> "${calls}"\nexec "${PYTHON}" "$@"\n`, { mode: 0o644 });
  // A package of the same name on the user's PYTHONPATH, as a project's src/ folder would be.
  const evil = path.join(base, 'evil', 'gateway_lm');
  fs.mkdirSync(evil, { recursive: true });
  fs.writeFileSync(path.join(evil, '__init__.py'), 'raise SystemExit("the user\'s PYTHONPATH leaked into the sidecar")\n');
  fs.writeFileSync(path.join(evil, '__main__.py'), '');
  const originalPythonPath = process.env.PYTHONPATH;
  process.env.PYTHONPATH = path.dirname(evil);
  stub.settings['vercelAiGateway.baseUrl'] = `${gateway}/v1`;
  try {
    assert.deepEqual(await sidecarPython(ctx, log), { command: path.join(runtime, 'python3'), args: ['-I', '-X', 'utf8'] });
    assert.ok(fs.statSync(path.join(runtime, 'python3')).mode & 0o100, 'made executable when the VSIX lost its mode');
    const sidecar = new SidecarConnection(ctx, log, new stub.LogOutputChannel());
    try {
      const { models } = await sidecar.request('gateway/models', {});
      assert.ok(
        models.some((m) => m.id === 'fake/agent-loop'),
        JSON.stringify(models).slice(0, 300),
      );
    } finally {
      sidecar.dispose();
    }
    assert.deepEqual(
      ran()
        .trim()
        .split('\n')
        .map((line) => line.replace(ctx.extensionPath, '<ext>')),
      ['<ext>/runtime/bin/python3 -I -X utf8 -m gateway_lm serve'],
      'only the bundled runtime ran',
    );
    assert.equal(fs.existsSync(envDir()), false, 'no environment was made');
    // The check is real: without the isolation flags the same runtime imports the user's package.
    assert.throws(() => execFileSync(path.join(runtime, 'python3'), ['-m', 'gateway_lm', 'serve'], { stdio: 'pipe' }), /PYTHONPATH leaked/);
  } finally {
    if (originalPythonPath === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = originalPythonPath;
    delete stub.settings['vercelAiGateway.baseUrl'];
  }
});

test('a bundled runtime that cannot be made executable (EPERM): one notification in our words, with the way out', async (t) => {
  const ctx = context();
  const python = path.join(ctx.extensionPath, 'runtime', 'bin', 'python3');
  fs.mkdirSync(path.dirname(python), { recursive: true });
  fs.writeFileSync(python, '#!/bin/sh\nexit 0\n', { mode: 0o644 }); // the mode an extractor lost
  // Immutable: the kernel refuses its chmod with EPERM, even to root, as a read-only install or
  // another user's does.
  try {
    execFileSync('/usr/bin/chattr', ['+i', python], { stdio: 'pipe' });
  } catch (error) {
    t.skip(`this file system cannot make a file immutable (${String(error)})`);
    return;
  }
  const sidecar = new SidecarConnection(ctx, log, new stub.LogOutputChannel());
  try {
    await assert.rejects(sidecar.request('gateway/models', {}), /cannot run: it is not executable/);
    assert.deepEqual(
      stub.shownErrors.map((e) => ({ message: e.message, actions: e.actions })),
      [
        {
          message: `The Python this extension carries (${python}) cannot run: it is not executable, and making it so failed (EPERM): the extension's folder is read-only or another user's. Install the extension where programs may run (VS Code's --extensions-dir), or set vercelAiGateway.pythonPath to a Python 3.10 or newer with Choose Interpreter.`,
          actions: ['Choose Interpreter', 'Show Logs'],
        },
      ],
    );
  } finally {
    sidecar.dispose();
    execFileSync('/usr/bin/chattr', ['-i', python]);
  }
});
