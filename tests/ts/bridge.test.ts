// Multi-turn agent sessions through the Copilot harness's BYOK bridge (tests/ts/bridge.ts, a double of
// VS Code's agentHostByokLmHandler and of the SDK's Responses leg), against the BUILT bundle
// (dist/extension.js activated under the stub `vscode`), the real sidecar and the fake gateway's
// `reasoning-agent` (tests/fake_reasoning.py): function and freeform tool calls, the reasoning effort,
// a strict reasoning model over ten turns (its encrypted reasoning must come back through the bridge as
// thinking parts with a string `encrypted_content`), a bridge that loses it, and a cancellation mid-turn;
// and the same ten turns through Copilot Chat's editor path.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway, ROOT } from './real';
import { BridgeSession, BridgeTool, EditorPathSession, TurnRecord } from './bridge';

const BUNDLE = path.join(ROOT, 'dist/extension.js');
const load = createRequire(__filename); // `vscode` inside it resolves to the stub (register.ts)
const subscriptions: { dispose(): unknown }[] = [];
const gateway = bundleGateway({
  defaultKey: true,
  path: '/agents', // the catalogue with fake/reasoning-agent, the effort models and fake/speedy's tiers
  cleanup: () => subscriptions.forEach((d) => d.dispose()),
});
const AGENT = 'fake/reasoning-agent';
const TURNS = 10;
const STEPS = 2; // tool calls per turn (fake_reasoning.STEPS)
const MARKER = 'OPAQUE-REASONING.'; // fake_reasoning.MARKER: every encrypted blob starts with it
const PATCH = '*** Begin Patch\n*** Add File: hello.txt\n+Hello from the patch\n*** End Patch\n'; // fake_reasoning.PATCH
const TOOLS: BridgeTool[] = [
  {
    type: 'function',
    name: 'read_file',
    description: 'Read a file of the workspace',
    parametersSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    type: 'function',
    name: 'run_in_terminal',
    description: 'Run a command',
    parametersSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
  { type: 'custom', name: 'apply_patch', description: 'Apply a patch to the workspace (freeform)' },
];
const INSTRUCTIONS = 'You are a coding agent. Use the tools.';

let provider: vscode.LanguageModelChatProvider;
let models: Map<string, vscode.LanguageModelChatInformation>;
let opened: Promise<void> | undefined;

/** The bundle activated and the models listed, once, by the first test: the file's top-level `before`
 * hooks run side by side, so one cannot wait for bundleGateway's (the gateway, the sidecar's Python). */
function open(): Promise<void> {
  opened ??= (async () => {
    assert.ok(fs.existsSync(BUNDLE), `${BUNDLE} is missing: run 'node extension/build.mjs' (make test-node does)`);
    const context = {
      subscriptions,
      secrets: new stub.SecretStorage(),
      globalState: new stub.Memento(),
      workspaceState: new stub.Memento(),
      globalStorageUri: { fsPath: gateway.folder('agl-bridge-') },
    };
    const bundle = load(BUNDLE) as { activate(context: unknown): Promise<void> };
    await bundle.activate(context);
    provider = stub.registeredProviders.get('vercel-ai-gateway') as vscode.LanguageModelChatProvider;
    const token = new stub.CancellationTokenSource().token as unknown as vscode.CancellationToken;
    const listed = (await provider.provideLanguageModelChatInformation({ silent: true }, token)) as vscode.LanguageModelChatInformation[];
    models = new Map(listed.map((m) => [m.id, m]));
    assert.ok(models.has(AGENT), `${AGENT} is listed: ${JSON.stringify([...models.keys()])}`);
  })();
  return opened;
}

interface Logged {
  scenario: string;
  status?: number;
  rejected?: string;
  turn?: number;
  step?: number;
  body: {
    model: string;
    input?: Record<string, unknown>[];
    include?: string[];
    reasoning?: { effort?: string };
    providerOptions?: { gateway?: { speed?: string } };
  };
}

async function gatewayLog(): Promise<Logged[]> {
  return (await (await fetch(`${gateway.url}/_requests`)).json()) as Logged[];
}

/** The gateway's requests from here on. */
async function mark(): Promise<() => Promise<Logged[]>> {
  const from = (await gatewayLog()).length;
  return async () => (await gatewayLog()).slice(from);
}

/** The extension's log lines from here on (its channel and the sidecar's lines in it). */
function logMark(): () => string[] {
  const from = new Map(stub.outputChannels.map((c) => [c, c.lines.length]));
  return () => stub.outputChannels.flatMap((c) => c.lines.slice(from.get(c) ?? 0));
}

function model(id: string): vscode.LanguageModelChatInformation {
  const found = models.get(id);
  assert.ok(found, `${id} is listed`);
  return found;
}

/** A line of a failure's report: providers' messages are long. */
function short(text: string | undefined): string {
  return text === undefined || text.length <= 140 ? String(text) : `${text.slice(0, 140)}…`;
}

/** What went wrong in each turn that was not answered. */
function unanswered(turns: TurnRecord[]): string[] {
  return turns
    .filter((t) => !t.answer || t.error !== undefined || t.cancelled)
    .map((t) => `turn ${t.turn}: ${short(t.error ?? (t.cancelled ? 'cancelled' : 'no answer'))}`);
}

/** The fake's blob, as the gateway has it or as the bridge holds it: tagged by the sidecar
 * (`aigw1.<head>.<the provider's encrypted content>`, rfcs/0002 "The reasoning round trip"). */
function decoded(blob: unknown): { model?: string; call?: string } | undefined {
  if (typeof blob !== 'string') return undefined;
  const raw = blob.startsWith('aigw1.') ? blob.split('.').slice(2).join('.') : blob;
  if (!raw.startsWith(MARKER)) return undefined;
  try {
    return JSON.parse(Buffer.from(raw.slice(MARKER.length), 'base64url').toString()) as { model?: string; call?: string };
  } catch {
    return undefined;
  }
}

/** The items of a request after the last message the user typed: the tool loop under way. */
function currentTurn(input: Record<string, unknown>[]): Record<string, unknown>[] {
  let last = input.length - 1;
  while (last >= 0 && !(input[last].type === 'message' && input[last].role === 'user')) last--;
  return input.slice(last + 1);
}

/** Each of the current turn's calls in a request that does not come right after its reasoning item. */
function misplacedReasoning(log: Logged[]): string[] {
  const problems: string[] = [];
  for (const [n, entry] of log.entries()) {
    const current = currentTurn(entry.body.input ?? []);
    for (const [i, item] of current.entries()) {
      if (item.type !== 'function_call') continue;
      const before = current[i - 1];
      const secret = before?.type === 'reasoning' ? decoded(before.encrypted_content) : undefined;
      if (secret?.call !== item.call_id || secret?.model !== entry.body.model) {
        problems.push(`request ${n + 1} (turn ${entry.turn}): ${String(item.call_id)} after ${before ? String(before.type) : 'nothing'}`);
      }
    }
  }
  return problems;
}

/** One line per kind of problem: how many, and the first. */
function summary(what: string, of: number, problems: string[]): string[] {
  return problems.length ? [`${what}: ${problems.length} of ${of}; the first: ${problems[0]}`] : [];
}

/** Each call of the bridge's items (what the SDK keeps) not right after a reasoning item whose
 * encrypted content was made for it. */
function bridgeMisplaced(session: BridgeSession): string[] {
  return session.input.flatMap((item, i) => {
    if (item.type !== 'function_call') return [];
    const before = session.input[i - 1];
    const secret = before?.type === 'reasoning' ? decoded(before.encryptedContent) : undefined;
    return secret?.call === item.callId
      ? []
      : [`${item.callId} after ${before?.type === 'reasoning' ? `reasoning ${before.id} with ${JSON.stringify(before.encryptedContent)}` : before?.type}`];
  });
}

test('(a) function tool calls over 3 turns: every turn answered after its tool calls', { timeout: 60_000 }, async () => {
  await open();
  const requests = await mark();
  const session = new BridgeSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS });
  for (let turn = 1; turn <= 3; turn++) await session.turn(`Step ${turn} of the task. [scenario:reasoning-agent:lenient]`);
  assert.deepEqual(unanswered(session.turns), []);
  assert.deepEqual(
    session.turns.map((t) => [t.calls, t.answer]),
    [1, 2, 3].map((turn) => [STEPS, `Turn ${turn}: done after ${STEPS} tool calls.`]),
  );
  const calls = session.input.filter((i) => i.type === 'function_call');
  assert.equal(calls.length, 3 * STEPS, 'each call comes back to the bridge as a function_call');
  assert.ok(
    calls.every((c) => c.type === 'function_call' && c.name === 'read_file' && typeof (JSON.parse(c.argumentsJson) as { path?: unknown }).path === 'string'),
  );
  // What reached the gateway: the last request carries every call and its output, in order.
  const last = (await requests()).at(-1)!.body.input!;
  const ids = last.filter((i) => i.type === 'function_call').map((i) => i.call_id);
  assert.deepEqual(
    ids,
    calls.map((c) => (c.type === 'function_call' ? c.callId : '')),
  );
  assert.deepEqual(
    last.filter((i) => i.type === 'function_call_output').map((i) => i.call_id),
    ids,
  );
});

