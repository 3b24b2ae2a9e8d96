// The shipped bundle (dist/extension.js: `node extension/build.mjs`, which `make test-node` runs first)
// activated under the stub `vscode`, with the real vscode-jsonrpc inside it, against sidecars that
// never answer `initialize`, exit at once, or answer it with garbage
// (tests/ts/fixtures/fake-sidecar.ts). The user sees one message per failure, in our words, naming
// what to do, and no library's own ("couldn't create connection … Code: -32097", "Client is not
// running" with a stack), in a notification, a chat's error or the log; Restart Server shows its
// progress and then its outcome.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { until } from './until';

const ROOT = path.resolve(__dirname, '../../..');
const BUNDLE = path.join(ROOT, 'dist/extension.js');
const load = createRequire(__filename); // `vscode` inside it resolves to the stub (register.ts)
const START_MS = 2000;
const RESTART = 'vercelAiGateway.restartServer';
const RESTART_TITLE = 'Vercel AI Gateway: restarting the sidecar…';
const RESTARTED = 'Vercel AI Gateway: the sidecar restarted.';
// The client's own wording and codes, and a stack's frames: none may reach the user.
const LIBRARY = /-32097|couldn't create connection|Client is not running|Pending response rejected|Stopping server failed|Code: -\d|\n\s+at /;
let dir: string;
let pidFile: string;
let close: (() => void) | undefined;

before(() => {
  assert.ok(fs.existsSync(BUNDLE), `${BUNDLE} is missing: run 'node extension/build.mjs' (make test-node does)`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-bundle-'));
  pidFile = path.join(dir, 'pids');
  // The "python" the bundle runs: records its pid, then becomes the n-th sidecar of SIDECAR_MODES
  // (comma-separated; the last one repeats).
  const wrapper = path.join(dir, 'python');
  const fake = path.join(__dirname, 'fixtures', 'fake-sidecar.js');
  fs.writeFileSync(
    wrapper,
    `#!/bin/sh
echo $$ >> "${pidFile}"
n=$(wc -l < "${pidFile}")
mode=$(echo "$SIDECAR_MODES" | cut -d, -f"$n")
[ -n "$mode" ] || mode=$(echo "$SIDECAR_MODES" | awk -F, '{print $NF}')
exec "${process.execPath}" "${fake}" "$mode"
`,
    { mode: 0o755 },
  );
  process.env.AI_GATEWAY_LM_PYTHON = wrapper;
  process.env.AI_GATEWAY_LM_START_TIMEOUT_MS = String(START_MS);
});

after(() => {
  delete process.env.AI_GATEWAY_LM_PYTHON;
  delete process.env.AI_GATEWAY_LM_START_TIMEOUT_MS;
  delete process.env.SIDECAR_MODES;
  fs.rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  close?.();
  close = undefined;
  for (const pid of pids()) await until(() => !alive(pid), `process ${pid} exits`);
});

interface Window {
  provider: vscode.LanguageModelChatProvider;
  log: stub.LogOutputChannel;
}

/** Activates the bundle as VS Code does, with the sidecars `modes` (one per start, in order). */
async function openWindow(modes: string): Promise<Window> {
  process.env.SIDECAR_MODES = modes;
  fs.writeFileSync(pidFile, '');
  stub.shownErrors.length = 0;
  stub.shownInfos.length = 0;
  stub.shownWarnings.length = 0;
  stub.progressTitles.length = 0;
  const storage = fs.mkdtempSync(path.join(dir, 'storage-'));
  const context = { subscriptions: [] as { dispose(): unknown }[], secrets: new stub.SecretStorage(), globalStorageUri: { fsPath: storage } };
  const bundle = load(BUNDLE) as { activate(context: unknown): Promise<void> };
  await bundle.activate(context);
  close = () => context.subscriptions.forEach((d) => d.dispose());
  return { provider: stub.registeredProviders.get('vercel-ai-gateway') as vscode.LanguageModelChatProvider, log: stub.outputChannels.at(-1)! };
}

/** A chat as Copilot sends it; resolves to the error it threw, with how long it took. */
async function chatError(window: Window): Promise<{ error: Error & { kind?: string }; ms: number }> {
  const started = Date.now();
  const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('hello')] };
  const model = { id: 'fake/text', name: 'fake/text', family: 'fake', version: '1', maxInputTokens: 1000, maxOutputTokens: 100, capabilities: {} };
  const error = await Promise.resolve(
    window.provider.provideLanguageModelChatResponse(
      model,
      [message as unknown as vscode.LanguageModelChatRequestMessage],
      { tools: [], toolMode: 1 },
      { report: () => undefined },
      new stub.CancellationTokenSource().token,
    ),
  ).then(
    () => assert.fail('the chat succeeded'),
    (e: unknown) => e as Error & { kind?: string },
  );
  return { error, ms: Date.now() - started };
}

