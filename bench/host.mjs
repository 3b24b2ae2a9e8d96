// What the bench runs: the shipped bundle (dist/extension.js) activated under a stub `vscode`, the
// provider VS Code receives, the loopback fake gateway, and the statistics every row uses.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const PYTHON = process.env.GATEWAY_LM_PYTHON ?? path.join(ROOT, '.venv/bin/python');
const children = [];
const storage = []; // each activation's global storage, removed when the bench ends
process.on('exit', () => {
  children.forEach((c) => c.kill('SIGKILL'));
  storage.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 }));
});

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === 'vscode' ? path.join(ROOT, 'bench/vscode.cjs') : resolve.call(this, request, ...rest);
};
const require = Module.createRequire(import.meta.url);
export const vscode = require('vscode');
// The sidecar comes from the development venv rather than a first-start setup (a pip install per
// activation would measure pip); everything else is the shipped bundle.
process.env.AI_GATEWAY_LM_PYTHON = PYTHON;
delete process.env.AI_GATEWAY_API_KEY;
const bundle = require(path.join(ROOT, 'dist/extension.js'));

v8.setFlagsFromString('--expose-gc');
/** V8's collector: `gc()` a full collection (the soak samples memory after one: what is kept, not what
 * is pending), `gc({ type: 'minor' })` a scavenge of the young generation only. */
export const gc = vm.runInNewContext('gc');

export const median = (xs) => percentile(xs, 50);
export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
export const now = () => performance.timeOrigin + performance.now(); // wall clock, sub-millisecond
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startGateway() {
  const child = spawn(PYTHON, [path.join(ROOT, 'tests/fake_gateway.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const port = await new Promise((r) => child.stdout.once('data', (c) => r(/PORT (\d+)/.exec(String(c))[1])));
  return `http://127.0.0.1:${port}`;
}

export async function gatewayRequests(gateway) {
  return (await fetch(`${gateway}/_requests`)).json();
}

export function storageDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ai-gateway-lm-bench-'));
  storage.push(dir);
  return dir;
}

const profileSecrets = new Map(); // storage dir → its SecretStorage

/** activate() of the shipped bundle, as VS Code runs it, with `settings` over the bench's; returns
 * the provider it registered. The extension's folder is the repository (the sidecar from the
 * development venv), or an unpacked VSIX (bench/firststart.mjs). */
export async function activate(dir, gateway, settings = {}, { extensionPath = ROOT, version = 'bench' } = {}) {
  vscode.settings['vercelAiGateway.baseUrl'] = `${gateway}/v1`;
  vscode.settings['vercelAiGateway.maxRetries'] = 0;
  Object.assign(vscode.settings, settings);
  // A restart keeps the profile's secret storage, as it keeps global storage.
  if (!profileSecrets.has(dir)) profileSecrets.set(dir, new Map([['vercelAiGateway.apiKey', 'bench-key-0123456789']]));
  const secrets = profileSecrets.get(dir);
  const context = {
    subscriptions: [],
    globalStorageUri: { fsPath: dir },
    extensionPath,
    extension: { packageJSON: { version } },
    // What Copilot's own requests touch (the small-task prompt, the harness notice): a window's state.
    globalState: memento(),
    secrets: {
      get: async (k) => secrets.get(k),
      store: async (k, v) => void secrets.set(k, v),
      delete: async (k) => void secrets.delete(k),
      onDidChange: () => ({ dispose() {} }),
    },
  };
  const before = new Set(sidecarPids());
  await bundle.activate(context);
  const provider = vscode.registered.providers.get('vercel-ai-gateway');
  // VS Code asks for the models at start-up; that starts the sidecar.
  const token = new vscode.CancellationTokenSource().token;
  await provider.provideLanguageModelChatInformation({ silent: true }, token);
  await provider.refresh();
  const pid = sidecarPids().find((p) => !before.has(p));
  return {
    provider,
    context,
    pid,
    async deactivate() {
      await bundle.deactivate(); // as VS Code shuts an extension down: deactivate(), then the disposables
      for (const d of context.subscriptions) await d.dispose?.();
      await sleep(50);
    },
  };
}

function memento() {
  const values = new Map();
  return { get: (key, fallback) => values.get(key) ?? fallback, update: async (key, value) => void values.set(key, value), keys: () => [...values.keys()] };
}

/** The sidecar processes this bench started (children of this process running gateway_lm). */
export function sidecarPids() {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('gateway_lm')) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const TICK_MS = 1000 / 100; // USER_HZ
/** CPU time of a process in ms (user + system), from /proc: 10 ms resolution, so sum over runs. */
export function processCpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

export function rssMb(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
}

/** This process's CPU time in ms: the extension host's share of the work. */
export function hostCpuMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

export function model(id) {
  return { id, name: id, family: id, version: '1', maxInputTokens: 100000, maxOutputTokens: 8000, capabilities: { toolCalling: true } };
}
