// The sidecar's Python, on every start. A platform VSIX carries its own (`runtime/`, with the sidecar
// and its locked packages installed by scripts/package.mjs --target): used as it is, nothing to set
// up, no search, no network. Otherwise (the untargeted VSIX, or `pythonPath` set: "use my own
// Python"): find Python ≥ 3.10, create a private environment in global storage and install the
// locked, hash-checked binary wheels and the sidecar wheel the VSIX ships. The environment is reused
// until the extension's version, the chosen interpreter or the interpreter under it changes.
//
// A workspace never chooses the program the sidecar runs: the environment is shared by every window
// (sidecar-<version>/bin/python links to the interpreter it was made with), and a folder the user
// merely opened is not trusted to name it. So the Python extension's interpreter is taken only when
// it lies outside every workspace folder (the Python extension selects a workspace's `.venv` by
// itself), in a trusted workspace; and the probe runs with `-I`, so that nothing in the current
// folder (a `sysconfig.py`) or the environment is imported by it. Every interpreter run here runs
// with ISOLATED, so with `-X utf8`.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { bounded } from '../bounded';
import { expandHome, networkSetting, SECTION, setting, settingId } from '../config';
import { Button, CHOOSE_INTERPRETER, RETRY, showError } from '../errors';
import { plain } from '../notify';
import { readBounded, writeFileAtomic } from '../storage';

/** How the sidecar's Python is run: the interpreter and what goes before `-m gateway_lm serve`. */
export interface SidecarCommand {
  command: string;
  args: string[];
}

/** Cuts the sidecar's Python off from the user's Python settings: PYTHONPATH, PYTHONHOME, the user
 * site-packages and the current folder cannot put other packages before the locked ones. `-X utf8`
 * because `-I` also drops the PYTHONUTF8 the session sets: without it a pipe's encoding on Windows
 * is the ANSI code page, and a path it cannot encode (a user folder in Cyrillic on a Western code
 * page) makes a good Python fail as it prints, the probe included. */
export const ISOLATED = ['-I', '-X', 'utf8'];

/** A first-start failure, told with what the user can do about it. */
export class SetupError extends Error {
  constructor(
    message: string,
    readonly buttons: readonly Button[],
    /** Another interpreter might do (this one has no venv module, or no wheels exist for it). */
    readonly tryNext = false,
  ) {
    super(message);
  }

  get canChooseInterpreter(): boolean {
    return this.buttons.includes(CHOOSE_INTERPRETER);
  }
}

const MIN_PYTHON: [number, number] = [3, 10];
/** Versioned names tried on PATH, newest first (RHEL 9 ships 3.11 and 3.12 only under these). */
const NEWEST_MINOR = 14;

/** What the search may not assume about the machine; tests change it to play another platform. */
export const host = {
  platform: process.platform,
  /** Apple's stubs: they run the Command Line Tools' Python when the tools are there, and open the
   * dialog that installs them when they are not. */
  macStubs: ['/usr/bin/python3', '/usr/bin/python'],
  xcodeSelect: '/usr/bin/xcode-select',
  /** VS Code's own architecture: on Windows on Arm an arm64 VS Code installs the win32-arm64 VSIX. */
  arch: process.arch,
  /** "10.0.19045": Windows' build is the third number (Windows 11 from 22000). */
  release: os.release(),
};

/** Windows 10 on Arm emulates 32-bit x86 programs only; x64 emulation came with Windows 11 (build
 * 22000). There an x64 Python cannot run: not the one the win32-arm64 VSIX carries (x64, as
 * tiktoken publishes no win_arm64 wheel: RFC 0001 "Shipping Python"), nor one the search finds. */
function runsNoX64(): boolean {
  return host.platform === 'win32' && host.arch === 'arm64' && Number(host.release.split('.')[2]) < 22000;
}

/** What works where Windows 10 on Arm runs no x64 program. */
const WINDOWS_10_ARM_WAYS_OUT = 'Update to Windows 11, or use the extension in WSL (the WSL extension), where it runs its Linux arm64 build.';
const WINDOWS_10_ARM = `On Windows 10 on Arm no Python can run the sidecar: x64 programs do not run there (x64 emulation needs Windows 11), and tiktoken publishes no package for Arm or 32-bit x86 Windows. ${WINDOWS_10_ARM_WAYS_OUT}`;