test('(b) a freeform tool call comes back as custom_tool_call with its input string and round-trips in the next turn', { timeout: 60_000 }, async () => {
  await open();
  const requests = await mark();
  const session = new BridgeSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS });
  await session.turn('Add the greeting file. [scenario:reasoning-agent:lenient:custom]');
  await session.turn('Now say what you did. [scenario:reasoning-agent:lenient]');
  assert.deepEqual(unanswered(session.turns), []);
  const custom = session.turns[0].requests[0].result.output.find((i) => i.type === 'custom_tool_call');
  assert.ok(
    custom?.type === 'custom_tool_call',
    `the first response's call is a custom_tool_call: ${JSON.stringify(session.turns[0].requests[0].result.output)}`,
  );
  assert.equal(custom.name, 'apply_patch');
  assert.equal(custom.input, PATCH, 'the input is the patch itself, not JSON around it');
  assert.ok(session.input.some((i) => i.type === 'custom_tool_call_output' && i.callId === custom.callId));
  // The next turn's first request, at the gateway: the call with its input, and its output.
  const log = await requests();
  const secondTurn = log.find((e) => e.turn === 2)!.body.input!;
  const call = secondTurn.find((i) => i.type === 'function_call' && i.call_id === custom.callId);
  assert.ok(call, 'the freeform call is in the next turn’s history');
  assert.equal(call.name, 'apply_patch');
  assert.deepEqual(JSON.parse(String(call.arguments)), { input: PATCH });
  const result = secondTurn.find((i) => i.type === 'function_call_output' && i.call_id === custom.callId);
  assert.match(String(result?.output), /apply_patch ran/);
});

