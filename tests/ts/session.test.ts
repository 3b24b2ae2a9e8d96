// SidecarConnection (its session on a vscode-jsonrpc connection), against sidecars that hang, exit, fail
// `initialize`, crash or write garbage (tests/ts/fixtures/fake-sidecar.ts) and against the real
// sidecar: every request ends in bounded time with a message that says what happened, no process
// is left behind, and the next request starts a fresh sidecar.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { GatewayChatError } from '../../extension/errors';
import { defaultLimits, SidecarConnection, SidecarLimits } from '../../extension/sidecar/connection';
import { until } from './until';

const ROOT = path.resolve(__dirname, '../../..');
const PYTHON = process.env.GATEWAY_LM_PYTHON ?? path.join(ROOT, '.venv/bin/python');
const LIMITS: SidecarLimits = { startTimeoutMs: 2000, stopTimeoutMs: 500, maxRestartCount: 2 };
let dir: string;
let pidFile: string;
const connections: SidecarConnection[] = [];

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-session-'));
  pidFile = path.join(dir, 'pids');
  // The "python" the extension runs: records its pid, then becomes the sidecar the test chose.
  const wrapper = path.join(dir, 'python');
  const fake = path.join(__dirname, 'fixtures', 'fake-sidecar.js');
  fs.writeFileSync(
    wrapper,
    `#!/bin/sh
echo $$ >> "${pidFile}"
if [ "$SIDECAR_MODE" = real ]; then exec "${PYTHON}" "$@"; fi
exec "${process.execPath}" "${fake}" "$SIDECAR_MODE"
`,
    { mode: 0o755 },
  );
  process.env.AI_GATEWAY_LM_PYTHON = wrapper;
});

after(() => {
  delete process.env.AI_GATEWAY_LM_PYTHON;
  delete process.env.SIDECAR_MODE;
  fs.rmSync(dir, { recursive: true, force: true });
});

// Every test ends with every process it started gone.
afterEach(async () => {
  connections.splice(0).forEach((c) => c.dispose());
  for (const pid of pids()) await until(() => !alive(pid), `process ${pid} exits`);
});

let log = new stub.LogOutputChannel(); // of the last connect()

function connect(mode: string, limits: SidecarLimits = LIMITS): SidecarConnection {
  process.env.SIDECAR_MODE = mode;
  fs.writeFileSync(pidFile, '');
  stub.shownErrors.length = 0;
  const context = { globalStorageUri: { fsPath: dir } } as unknown as vscode.ExtensionContext;
  log = new stub.LogOutputChannel();
  const channel = log as unknown as vscode.LogOutputChannel;
  const connection = new SidecarConnection(context, channel, channel, limits);
  connections.push(connection);
  return connection;
}