/** The machine a Windows program is built for, from its PE header; undefined for anything else or
 * a file that cannot be read (an App Execution Alias). */
async function peMachine(file: string): Promise<'x64' | 'arm64' | 'x86' | undefined> {
  const handle = await fs.open(file, 'r').catch(() => undefined);
  if (!handle) return undefined;
  let head: Buffer;
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    head = buffer.subarray(0, bytesRead);
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
  if (head.length < 64 || head.readUInt16LE(0) !== 0x5a4d) return undefined; // "MZ"
  const pe = head.readUInt32LE(0x3c);
  if (pe + 6 > head.length || head.readUInt32LE(pe) !== 0x00004550) return undefined; // "PE\0\0"
  return ({ 0x8664: 'x64', 0xaa64: 'arm64', 0x14c: 'x86' } as const)[head.readUInt16LE(pe + 4)];
}

export async function sidecarPython(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Promise<SidecarCommand> {
  const override = process.env.AI_GATEWAY_LM_PYTHON; // a Python that already has the sidecar (development, tests)
  if (override) return { command: override, args: [] };
  const chosen = chosenPython();
  if (!chosen) {
    const bundled = await bundledRuntime(context.extensionPath);
    if (bundled) {
      log.info(`sidecar: the Python this VSIX carries (${bundled.command})`);
      return bundled;
    }
  }
  const version = (context.extension.packageJSON as { version: string }).version;
  const envDir = path.join(context.globalStorageUri.fsPath, `sidecar-${version}`);
  const python = path.join(envDir, host.platform === 'win32' ? 'Scripts\\python.exe' : 'bin/python');
  if (await reusable(envDir, python, version, chosen, log)) return { command: python, args: ISOLATED };
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Vercel AI Gateway: setting up (first start only)' },
    async (progress) => {
      const report = (message: string) => progress.report({ message: plain(message) }); // paths come from settings and PATH
      const wheels = await shippedWheels(context.extensionPath);
      const tooOld: string[] = [];
      let failure: SetupError | undefined; // the first interpreter's, when every one failed
      for await (const base of usableInterpreters(chosen, tooOld, log, report)) {
        try {
          await build(base, envDir, python, wheels, log, report);
          await writeReady(envDir, { version, chosen: chosen ?? null, base: base.executable, python: await fs.realpath(python), minor: base.version });
          return;
        } catch (error) {
          await fs.rm(envDir, { recursive: true, force: true }).catch(() => undefined);
          if (!(error instanceof SetupError) || !error.tryNext || chosen) throw error;
          failure ??= error;
        }
      }
      throw failure ?? noPython(chosen, tooOld);
    },
  );
  await removeOldEnvironments(context.globalStorageUri.fsPath, envDir);
  return { command: python, args: ISOLATED };
}

/** The Python of a platform VSIX, if this is one. */
export async function bundledRuntime(extensionPath: string): Promise<SidecarCommand | undefined> {
  const python = host.platform === 'win32' ? path.join(extensionPath, 'runtime', 'python.exe') : path.join(extensionPath, 'runtime', 'bin', 'python3');
  if (!(await exists(python))) return undefined;
  if (runsNoX64() && (await peMachine(python)) === 'x64')
    throw new SetupError(
      `This build of the extension carries an x64 Python (${python}), which Windows 10 on Arm cannot run: it emulates 32-bit x86 programs only, and x64 emulation needs Windows 11. ${WINDOWS_10_ARM_WAYS_OUT}`,
      [],
    );
  // A VSIX carries file modes, but an extractor that drops them would leave it unable to run.
  if (host.platform !== 'win32' && !(await canRun(python))) {
    await fs.chmod(python, 0o755).catch((error: NodeJS.ErrnoException) => {
      throw cannotRunBundled(
        python,
        `it is not executable, and making it so failed (${error.code ?? error.message}): the extension's folder is read-only or another user's`,
      );
    });
    // chmod worked, yet a file system mounted noexec runs nothing.
    if (!(await canRun(python))) throw cannotRunBundled(python, "the extension's folder is on a file system that does not allow running programs (noexec)");
  }
  return { command: python, args: ISOLATED };
}

