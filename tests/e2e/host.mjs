// Starts and stops the pieces of an end-to-end run: the fake gateway, code-server with the VSIX
// installed, and headless Chromium. Everything is torn down whatever happens. The bench's soak in the
// real host uses it too (bench/from-tests.cjs): no node:test or assert here.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const children = [];
const scratch = []; // each run's folders (~75 MB with the sidecar's venv): removed at cleanup

export function cleanup() {
  for (const child of children.splice(0)) {
    try {
      // The whole process group: code-server's hosts, the sidecar. Windows has no process groups to
      // signal (tests/e2e/electron.mjs runs there): the child itself.
      if (process.platform === 'win32') child.kill();
      else process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  if (process.env.AI_GATEWAY_LM_KEEP_SCRATCH) return; // to look at a run's logs and storage afterwards
  for (const dir of scratch.splice(0)) {
    try {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch (error) {
      console.log(`could not remove ${dir}: ${error.message}`);
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => (cleanup(), process.exit(130)));
process.on('exit', cleanup);

function start(command, args, options) {
  const child = spawn(command, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...options });
  children.push(child);
  return child;
}

export const PYTHON = process.env.GATEWAY_LM_PYTHON ?? path.join(ROOT, '.venv/bin/python');
export const VSIX = path.join(ROOT, 'ai-gateway-lm.vsix');
export const FAKE_KEY = 'e2e-fake-key-0123456789';
/** Which VS Code a run uses (tests/e2e/setup-host.sh): the newest (1.139), or engines.vscode's (1.133). */
export const HOST = process.env.AI_GATEWAY_LM_HOST ?? 'newest';
if (!['newest', 'oldest'].includes(HOST)) throw new Error(`AI_GATEWAY_LM_HOST is '${HOST}': newest or oldest`);
/** Screenshots and captures, a folder per host: `make test` runs the UI steps on both, under the
 * same names, and the oldest host's run would otherwise replace the newest's. */
export const ARTIFACTS = path.join(process.env.AI_GATEWAY_LM_ARTIFACTS ?? '/tmp/ai-gateway-lm-e2e', HOST);

/** Everything a run needs before code-server starts: the cached host, scratch folders, the fake
 * gateway, a port, the environment (the key arrives as a user's environment would bring it). */
export async function prepareRun(name, settings, { keyInEnvironment = true } = {}) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const old of fs.readdirSync(ARTIFACTS).filter((f) => f.startsWith(name))) fs.rmSync(path.join(ARTIFACTS, old)); // no stale screenshots
  const cache = hostCache();
  const dirs = scratchDirs(name);
  const gateway = await startGateway(PYTHON);
  const port = await freePort();
  const env = hostEnv(cache, dirs, { FAKE_GATEWAY_URL: gateway, ...(keyInEnvironment ? { AI_GATEWAY_API_KEY: FAKE_KEY } : {}) });
  writeSettings(dirs, {
    'vercelAiGateway.baseUrl': `${gateway}/v1`,
    'vercelAiGateway.logLevel': 'debug',
    'workbench.startupEditor': 'none',
    'telemetry.telemetryLevel': 'off',
    ...settings,
  });
  return { cache, dirs, gateway, port, env };
}

export function hostCache() {
  const out = execFileSync('bash', [path.join(ROOT, 'tests/e2e/setup-host.sh'), HOST], { stdio: ['ignore', 'pipe', 'inherit'] });
  return String(out).trim().split('\n').at(-1);
}

export async function startGateway(python) {
  const child = start(python, [path.join(ROOT, 'tests/fake_gateway.py')], {});
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (chunk) => resolve(Number(/PORT (\d+)/.exec(String(chunk))[1])));
    child.once('exit', (code) => reject(new Error(`fake gateway exited ${code}`)));
  });
  return `http://127.0.0.1:${port}`;
}

export function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export function scratchDirs(name) {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), `agl-${name}-`));
  scratch.push(base);
  const dirs = Object.fromEntries(['home', 'config', 'data', 'cache', 'tmp', 'ud', 'ext', 'ws'].map((d) => [d, path.join(base, d)]));
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  return { base, ...dirs };
}

export function hostEnv(cache, dirs, extra) {
  return {
    PATH: `${cache}/node/bin:${process.env.PATH}`,
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_CACHE_HOME: dirs.cache,
    TMPDIR: dirs.tmp,
    PIP_CACHE_DIR: path.join(cache, 'pip'), // the sidecar's first-start install, faster on a second run
    PIP_DISABLE_PIP_VERSION_CHECK: '1',
    ...extra,
  };
}