function pids(): number[] {
  if (!fs.existsSync(pidFile)) return [];
  return fs.readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Awaits the promise's rejection: a GatewayChatError of kind `sidecar` matching `message`. */
async function fails(promise: Promise<unknown>, message: RegExp): Promise<GatewayChatError> {
  const error = await promise.then(
    () => assert.fail('the request succeeded'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof GatewayChatError, `a GatewayChatError, got ${String(error)}`);
  assert.equal(error.kind, 'sidecar');
  assert.match(error.message, message);
  assert.doesNotMatch(error.message, /Client is not running|restarts by itself/);
  return error;
}

// The fake sidecar answers any method with its name.
const echo = (connection: SidecarConnection) => connection.request('gateway/configure', { settings: {} });

test('the real sidecar answers; Restart Server stops it for sure and the new one answers', async () => {
  const connection = connect('real', { ...LIMITS, startTimeoutMs: 30_000 });
  const count = () => connection.request('gateway/countTokens', { model: 'openai/gpt-5', texts: ['hello world'] });
  assert.deepEqual(await count(), { counts: [2] });
  const [first] = pids();
  await connection.restart();
  assert.equal(alive(first), false, 'the old sidecar is gone when restart resolves');
  assert.deepEqual(await count(), { counts: [2] });
  assert.equal(pids().length, 2);
  assert.equal(alive(pids()[1]), true);
});

// Counts are Copilot's most frequent request; each must find its own answer among parts and log
// lines read with it (in the order read: parts before the answer that follows them), fail when the
// process dies, and carry the sidecar's errors, a malformed one in words (frames.ts).
const countOf = (connection: SidecarConnection, text: string) => connection.request('gateway/countTokens', { model: 'm', texts: [text] });

test(
  'counts answered out of order, in one read with parts and a log line: each count gets its own answer, the parts are shown',
  { timeout: 15_000 },
  async () => {
    const connection = connect('counts');
    const parts: unknown[] = [];
    connection.onParts('r1', (p) => parts.push(...p));
    assert.deepEqual(await countOf(connection, 'alone'), { counts: [5] });
    const [a, b] = await Promise.all([countOf(connection, 'aaa'), countOf(connection, 'bbbbbbb')]);
    assert.deepEqual([a, b], [{ counts: [3] }, { counts: [7] }]);
    assert.deepEqual(parts, [{ type: 'text', value: 'între' }]);
    assert.ok(
      log.lines.some((line) => line.includes('between the answers')),
      'the log line between the answers is logged',
    );
    assert.deepEqual(await echo(connection), { method: 'gateway/configure' }, 'the client connection still answers');
  },
);

test('a count in flight when the sidecar dies fails at once with what happened; the restarted sidecar answers the next', { timeout: 15_000 }, async () => {
  const connection = connect('counts');
  assert.deepEqual(await countOf(connection, 'alone'), { counts: [5] });
  const waiting = countOf(connection, 'held'); // waits in the sidecar for a second count
  await fails(countOf(connection, 'crash'), /stopped while answering and is being restarted/);
  await fails(waiting, /stopped while answering and is being restarted/);
  await until(() => pids().length === 2, 'the client restarts the sidecar', 5000);
  assert.deepEqual(await countOf(connection, 'alone again'), { counts: [11] });
});

test('a count answered with an error that is not JSON-RPC fails with a message that says so', { timeout: 15_000 }, async () => {
  const connection = connect('counts');
  const error = await countOf(connection, 'malformed').then(
    () => assert.fail('the count succeeded'),
    (e: unknown) => e as Error,
  );
  assert.match(error.message, /answered with an error that is not a JSON-RPC error/);
  assert.deepEqual(await countOf(connection, 'alone'), { counts: [5] });
});

test('a count whose answer is lost or comes under another id fails in bounded time; the next count is answered', { timeout: 15_000 }, async () => {
  const connection = connect('counts', { ...LIMITS, countTimeoutMs: 300 });
  for (const text of ['lost', 'wrongid']) {
    const error = await countOf(connection, text).then(
      () => assert.fail(`the count of ${text} succeeded`),
      (e: unknown) => e as Error,
    );
    assert.match(error.message, /did not answer gateway\/countTokens within 0\.3 s/, text);
    assert.deepEqual(await countOf(connection, 'alone'), { counts: [5] }, `after ${text}`);
  }
});

test('a frame whose Content-Length runs past what was written ends the sidecar clearly; the next count starts a new one', { timeout: 15_000 }, async () => {
  const connection = connect('counts', { ...LIMITS, countTimeoutMs: 10_000, partialFrameMs: 300 });
  assert.deepEqual(await countOf(connection, 'alone'), { counts: [5] });
  await fails(countOf(connection, 'longframe'), /not JSON-RPC \(unframed output: a frame cut short \(\d+ of its \d+ bytes, and nothing more for 0\.3 s\)\)/);
  assert.deepEqual(await countOf(connection, 'alone again'), { counts: [11] });
  await until(() => pids().length === 2, 'a new sidecar answered');
});

test('the real sidecar: a bad count gets its clear invalid-params error, and the next count is exact', { timeout: 40_000 }, async () => {
  const connection = connect('real', { ...LIMITS, startTimeoutMs: 30_000 });
  const count = (params: unknown) => connection.request('gateway/countTokens', params as { model: string; texts: string[] });
  assert.deepEqual(await count({ model: 'openai/gpt-5', texts: ['hello world'] }), { counts: [2] });
  for (const bad of [{ model: 'openai/gpt-5', texts: 'hello' }, { model: 'x'.repeat(100_000), texts: ['hello'] }, { texts: [{ role: 9 }] }]) {
    const error = await count(bad).then(
      () => assert.fail(`${JSON.stringify(bad).slice(0, 60)} was counted`),
      (e: unknown) => e as { code?: unknown; message: string; data?: { kind?: unknown } },
    );
    assert.equal(error.code, -32602);
    assert.equal(error.data?.kind, 'bad_request');
    assert.match(error.message, /^Invalid parameters: (texts|model)/);
    assert.doesNotMatch(error.message, /Traceback|File "/);
  }
  assert.deepEqual(await count({ model: 'openai/gpt-5', texts: ['hello world', 'hello'] }), { counts: [2, 1] });
});

test('a request after the window closed (a credits refresh after a chat) starts no new sidecar', async () => {
  const connection = connect('echo');
  assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
  connection.dispose();
  await until(() => !alive(pids()[0]), 'the sidecar stops');
  await fails(echo(connection), /shutting down/);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(pids().length, 1, 'no sidecar was started after dispose');
});

test('a sidecar that never answers initialize: the request fails after the start timeout, the process is killed, the next request starts afresh', async () => {
  const connection = connect('hang');
  const started = Date.now();
  await fails(echo(connection), /did not start within 2 s and was stopped\. Run 'Vercel AI Gateway: Restart Server' to try again.*Show Logs/);
  const took = Date.now() - started;
  assert.ok(took >= 1900 && took < 4000, `failed after ${took} ms`);
  await until(() => !alive(pids()[0]), 'the hung sidecar is killed');
  assert.ok(
    stub.shownErrors.some((e) => /did not start within 2 s/.test(e.message) && e.actions.includes('Show Logs') && e.actions.includes('Restart Server')),
    'one clear pop-up',
  );
  process.env.SIDECAR_MODE = 'echo';
  assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
  assert.equal(pids().length, 2);
});

test('Restart Server while the start hangs: the waiting request fails at once and no process is left', async () => {
  const connection = connect('hang');
  const waiting = echo(connection);
  await until(() => pids().length === 1, 'the sidecar is spawned');
  const restarted = Date.now();
  const restart = connection.restart();
  await fails(waiting, /was restarted while this request waited/);
  assert.ok(Date.now() - restarted < 1000, 'the waiting request failed at once');
  await until(() => !alive(pids()[0]), 'the first sidecar is killed', 1000);
  // The new one hangs too: the restart ends with the start timeout, and leaves nothing running.
  await fails(restart, /did not start within 2 s/);
  assert.equal(pids().length, 2);
  await until(() => !alive(pids()[1]), 'the second sidecar is killed');
});

test('a running sidecar that ignores shutdown and SIGTERM: restart kills it and fails its requests at once', async () => {
  const connection = connect('stuck');
  await connection.restart(); // starts it
  const [first] = pids();
  const inFlight = fails(echo(connection), /was restarted/); // never answered by the sidecar
  const restarted = Date.now();
  process.env.SIDECAR_MODE = 'echo';
  await connection.restart();
  assert.ok(Date.now() - restarted < 2500, `restart took ${Date.now() - restarted} ms`);
  assert.equal(alive(first), false, 'the stuck sidecar is killed');
  await inFlight;
  assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
});

test('initialize answered with an error: the request fails with it, and the next request starts afresh', async () => {
  const connection = connect('initfail');
  await fails(echo(connection), /could not start \(initialize failed on purpose\)\. Run 'Vercel AI Gateway: Restart Server' to try again/);
  await until(() => !alive(pids()[0]), 'the sidecar is killed');
  process.env.SIDECAR_MODE = 'echo';
  assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
});

test('a sidecar that exits at once: the request fails within the start timeout and says how it exited', async () => {
  const connection = connect('exit');
  const started = Date.now();
  await fails(echo(connection), /exited as it started \(code 3\)\. Run 'Vercel AI Gateway: Restart Server' to try again/);
  assert.equal(pids().length, 1, 'not retried before the first start succeeded');
  assert.ok(Date.now() - started < 3000);
  process.env.SIDECAR_MODE = 'echo';
  assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
});

for (const [mode, detail] of [
  ['garbage', /unframed output: a header line without a colon/],
  ['badjson', /JSON/],
] as const) {
  test(`output that is not JSON-RPC (${mode}): the request fails at once, the process is killed, the next request starts afresh`, async () => {
    const connection = connect(mode);
    const error = await fails(echo(connection), /sent output that is not JSON-RPC \(.*\) and was stopped\. The next request starts a new one/);
    assert.match(error.message, detail);
    await until(() => !alive(pids()[0]), 'the sidecar is killed');
    process.env.SIDECAR_MODE = 'echo';
    assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
    assert.equal(pids().length, 2);
  });
}

test('the restart limit: crashes are restarted, then the client gives up and the next request starts a new sidecar', async () => {
  const connection = connect('crash');
  await fails(echo(connection), /stopped while answering and is being restarted\. Try again/);
  // What it printed on stderr is in the logs, line by line (the session reads stderr itself).
  await until(() => log.lines.includes('error RuntimeError: crashing on purpose'), 'the crash is logged');
  await fails(echo(connection), /stopped while answering and is being restarted/);
  await fails(echo(connection), /stopped 3 times within 3 minutes, so it is not restarted by itself\. The next request starts a new one/);
  assert.equal(pids().length, 3, 'two restarts by the client, then none');
  process.env.SIDECAR_MODE = 'echo';
  assert.deepEqual(await echo(connection), { method: 'gateway/configure' });
  assert.equal(pids().length, 4);
});

test('AI_GATEWAY_LM_START_TIMEOUT_MS sets the start bound only when it is a whole number of ms from 100 to 600,000', () => {
  const start = (value: string | undefined) => defaultLimits({ AI_GATEWAY_LM_START_TIMEOUT_MS: value }).startTimeoutMs;
  assert.equal(start('2000'), 2000);
  assert.equal(start('600000'), 600_000);
  for (const bad of [undefined, '', '99', '600001', '1e5', '-2000', '2000.5', ' 2000', 'NaN', 'Infinity']) assert.equal(start(bad), 30_000, String(bad));
});

test('a long-lived sidecar keeps nothing per request: 4,000 answered requests grow the heap after GC by under 1 MB', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const heap = () => (gc(), process.memoryUsage().heapUsed);
  const connection = connect('echo');
  const burst = async (count: number) => {
    for (let i = 0; i < count; i += 100) await Promise.all(Array.from({ length: 100 }, () => echo(connection)));
  };
  await burst(1000); // the sidecar started, the code warm, the pools filled
  const before = heap();
  await burst(4000);
  const grown = heap() - before;
  assert.ok(grown < 1 << 20, `the heap grew by ${(grown / 1024).toFixed(0)} KB`);
});