test("(c) the reasoning effort the bridge asks for reaches the gateway as reasoning.effort 'low'", { timeout: 60_000 }, async () => {
  await open();
  const requests = await mark();
  const session = new BridgeSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS, reasoningEffort: 'low' });
  await session.turn('Quick one. [scenario:reasoning-agent:lenient]');
  assert.deepEqual(unanswered(session.turns), []);
  const log = await requests();
  assert.equal(log.length, STEPS + 1);
  assert.deepEqual(
    log.map((e) => e.body.reasoning?.effort),
    log.map(() => 'low'),
  );
});

test('(g) the speed chosen for a model in the editor reaches the gateway through the bridge too', { timeout: 60_000 }, async () => {
  // VS Code sends the configuration it keeps for a model with every request to it, the bridge's
  // included, though the bridge lists only the effort menu (rfcs/0009, "Menus the bridge leaves out").
  await open();
  const speeds = async (stored?: Record<string, unknown>) => {
    const requests = await mark();
    const session = new BridgeSession(provider, model('fake/speedy'), { tools: TOOLS, ...(stored ? { stored } : {}) });
    await session.turn('Quick one. [scenario:text]');
    assert.deepEqual(unanswered(session.turns), []);
    return (await requests()).map((entry) => entry.body.providerOptions?.gateway?.speed ?? 'none');
  };
  assert.deepEqual(await speeds({ speed: 'fast' }), ['fast'], 'the fast tier chosen in the chat input');
  assert.deepEqual(await speeds(), ['none'], "the menu's default, standard: no speed sent");
});