function canRun(file: string): Promise<boolean> {
  return fs.access(file, fs.constants.X_OK).then(
    () => true,
    () => false,
  );
}

/** The bundled runtime cannot run where VS Code installed the extension: what happened, and the two
 * ways out (an extensions folder that can run programs, or the user's own Python). */
function cannotRunBundled(python: string, why: string): SetupError {
  return new SetupError(
    `The Python this extension carries (${python}) cannot run: ${why}. Install the extension where programs may run (VS Code's --extensions-dir), or set ${settingId('pythonPath')} to a Python 3.10 or newer with Choose Interpreter.`,
    [CHOOSE_INTERPRETER],
  );
}

function chosenPython(): string | undefined {
  const value = setting<unknown>('pythonPath');
  return typeof value === 'string' && value.trim() ? expandHome(value.trim(), host.platform) : undefined;
}

interface Candidate {
  command: string;
  args: string[];
  label: string;
}

interface Interpreter extends Candidate {
  /** "3.12" */
  version: string;
  /** sysconfig's name for it, as pip's error would need it: "linux-x86_64", "win-arm64". */
  platform: string;
  /** The interpreter itself (sys.executable), not a launcher or a shim in front of it. */
  executable: string;
}

/** The interpreters to build with, in order, each probed only when the one before did not do. */
async function* usableInterpreters(
  chosen: string | undefined,
  tooOld: string[],
  log: vscode.LogOutputChannel,
  report: (message: string) => void,
): AsyncGenerator<Interpreter> {
  report('finding Python…');
  const seen = new Set<string>();
  for (const candidate of chosen ? [{ command: chosen, args: [], label: chosen }] : await candidates()) {
    const file = await which(candidate.command);
    if (!file) {
      if (chosen) tooOld.push(`${chosen} does not exist`);
      continue;
    }
    const real = await fs.realpath(file).catch(() => file);
    const key = `${pathKey(real, host.platform)} ${candidate.args.join(' ')}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (runsNoX64() && (await peMachine(file)) === 'x64') {
      tooOld.push(`${candidate.label} is an x64 program, which Windows 10 on Arm cannot run (x64 emulation needs Windows 11)`);
      continue;
    }
    if (await isMacStub(file, real)) {
      tooOld.push(`${file} was not run (Apple's stub, which would ask to install the Command Line Tools; their Python 3.9 is too old anyway)`);
      continue;
    }
    const probed = await probe({ ...candidate, command: file }, log);
    if (typeof probed === 'string') {
      tooOld.push(`${candidate.label} ${probed}`);
      continue;
    }
    yield probed;
  }
}

async function candidates(): Promise<Candidate[]> {
  const list: Candidate[] = [];
  const fromExtension = await pythonExtensionInterpreter();
  if (fromExtension) list.push({ command: fromExtension, args: [], label: `${fromExtension} (the Python extension's)` });
  if (host.platform === 'win32') list.push({ command: 'py', args: ['-3'], label: 'py -3' });
  for (let minor = NEWEST_MINOR; minor >= MIN_PYTHON[1]; minor--) list.push({ command: `python3.${minor}`, args: [], label: `python3.${minor}` });
  if (host.platform === 'win32') list.push(...(await storePythons()));
  list.push({ command: 'python3', args: [], label: 'python3' }, { command: 'python', args: [], label: 'python' });
  return list;
}

/** Microsoft Store Pythons, newest first: each installed one leaves an App Execution Alias
 * `python3.X.exe` in %LOCALAPPDATA%\Microsoft\WindowsApps, which may not be on PATH. Found by
 * listing that folder, as the Python extension's locator does; its `python.exe` and `python3.exe`
 * are left to the names on PATH (without a Store Python they are the Store's installer). */