export function writeSettings(dirs, settings) {
  const user = path.join(dirs.ud, 'User');
  fs.mkdirSync(user, { recursive: true });
  fs.writeFileSync(path.join(user, 'settings.json'), JSON.stringify(settings, null, 2));
}

export function installVsix(cache, dirs, env, vsix) {
  execFileSync(
    `${cache}/code-server/node_modules/.bin/code-server`,
    ['--user-data-dir', dirs.ud, '--extensions-dir', dirs.ext, '--install-extension', vsix, '--force'],
    {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 300_000, // a few seconds; past this it is stopped and the run fails naming the command
    },
  );
}

export async function startCodeServer(cache, dirs, env, port, extra = []) {
  const args = [
    ...extra,
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--user-data-dir',
    dirs.ud,
    '--extensions-dir',
    dirs.ext,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
  ];
  // VS Code reads a test payload only with its smoke-test driver on; code-server 4.133 cannot ask.
  const child =
    HOST === 'newest'
      ? start(`${cache}/code-server/node_modules/.bin/code-server`, [...args, '--vscode-option', 'enable-smoke-test-driver'], { env, cwd: dirs.ws })
      : start(`${cache}/node/bin/node`, [path.join(ROOT, 'tests/e2e/with-smoke-driver.cjs'), `${cache}/code-server/node_modules/code-server`, ...args], {
          env,
          cwd: dirs.ws,
        });
  const log = fs.createWriteStream(path.join(dirs.base, 'code-server.log'));
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return child;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('code-server did not start');
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** The logs a reader needs when a run fails: extension host, sidecar (our output channel), gateway. */
/** Every request the fake gateway at `gatewayUrl` received, in order (its /_requests log). */
export async function gatewayRequests(gatewayUrl) {
  return (await fetch(`${gatewayUrl}/_requests`, { signal: AbortSignal.timeout(10_000) })).json();
}

export async function printDiagnostics(dirs, gatewayUrl) {
  const files = [];
  const walk = (dir) =>
    fs.existsSync(dir) &&
    fs.readdirSync(dir, { withFileTypes: true }).forEach((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : files.push(path.join(dir, e.name))));
  walk(path.join(dirs.ud, 'logs'));
  for (const file of files.filter((f) => /exthost\.log$|Vercel AI Gateway|remoteexthost\.log$/.test(f))) {
    console.log(`\n===== ${path.relative(dirs.base, file)} (last 80 lines) =====`);
    console.log(fs.readFileSync(file, 'utf8').split('\n').slice(-80).join('\n'));
  }
  if (gatewayUrl) {
    const log = await fetch(`${gatewayUrl}/_requests`, { signal: AbortSignal.timeout(10_000) }).then(
      (r) => r.json(),
      () => [],
    );
    console.log(`\n===== fake gateway: ${log.length} requests =====`);
    for (const entry of log)
      console.log(
        `${entry.path} scenario=${entry.scenario} model=${entry.body?.model} items=${entry.body?.input?.length} tools=${entry.body?.tools?.length ?? 0}`,
      );
  }
}

/** A repository's settings that try to send the key elsewhere (issue 26 §2): the workspace's
 * .vscode/settings.json points baseUrl at a trap that records whatever reaches it. baseUrl is
 * application-scoped, so VS Code must ignore it; connectTimeout (window-scoped) shows the file is
 * read. Returns the trap's URL, what reached it, and the server to close. */
export async function workspaceTrap(dirs) {
  const trapped = [];
  const trap = http.createServer((request, response) => {
    trapped.push(`${request.method} ${request.url}`);
    response.writeHead(500).end();
  });
  await new Promise((resolve) => trap.listen(0, '127.0.0.1', resolve));
  const trapUrl = `http://127.0.0.1:${trap.address().port}/v1`;
  fs.mkdirSync(path.join(dirs.ws, '.vscode'), { recursive: true });
  fs.writeFileSync(
    path.join(dirs.ws, '.vscode', 'settings.json'),
    JSON.stringify({
      'vercelAiGateway.baseUrl': trapUrl,
      'vercelAiGateway.spend.maxRequestCost': 1000,
      'vercelAiGateway.usage.retentionDays': 1,
      'vercelAiGateway.connectTimeout': 9,
    }),
  );
  return { trap, trapped, trapUrl };
}