for (const [variant, unmerged] of [
  ['VS Code 1.139: consecutive assistant messages merged', false],
  ['upstream at 020db717: one message per item', true],
] as const) {
  test(
    `(d) ${TURNS} turns on a strict reasoning model (${variant}): every turn answered, no 400, each call after its reasoning, reasoning tokens decoded`,
    { timeout: 180_000 },
    async () => {
      await open();
      const requests = await mark();
      const session = new BridgeSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS, unmerged });
      for (let turn = 1; turn <= TURNS; turn++) await session.turn(`Task ${turn}: read the next file.`);
      const log = await requests();
      const problems = [
        ...summary('turns not answered', session.turns.length, unanswered(session.turns)),
        ...summary(
          '400s at the gateway',
          log.length,
          log.filter((e) => e.status === 400).map((e) => `turn ${e.turn}: ${short(e.rejected)}`),
        ),
        ...summary('calls not right after their reasoning at the gateway', log.length, misplacedReasoning(log)),
        ...summary('calls not right after their encrypted reasoning in the bridge’s items', session.input.length, bridgeMisplaced(session)),
        ...summary(
          'responses whose usage has no reasoning tokens',
          session.requests.length,
          session.requests
            .filter((r) => !(Number(r.result.usage?.reasoningTokens) > 0))
            .map((r) => `turn ${r.turn} request ${r.step}: ${JSON.stringify(r.result.usage)}`),
        ),
      ];
      assert.deepEqual(problems, []);
      assert.equal(log.length, TURNS * (STEPS + 1));
      // Each reasoning item reached the bridge with its encrypted content as a string, never as text.
      const reasoning = session.input.filter((i) => i.type === 'reasoning');
      assert.ok(reasoning.length >= TURNS * STEPS);
      assert.ok(reasoning.filter((r) => r.encryptedContent !== undefined).every((r) => decoded(r.encryptedContent)?.model === AGENT));
      assert.ok(!session.input.some((i) => i.type === 'message' && i.content.some((c) => c.text.includes(MARKER))), 'no encrypted blob in any text');
    },
  );
}

test(`(e) an older bridge that loses the encrypted reasoning: every turn answered, at most one 400, and the log says why`, { timeout: 180_000 }, async () => {
  await open();
  const requests = await mark();
  const lines = logMark();
  const session = new BridgeSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS, loseEncrypted: true });
  for (let turn = 1; turn <= TURNS; turn++) await session.turn(`Task ${turn}: read the next file.`);
  const log = await requests();
  assert.deepEqual(summary('turns not answered', TURNS, unanswered(session.turns)), []);
  const rejected = log.filter((e) => e.status === 400);
  assert.ok(rejected.length <= 1, `${rejected.length} requests refused at the gateway: ${rejected.map((e) => `turn ${e.turn}`).join(', ')}`);
  // The model's id names reasoning too: the log must say it without it.
  const said = lines().map((line) => line.split(AGENT).join('<model>'));
  assert.ok(
    said.some((line) => /reasoning/i.test(line)),
    `the log says what happened: ${JSON.stringify(said.map(short))}`,
  );
});

test('(f) a turn cancelled mid-stream ends within seconds, and the next turn is answered', { timeout: 60_000 }, async () => {
  await open();
  const session = new BridgeSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS });
  const cancelled = await session.turn('Start, then stop. [scenario:reasoning-agent:lenient:slow]', { cancelAfterParts: 1 });
  assert.ok(cancelled.cancelled, 'the turn was cancelled');
  const request = cancelled.requests[0];
  assert.ok(
    request.msAfterCancel !== undefined && request.msAfterCancel < 3000,
    `the cancelled request ended ${request.msAfterCancel} ms after the cancellation`,
  );
  assert.equal(request.result.error, undefined, `a cancellation is no error: ${request.result.error}`);
  const next = await session.turn('Go on. [scenario:reasoning-agent:lenient:slow]');
  assert.deepEqual(unanswered([next]), []);
  assert.equal(next.answer, `Turn 2: done after ${STEPS} tool calls.`);
});

test(`the editor path (Copilot Chat 0.67): the same ${TURNS} turns on the strict model, every turn answered, no 400`, { timeout: 180_000 }, async () => {
  await open();
  const requests = await mark();
  const session = new EditorPathSession(provider, model(AGENT), { tools: TOOLS, instructions: INSTRUCTIONS });
  for (let turn = 1; turn <= TURNS; turn++) await session.turn(`Task ${turn}: read the next file.`);
  const log = await requests();
  assert.deepEqual(unanswered(session.turns), []);
  assert.deepEqual(
    log.filter((e) => e.status === 400).map((e) => `turn ${e.turn}: ${short(e.rejected)}`),
    [],
  );
  assert.equal(log.length, TURNS * (STEPS + 1));
  assert.deepEqual(misplacedReasoning(log), []);
});
