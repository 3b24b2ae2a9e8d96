// First start: find Python ≥ 3.10, create a private environment in global storage, install the
// sidecar wheel shipped in the VSIX with its pinned dependencies. Reused until the version changes.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { networkSetting, setting } from './config';
import { plain } from './notify';

export class SetupError extends Error {
  constructor(
    message: string,
    readonly canChooseInterpreter: boolean,
  ) {
    super(message);
  }
}

const MIN_PYTHON: [number, number] = [3, 10];

export async function sidecarPython(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Promise<string> {
  const override = process.env.AI_GATEWAY_LM_PYTHON; // a Python that already has the sidecar (development, tests)
  if (override) return override;
  const version = (context.extension.packageJSON as { version: string }).version;
  const envDir = path.join(context.globalStorageUri.fsPath, `sidecar-${version}`);
  const python = path.join(envDir, process.platform === 'win32' ? 'Scripts\\python.exe' : 'bin/python');
  if (await exists(path.join(envDir, '.ready'))) return python;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Vercel AI Gateway: setting up (first start only)' },
    async (progress) => {
      progress.report({ message: 'finding Python…' });
      const base = await findInterpreter(log);
      progress.report({ message: plain(`creating an environment with ${base}…`) }); // the path is a setting's
      await fs.rm(envDir, { recursive: true, force: true });
      await run(base, ['-m', 'venv', envDir], log);
      progress.report({ message: 'installing packages…' });
      const shipped = path.join(context.extensionPath, 'python');
      const wheels = (await fs.readdir(shipped)).filter((f) => f.endsWith('.whl')).map((f) => path.join(shipped, f));
      const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input'];
      await run(python, [...pip, '-r', path.join(shipped, 'requirements.txt'), ...wheels], log, pipProxyEnv()).catch((error) => {
        throw new SetupError(`Installing the sidecar's packages failed: ${(error as Error).message}`, false);
      });
      await fs.writeFile(path.join(envDir, '.ready'), version);
    },
  );
  await removeOldEnvironments(context.globalStorageUri.fsPath, envDir);
  return python;
}

async function findInterpreter(log: vscode.LogOutputChannel): Promise<string> {
  const candidates = [setting<string>('pythonPath') || undefined, await pythonExtensionInterpreter(), 'python3', 'python'].filter((c): c is string => !!c);
  const tooOld: string[] = [];
  for (const candidate of candidates) {
    const version = await run(candidate, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], log).catch(() => '');
    const [major, minor] = version.trim().split('.').map(Number);
    if (!major) continue;
    if (major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1])) return candidate;
    tooOld.push(`${candidate} is ${version.trim()}`);
  }
  const found = tooOld.length ? ` Found only: ${tooOld.join(', ')}.` : ' No Python was found.';
  throw new SetupError(`The Vercel AI Gateway extension needs Python 3.10 or newer.${found}`, true);
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
  try {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) return undefined;
    const api = (await ext.activate()) as { environments?: { getActiveEnvironmentPath(): { path: string } } };
    return api.environments?.getActiveEnvironmentPath().path;
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

function run(command: string, args: string[], log: vscode.LogOutputChannel, env?: NodeJS.ProcessEnv): Promise<string> {
  log.info(`setup: ${command} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: 600_000, maxBuffer: 16 * 1024 * 1024, env }, (error, stdout, stderr) => {
      if (stderr.trim()) log.info(stderr.trim());
      if (error) reject(new Error(stderr.trim().split('\n').pop() || error.message));
      else resolve(stdout);
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