async function storePythons(): Promise<Candidate[]> {
  const local = process.env.LOCALAPPDATA;
  if (!local) return [];
  const dir = path.join(local, 'Microsoft', 'WindowsApps');
  const found: [number, string][] = [];
  for (const name of await fs.readdir(dir).catch(() => [] as string[])) {
    const minor = Number(/^python3\.(\d{1,2})\.exe$/i.exec(name)?.[1]);
    if (minor >= MIN_PYTHON[1]) found.push([minor, name]);
  }
  return found.sort((a, b) => b[0] - a[0]).map(([, name]) => ({ command: path.join(dir, name), args: [], label: `${name} (Microsoft Store)` }));
}

// One line any Python since 2.7 can print: version, implementation, platform, free-threading, executable.
const PROBE =
  'import sys, sysconfig; print("%d.%d|%s|%s|%d|%s" % (sys.version_info[0], sys.version_info[1], ' +
  'getattr(getattr(sys, "implementation", None), "name", "cpython"), sysconfig.get_platform(), ' +
  'bool(sysconfig.get_config_var("Py_GIL_DISABLED")), sys.executable))';

/** The interpreter, or why it cannot be used ("is 3.9"). What it prints is checked, not trusted. */
async function probe(candidate: Candidate, log: vscode.LogOutputChannel): Promise<Interpreter | string> {
  let stdout: string;
  try {
    ({ stdout } = await run(candidate.command, [...candidate.args, ...ISOLATED, '-c', PROBE], log, { timeoutMs: 30_000 }));
  } catch (error) {
    // Python 2 and 3.0–3.3 know no -I (3.4); it says so and exits.
    if (/Unknown option: -I/.test((error as RunError).output)) return 'is older than 3.4';
    return `does not run (${(error as RunError).summary})`;
  }
  const line = stdout.trim().split('\n').pop() ?? '';
  const match = /^(\d{1,2})\.(\d{1,3})\|([a-z]{1,20})\|([\w.-]{1,60})\|([01])\|(.{1,4096})$/.exec(line);
  if (!match) return 'did not say its version';
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const version = `${major}.${minor}`;
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) return `is ${version}`;
  if (match[5] === '1') return `is a free-threaded build (${version}t), which the sidecar's packages do not support`;
  const executable = path.isAbsolute(match[6]) && (await exists(match[6])) ? match[6] : candidate.command;
  return { ...candidate, version, platform: match[4], executable };
}

async function isMacStub(file: string, real: string): Promise<boolean> {
  if (host.platform !== 'darwin' || !host.macStubs.some((stub) => samePath(stub, file, 'darwin') || samePath(stub, real, 'darwin'))) return false;
  // `xcode-select -p` only prints where the tools are; it never opens the dialog.
  return run(host.xcodeSelect, ['-p'], undefined, { timeoutMs: 10_000 }).then(
    () => false,
    () => true,
  );
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
  try {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) return undefined;
    // An extension that never activates: no interpreter from it (the catch below).
    const activated = (await bounded(ext.activate(), 10_000)) as { environments?: { getActiveEnvironmentPath(): { path: string } } } | undefined;
    const found = activated?.environments?.getActiveEnvironmentPath().path;
    if (typeof found !== 'string' || !found) return undefined;
    return (await outsideWorkspace(found)) ? found : undefined;
  } catch {
    return undefined;
  }
}

/** `file` is an absolute path outside every workspace folder, as written and with its links resolved,
 * in a trusted workspace: one the workspace cannot have put there (the module's comment). */
async function outsideWorkspace(file: string): Promise<boolean> {
  if (!path.isAbsolute(file) || vscode.workspace.isTrusted === false) return false;
  const folders = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
  const resolve = (p: string) => fs.realpath(p).catch(() => path.resolve(p));
  const files = [path.resolve(file), await resolve(file)];
  for (const folder of [...folders, ...(await Promise.all(folders.map(resolve)))]) {
    if (files.some((f) => isWithin(f, folder, host.platform))) return false;
  }
  return true;
}

/** A path as the platform's default file system compares it: case-insensitive on Windows (NTFS)
 * and macOS (APFS, HFS+, which also ignore Unicode normalization), normalized, with no trailing
 * separator; case-sensitive elsewhere. Exported for tests. */
