// One budget unit (rfcs/0004-token-accounting.md): the real sidecar learns a 1.35× tokenizer from the
// fake gateway, the provider fetches the list once and fires one change event, VS Code gets the window
// and the usage in o200k tokens, and the tooltip and status bar keep the real numbers.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { CancellationTokenSource, MessageConnection } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { startGateway, startSidecar } from './real';
import type { ModelEntry, UsagePart } from '../../extension/contract';
import { GatewayChatProvider, WINDOW_DEBOUNCE_MS } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';
import { StatusBar } from '../../extension/status';

const REAL_LIMIT = 200_000 - 16_384; // fake/text: its window minus the output reservation
const children: ChildProcess[] = [];
let connection: MessageConnection;
let provider: GatewayChatProvider;
const state = { fetches: 0, changes: 0, calibrations: 0, usage: [] as { model: ModelEntry | undefined; usage: UsagePart }[] };

before(async () => {
  const started = await startSidecar(children, await startGateway(children));
  connection = started.connection;
  const router = started.router;
  const rpc: Rpc = {
    request: (method, params) => {
      if (method === 'gateway/models') state.fetches++;
      return connection.sendRequest(method, params);
    },
    onParts: (id, handler) => router.subscribe(id, handler),
  };
  provider = new GatewayChatProvider(rpc, {
    apiKey: async () => 'test-key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => [] as ModelEntry[],
    saveCache: async () => undefined,
    onUsage: (model, usage) => state.usage.push({ model, usage }),
    tools: () => [],
    log: { info() {}, warn() {}, error() {} },
  });
  router.onCalibration = () => (state.calibrations++, provider.windowMoved()); // as extension.ts wires it
  provider.onDidChangeLanguageModelChatInformation(() => state.changes++);
});

after(() => {
  provider?.dispose();
  connection?.dispose();
  for (const child of children) child.kill();
});

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const listed = async () => new Map((await provider.provideLanguageModelChatInformation({ silent: true }, token())).map((m) => [m.id, m]));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function chat(scenario: string): Promise<unknown[]> {
  const parts: unknown[] = [];
  const text = `[scenario:${scenario}] ${'token accounting '.repeat(200)}`;
  const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart(text)] } as unknown as vscode.LanguageModelChatRequestMessage;
  await provider.provideLanguageModelChatResponse(
    { id: 'fake/text' } as vscode.LanguageModelChatInformation,
    [message],
    { toolMode: 1 },
    { report: (p) => parts.push(p) },
    token(),
  );
  return parts;
}

function reportedUsage(parts: unknown[]): { prompt_tokens: number; total_tokens: number } {
  const part = parts.find((p): p is stub.LanguageModelDataPart => p instanceof stub.LanguageModelDataPart && p.mimeType === 'usage');
  assert.ok(part, 'a usage part');
  return JSON.parse(new TextDecoder().decode(part.data)) as { prompt_tokens: number; total_tokens: number };
}

test('a learned factor: one fetch and one change event after the burst, the window in o200k tokens', async () => {
  assert.equal((await listed()).get('fake/text')!.maxInputTokens, REAL_LIMIT, 'no factor yet: o200k and real agree');
  const fetched = state.fetches;
  // Three answers in a row, each a calibration: the first moves the window; the sidecar tells us.
  for (let n = 0; n < 3; n++) await chat('calibrate:1.35');
  for (let waited = 0; state.calibrations === 0 && waited < 3000; waited += 20) await sleep(20);
  assert.equal(state.calibrations, 1, 'later factors within 2 % do not move the window');
  provider.windowMoved(); // a second notification inside the debounce: still one fetch
  assert.equal(state.fetches, fetched, 'nothing fetched before the burst is over');
  await sleep(WINDOW_DEBOUNCE_MS + 500);
  assert.equal(state.fetches, fetched + 1, 'one catalogue request');
  assert.equal(state.changes, 1, 'one change event: the picker re-renders once');
  const model = (await listed()).get('fake/text')!;
  assert.ok(Math.abs(model.maxInputTokens - REAL_LIMIT / 1.35) < REAL_LIMIT * 0.01, `advertised ${model.maxInputTokens}`);
  assert.match(model.tooltip ?? '', /Context 200K tokens/);
  assert.match(model.tooltip ?? '', /1\.3\d× what o200k counts: 184K input tokens are 13\dK to Copilot's budget/);
  await sleep(100);
  assert.equal(state.changes, 1);
});

test('usage goes to Copilot in the unit of its window; the status bar shows the real tokens', async () => {
  const parts = await chat('calibrate:1.35');
  const { model, usage } = state.usage.at(-1)!;
  assert.ok(model && model.budgetFactor > 1.3, 'the entry VS Code was served, with its factor');
  const reported = reportedUsage(parts);
  assert.equal(reported.prompt_tokens, Math.round(usage.inputTokens / model.budgetFactor));
  assert.ok(usage.inputTokens > reported.prompt_tokens * 1.3, `real ${usage.inputTokens}, reported ${reported.prompt_tokens}`);
  const status = new StatusBar();
  status.show(model, usage);
  const item = stub.statusBarItems.at(-1)!;
  assert.ok(usage.inputTokens < 1000 && item.text.includes(`: ${usage.inputTokens} in`), `real input tokens in ${item.text}`);
  assert.match(String(item.tooltip), new RegExp(`Input: ${usage.inputTokens} tokens`));
  assert.match(String(item.tooltip), /of 200000/, 'the real context window');
  status.dispose();
});