/** Every notification shown, of any kind. */
function notifications(): string[] {
  return [...stub.shownErrors.map((e) => e.message), ...stub.shownInfos.map((i) => i.message), ...stub.shownWarnings];
}

/** Waits until every sidecar started so far has exited and the client has said all it would. */
async function settled(): Promise<void> {
  for (const pid of pids()) await until(() => !alive(pid), `process ${pid} exits`);
  await new Promise((resolve) => setTimeout(resolve, 300));
}

/** Nothing the user can see quotes the client, a JSON-RPC code or a stack. */
function assertOurWords(window: Window, thrown: string[] = []): void {
  for (const text of [...notifications(), ...thrown, ...stub.outputChannels.flatMap((c) => c.lines)]) {
    assert.doesNotMatch(text, LIBRARY, `the user sees: ${JSON.stringify(text)}`);
  }
  assert.ok(window.log.lines.length > 0);
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

const WHAT_TO_DO = /Run 'Vercel AI Gateway: Restart Server' to try again.*'Vercel AI Gateway: Show Logs'/;

for (const [mode, happened, bound] of [
  ['hang', /^The Vercel AI Gateway sidecar did not start within 2 s and was stopped\. /, START_MS + 1500],
  ['exit', /^The Vercel AI Gateway sidecar exited as it started \(code 3\)\. /, 1500],
  ['initgarbage', /^The Vercel AI Gateway sidecar sent output that is not JSON-RPC \(unframed output: .*\) and was stopped\. /, 1500],
] as const) {
  test(`a sidecar that does not start (${mode}): one message in our words, and Restart Server reports that it failed again`, { timeout: 30_000 }, async () => {
    const window = await openWindow(mode);
    const { error, ms } = await chatError(window);
    assert.ok(ms < bound, `the chat failed after ${ms} ms`);
    assert.equal(error.kind, 'sidecar');
    assert.match(error.message, happened);
    assert.match(error.message, WHAT_TO_DO);
    await settled();
    assert.deepEqual(stub.shownErrors, [{ message: error.message, actions: ['Show Logs', 'Restart Server'] }], 'one notification: the one the chat threw');
    assert.deepEqual(notifications(), [error.message]);
    assertOurWords(window, [error.message]);

    // Restart Server on a sidecar that still does not start: progress while it tries, then the failure, once.
    const restarted = Date.now();
    await stub.commands.executeCommand(RESTART);
    assert.ok(Date.now() - restarted < bound, `the restart ended after ${Date.now() - restarted} ms`);
    await settled();
    assert.deepEqual(stub.progressTitles, [RESTART_TITLE]);
    assert.equal(stub.shownErrors.length, 2, 'one more notification: the restart failed');
    assert.match(stub.shownErrors[1].message, happened);
    assert.deepEqual(stub.shownInfos, [], 'no "restarted"');
    assertOurWords(window, [error.message]);
  });
}

test("the failure notification's Restart Server button restarts a sidecar that now starts, and says it restarted", { timeout: 30_000 }, async () => {
  const window = await openWindow('hang,echo');
  stub.answers.errorButton.push('Restart Server');
  const { error } = await chatError(window);
  assert.match(error.message, /did not start within 2 s/);
  await until(() => stub.shownInfos.length > 0, 'the restart is reported');
  assert.deepEqual(stub.progressTitles, [RESTART_TITLE]);
  assert.deepEqual(stub.shownInfos, [{ message: RESTARTED, actions: [] }]);
  assert.equal(stub.shownErrors.length, 1);
  assert.equal(pids().length, 2);
  assert.ok(alive(pids()[1]), 'the new sidecar runs');
  // The fake writes its log line after the initialize answer, as pygls does: it may be read after the
  // restart was reported.
  await until(() => window.log.lines.includes('warn the fake sidecar started'), "the sidecar's own log lines reach the log, at their level");
  assertOurWords(window, [error.message]);
});