export function pathKey(file: string, platform: NodeJS.Platform): string {
  const p = platform === 'win32' ? path.win32 : path.posix;
  let key = p.resolve(file);
  if (key.length > p.parse(key).root.length && key.endsWith(p.sep)) key = key.slice(0, -1);
  if (platform === 'darwin') key = key.normalize('NFC');
  return platform === 'win32' || platform === 'darwin' ? key.toLowerCase() : key;
}

/** The same file or folder, as the platform compares paths. Exported for tests. */
export function samePath(a: string, b: string, platform: NodeJS.Platform): boolean {
  return pathKey(a, platform) === pathKey(b, platform);
}

/** `file` is `folder` or lies under it, as the platform compares paths. Exported for tests. */
export function isWithin(file: string, folder: string, platform: NodeJS.Platform): boolean {
  const [f, root] = [pathKey(file, platform), pathKey(folder, platform)];
  const sep = platform === 'win32' ? '\\' : '/';
  return f === root || f.startsWith(root.endsWith(sep) ? root : root + sep);
}

async function build(
  base: Interpreter,
  envDir: string,
  python: string,
  wheels: Shipped,
  log: vscode.LogOutputChannel,
  report: (message: string) => void,
): Promise<void> {
  report(`creating an environment with ${base.label} (Python ${base.version})…`);
  await fs.rm(envDir, { recursive: true, force: true });
  await run(base.command, [...base.args, ...ISOLATED, '-m', 'venv', envDir], log, { timeoutMs: 300_000 }).catch((error: unknown) => {
    throw venvFailure(base, error as RunError);
  });
  report('installing packages…');
  // Binary wheels only, each checked against the lock's hashes: a platform without a wheel fails in
  // seconds, rather than building from source (pydantic-core's build would download Rust).
  const pip = [...ISOLATED, '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input'];
  await run(python, [...pip, '--only-binary=:all:', '--require-hashes', '-r', wheels.requirements], log, { env: pipProxyEnv(), timeoutMs: 600_000 }).catch(
    (error: unknown) => {
      throw pipFailure(base, error as RunError);
    },
  );
  // The sidecar's own wheel comes from the VSIX, so it is not in the hashed lock.
  await run(python, [...pip, '--no-deps', '--no-index', ...wheels.sidecar], log, { timeoutMs: 120_000 }).catch((error: unknown) => {
    throw new SetupError(`Installing the sidecar into its environment failed: ${(error as RunError).summary}`, [RETRY]);
  });
}

interface Shipped {
  requirements: string;
  sidecar: string[];
}

async function shippedWheels(extensionPath: string): Promise<Shipped> {
  const shipped = path.join(extensionPath, 'python');
  const sidecar = (await fs.readdir(shipped).catch(() => [] as string[])).filter((f) => f.endsWith('.whl')).map((f) => path.join(shipped, f));
  if (!sidecar.length) throw new SetupError(`This copy of the extension is incomplete: ${shipped} holds no sidecar wheel. Reinstall the extension.`, []);
  return { requirements: path.join(shipped, 'requirements.txt'), sidecar };
}

function noPython(chosen: string | undefined, tooOld: string[]): SetupError {
  if (chosen) {
    return new SetupError(
      `The Python in ${settingId('pythonPath')} cannot run the sidecar: ${tooOld.join('; ') || `${chosen} does not exist`}. It needs Python 3.10 or newer: choose another, or clear the setting.`,
      [CHOOSE_INTERPRETER],
    );
  }
  const found = tooOld.length ? ` Found only: ${tooOld.join(', ')}.` : ' No Python was found.';
  return new SetupError(`The Vercel AI Gateway extension needs Python 3.10 or newer.${found} ${installHint()}`, [CHOOSE_INTERPRETER, RETRY]);
}

function installHint(): string {
  const then = 'then Retry, or use Choose Interpreter to pick its executable.';
  if (host.platform === 'darwin') return `Install Python from python.org or with Homebrew (brew install python), ${then}`;
  // No Python it runs has the sidecar's packages: x64 does not run, tiktoken has no Arm or x86 wheel.
  if (runsNoX64()) return WINDOWS_10_ARM;
  if (host.platform === 'win32') return `Install Python from python.org or the Microsoft Store, ${then}`;
  return `Install Python 3.10 or newer with your package manager (for example python3.12), ${then}`;
}

function venvFailure(base: Interpreter, error: RunError): SetupError {
  const with_ = `with ${base.label} (Python ${base.version})`;
  // Debian and Ubuntu split venv (and the pip it bootstraps) out of python3; their hint goes to stdout.
  const apt = /apt(?:-get)? install (python3(?:\.\d+)?-venv)\b/.exec(error.output);
  if (apt) {
    return new SetupError(
      `Could not create the sidecar's Python environment ${with_}: its venv module is not installed. Install it (sudo apt install ${apt[1]}), then Retry, or choose another interpreter.`,
      [CHOOSE_INTERPRETER, RETRY],
      true,
    );
  }
  return new SetupError(`Could not create the sidecar's Python environment ${with_}: ${error.summary}`, [CHOOSE_INTERPRETER, RETRY], true);
}

/** pip ends with "No matching distribution found" whatever went wrong; the cause is earlier in its
 * output. Exported for tests. */
export function pipFailure(base: Interpreter | { version: string; platform: string }, error: RunError): SetupError {
  const out = error.output;
  const index = indexHost(out);
  const unreachable = (why: string, next: string) =>
    new SetupError(`Could not reach the Python package index${index ? ` (${index})` : ''} to install the sidecar's packages: ${why}. ${next}`, [RETRY]);
  const proxy = /Tunnel connection failed: ([^'")\]\n]{1,80})/.exec(out)?.[1] ?? /ProxyError\(['"]([^'"]{1,80})/.exec(out)?.[1];
  if (proxy)
    return unreachable(
      `the proxy refused (${proxy.trim()})`,
      "Check VS Code's http.proxy setting (pip uses it) or ask for the index to be allowed, then Retry.",
    );
  const cert =
    /certificate verify failed: ([^'")(\]\n]{1,100})/.exec(out)?.[1] ??
    (/CERTIFICATE_VERIFY_FAILED|SSLCertVerificationError/.test(out) ? 'certificate verify failed' : undefined);
  if (cert)
    return unreachable(
      `its certificate is not trusted (${cert.trim()})`,
      "A network that inspects TLS needs its CA certificate in the system's trusted certificates or in pip's configuration (cert); then Retry.",
    );
  if (
    /Temporary failure in name resolution|Name or service not known|nodename nor servname|getaddrinfo failed|No address associated with hostname|Failed to resolve/.test(
      out,
    )
  )
    return unreachable('its name could not be resolved (no network, or no DNS)', 'Connect to a network that reaches it, then Retry.');
  const connection =
    /(Network is unreachable|Connection refused|No route to host|Connection reset by peer|timed out|ConnectTimeoutError|ReadTimeoutError)/.exec(out);
  if (connection) return unreachable(`the connection failed (${connection[1]})`, 'Connect to a network that reaches it, then Retry.');
  if (/THESE PACKAGES DO NOT MATCH THE HASHES/.test(out)) {
    const which_ = /^\s+(\S+==\S+) from /m.exec(out);
    return new SetupError(
      `A package downloaded for the sidecar${which_ ? ` (${which_[1]})` : ''} does not match the hash in the extension's lock: the index or a proxy served other bytes than PyPI's. Nothing was installed.`,
      [RETRY],
    );
  }
  const missing = /Could not find a version that satisfies the requirement (\S{1,100}) \(from versions: ([^)]{0,2000})\)/.exec(out);
  if (missing) {
    const [requirement, versions] = [missing[1], missing[2].trim()];
    if (versions && versions !== 'none') {
      const latest = versions
        .split(',')
        .map((v) => v.trim())
        .slice(-3)
        .join(', ');
      return new SetupError(
        `The Python package index${index ? ` (${index})` : ''} does not have ${requirement} yet (its latest: ${latest}): a mirror or private index that lags PyPI. Retry once it has caught up, or point pip at an index that has it.`,
        [RETRY],
      );
    }
    // Windows on Arm: tiktoken publishes no win_arm64 wheel, but Windows 11 runs an x64 Python.
    const arm =
      base.platform === 'win-arm64'
        ? runsNoX64()
          ? ` ${WINDOWS_10_ARM}`
          : " On Windows 11 on Arm an x64 Python runs under Windows' emulation: choose one."
        : '';
    return new SetupError(
      `No prebuilt package of ${requirement} exists for this platform (${base.platform}, Python ${base.version}), and the extension installs prebuilt packages only. Choose a Python for which one exists (CPython 3.10–3.14 on 64-bit Linux, macOS or Windows x64).${arm}`,
      [CHOOSE_INTERPRETER],
      true,
    );
  }
  return new SetupError(`Installing the sidecar's packages failed: ${error.summary}`, [RETRY]);
}

/** The index's host as pip named it; never its path or credentials (a private index's URL may hold a token). */
function indexHost(output: string): string | undefined {
  const url = /Could not fetch URL (https?:\/\/\S+?):? /.exec(output)?.[1] ?? /Looking in indexes: (https?:\/\/[^\s,]+)/.exec(output)?.[1];
  try {
    return url ? new URL(url).host : undefined;
  } catch {
    return undefined;
  }
}

/** pip goes through VS Code's proxy too, as the sidecar does (users set proxies in VS Code, not in the
 * environment): in pip's environment, never on its command line (the URL may hold a password, and
 * the command line is logged). An environment that already names a proxy keeps it. */
export function pipProxyEnv(): NodeJS.ProcessEnv | undefined {
  const proxy = networkSetting('proxy');
  if (typeof proxy !== 'string' || !/^https?:\/\//.test(proxy)) return undefined;
  const env: NodeJS.ProcessEnv = { ...process.env, PIP_PROXY: process.env.PIP_PROXY ?? proxy };
  const noProxy = networkSetting('noProxy');
  if (Array.isArray(noProxy) && noProxy.length && !process.env.NO_PROXY) env.NO_PROXY = noProxy.filter((h) => typeof h === 'string').join(',');
  return env;
}

interface Ready {
  version: string;
  /** pythonPath when it was made (null: found by the search). */
  chosen: string | null;
  /** The interpreter it was made with. */
  base: string;
  /** Where its python led then (a venv's python is a link to the base interpreter). */
  python: string;
  /** The base's "3.12": the environment's packages are built for it. */
  minor: string;
}

/** Bytes of a `.ready` record; a larger one is not ours. */
const MAX_READY = 16_384;

async function writeReady(envDir: string, ready: Ready): Promise<void> {
  await writeFileAtomic(path.join(envDir, '.ready'), JSON.stringify(ready)); // a rename: never opens what is there
}

/** A finished environment that still runs with what the user chose. An environment whose base
 * interpreter was removed or replaced by another minor version (Homebrew upgrades Python at any
 * time) is made again rather than failing every request. */
async function reusable(envDir: string, python: string, version: string, chosen: string | undefined, log: vscode.LogOutputChannel): Promise<boolean> {
  // Bounded and never blocking (storage.ts): global storage may hold anything, a FIFO too.
  const text = await readBounded(path.join(envDir, '.ready'), MAX_READY).then(
    (bytes) => bytes.toString('utf8'),
    () => undefined,
  );
  const ready = parseReady(text);
  if (!ready || ready.version !== version) return false;
  if (ready.chosen === null ? chosen !== undefined : chosen === undefined || !samePath(ready.chosen, chosen, host.platform)) {
    log.info(`setup: ${settingId('pythonPath')} changed; the sidecar's environment is made again.`);
    return false;
  }
  const real = await fs.realpath(python).catch(() => undefined);
  if (real === undefined || !(await exists(ready.base))) {
    log.warn(`setup: the sidecar's environment no longer runs (${ready.base} is gone); it is made again.`);
    return false;
  }
  if (samePath(real, ready.python, host.platform)) return true;
  // The link leads elsewhere now (an upgrade): still the same minor version? One run tells.
  const now = await run(python, [...ISOLATED, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], log, { timeoutMs: 30_000 }).catch(() => undefined);
  if (now?.stdout.trim() === ready.minor) {
    await writeReady(envDir, { ...ready, python: real }).catch(() => undefined);
    return true;
  }
  log.warn(
    `setup: the sidecar's environment was made for Python ${ready.minor}, and ${python} is now ${now?.stdout.trim() || 'not runnable'}; it is made again.`,
  );
  return false;
}

function parseReady(text: string | undefined): Ready | undefined {
  if (!text || text.length > MAX_READY) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Ready>;
    const strings = [value.version, value.base, value.python, value.minor].every((v) => typeof v === 'string');
    return strings && (value.chosen === null || typeof value.chosen === 'string') ? (value as Ready) : undefined;
  } catch {
    return undefined; // a version before this record: made again
  }
}

/** Lets the user pick a Python executable in a file dialog (in a remote window, on the remote
 * machine), checks it, and saves it as pythonPath. Undefined when nothing usable was picked. */
export async function chooseInterpreter(log: vscode.LogOutputChannel): Promise<string | undefined> {
  const current = chosenPython();
  const picked = await vscode.window.showOpenDialog({
    canSelectFiles: true,
    canSelectFolders: false,
    canSelectMany: false,
    title: 'Choose a Python 3.10 or newer for Vercel AI Gateway',
    openLabel: 'Use This Python',
    defaultUri: current ? vscode.Uri.file(path.dirname(current)) : undefined,
    filters: host.platform === 'win32' ? { Python: ['exe'] } : undefined,
  });
  const file = picked?.[0]?.fsPath;
  if (!file) return undefined;
  const probed = await probe({ command: file, args: [], label: file }, log);
  if (typeof probed === 'string') {
    showError(`${file} cannot run the sidecar: it ${probed}. It needs Python 3.10 or newer.`, CHOOSE_INTERPRETER);
    return undefined;
  }
  await vscode.workspace.getConfiguration(SECTION).update('pythonPath', file, vscode.ConfigurationTarget.Global);
  return file;
}

/** The file a command names: itself when it is a path, else the first match on PATH. Nothing runs
 * what is not there, so a missing name costs no process. */
async function which(command: string): Promise<string | undefined> {
  if (path.isAbsolute(command) || command.includes('/') || command.includes('\\')) return (await isFile(command)) ? command : undefined;
  const suffixes = host.platform === 'win32' ? ['.exe', ''] : [''];
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    for (const suffix of suffixes) {
      const file = path.join(dir, command + suffix);
      if (await isFile(file)) return file;
    }
  }
  return undefined;
}

async function isFile(file: string): Promise<boolean> {
  return fs.stat(file).then(
    (stat) => stat.isFile(),
    // An App Execution Alias (a Microsoft Store Python) is a 0-byte reparse point that runs, but
    // which Node's stat cannot follow (EACCES, nodejs/node#36790); lstat reads it (libuv 1.38+
    // reports it as a link). Something there that is not a folder is worth a probe.
    () =>
      host.platform === 'win32' &&
      fs.lstat(file).then(
        (stat) => !stat.isDirectory(),
        () => false,
      ),
  );
}

/** A command that failed: `output` is all it printed (pip's and venv's causes are spread over
 * stdout and stderr), `summary` its last line. */
export class RunError extends Error {
  constructor(
    readonly summary: string,
    readonly output: string,
  ) {
    super(summary);
  }
}

function run(
  command: string,
  args: string[],
  log: vscode.LogOutputChannel | undefined,
  options: { env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ stdout: string }> {
  log?.info(`setup: ${command} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: options.timeoutMs, maxBuffer: 16 * 1024 * 1024, env: options.env, windowsHide: true }, (error, stdout, stderr) => {
      const output = `${stdout}\n${stderr}`.trim();
      if (error) {
        if (output) log?.info(output);
        const timedOut = error.killed && error.signal === 'SIGTERM';
        const last = output
          .split('\n')
          .reverse()
          .find((line) => line.trim())
          ?.trim();
        reject(new RunError(timedOut ? `no answer within ${options.timeoutMs / 1000} s` : (last ?? error.message), output));
      } else {
        if (stderr.trim()) log?.info(stderr.trim());
        resolve({ stdout });
      }
    });
  });
}

async function removeOldEnvironments(storage: string, keep: string): Promise<void> {
  for (const entry of await fs.readdir(storage).catch(() => [] as string[])) {
    const full = path.join(storage, entry);
    if (entry.startsWith('sidecar-') && full !== keep) await fs.rm(full, { recursive: true, force: true });
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
