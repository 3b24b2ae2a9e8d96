// The model list VS Code's picker gets: from the disk cache at once, refreshed at most once a
// minute, and a change event only when VS Code was given a different list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import type { ModelEntry } from '../../extension/contract';
import { GatewayChatProvider } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';

const model = (id: string): ModelEntry => ({
  id,
  name: id,
  family: 'f',
  version: '1',
  contextWindow: 1000,
  maxInputTokens: 900,
  maxOutputTokens: 100,
  capabilities: { toolCalling: true, imageInput: false },
  reasoning: false,
  pricing: { input: null, output: null, cacheRead: null, cacheWrite: null, tiers: [] },
  tags: [],
  ownedBy: 'o',
  description: '',
  tooltip: '',
  detail: '',
  budgetFactor: 1,
  budgetInputTokens: 900,
  tokenizer: 'o200k_base',
  configurationSchema: null,
  hostPricing: null,
  warning: null,
  fastTierOf: null,
  metrics: null,
});

/** A provider over a catalogue the test controls; counts the catalogue requests. */
function picker(cached: ModelEntry[], catalogue: () => ModelEntry[]) {
  const state = { fetches: 0, changes: 0, saved: [] as ModelEntry[][], warnings: [] as string[] };
  const rpc: Rpc = {
    request: async <R>(method: string) => {
      assert.equal(method, 'gateway/models');
      state.fetches++;
      return { models: catalogue() } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  const provider = new GatewayChatProvider(rpc, {
    apiKey: async () => 'key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => cached,
    saveCache: async (models) => void state.saved.push(models),
    onUsage() {},
    tools: () => [],
    log: { info() {}, warn: (m: string) => void state.warnings.push(m), error() {} },
  });
  provider.onDidChangeLanguageModelChatInformation(() => state.changes++);
  const list = async () =>
    (await provider.provideLanguageModelChatInformation({ silent: true }, new stub.CancellationTokenSource().token as unknown as vscode.CancellationToken)).map(
      (m) => m.id,
    );
  return { provider, state, list };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('first start: the first answer waits for the catalogue; repeats neither fetch nor fire', async () => {
  const { state, list } = picker([], () => [model('a/one'), model('b/two')]);
  assert.deepEqual(await Promise.all([list(), list()]), [
    ['a/one', 'b/two'],
    ['a/one', 'b/two'],
  ]);
  assert.deepEqual(await list(), ['a/one', 'b/two']);
  await settle();
  assert.equal(state.fetches, 1, 'one catalogue request for three asks within a minute');
  assert.equal(state.changes, 0, 'nobody was shown another list');
  assert.deepEqual(state.saved, [[model('a/one'), model('b/two')]], 'saved for the next start');
});

test('later starts: the cached list at once, then one change event when the catalogue differs', async () => {
  const { state, list } = picker([model('a/old')], () => [model('a/new')]);
  assert.deepEqual(await list(), ['a/old']);
  await settle();
  assert.equal(state.changes, 1);
  assert.deepEqual(await list(), ['a/new']);
  await settle();
  assert.equal(state.fetches, 1);
  assert.equal(state.changes, 1);
});

test('Refresh Models fetches now; a failed fetch keeps the list and is tried again on the next ask', async () => {
  let catalogue = [model('a/one')];
  const { provider, state, list } = picker([], () => catalogue);
  await list();
  catalogue = [model('a/one'), model('a/two')];
  await provider.refresh();
  assert.equal(state.fetches, 2);
  assert.equal(state.changes, 1);
  assert.deepEqual(await list(), ['a/one', 'a/two']);

  const fresh = picker([model('a/cached')], () => {
    throw new Error('connection refused');
  });
  assert.deepEqual(await fresh.list(), ['a/cached']);
  await settle();
  assert.deepEqual(await fresh.list(), ['a/cached']);
  await settle();
  assert.equal(fresh.state.fetches, 2, 'a failure does not count as fetched');
  assert.match(fresh.state.warnings[0], /Could not refresh the model list: .*connection refused/);
});

test("VS Code is told the window in the unit of the usage it divides by it: the gateway's window / the budget factor", { timeout: 10_000 }, async () => {
  // rfcs/0003, "The window as its own field": a model counted at 1.25 real tokens per o200k token
  // reports its usage / 1.25 (rfcs/0004), so a 200K window is 160K of that unit.
  const claude = { ...model('anthropic/claude'), contextWindow: 200_000, budgetFactor: 1.25, budgetInputTokens: 146_892, maxInputTokens: 183_616 };
  const { provider } = picker([], () => [claude, model('plain')]);
  const token = new stub.CancellationTokenSource().token as unknown as vscode.CancellationToken;
  const listed = (await provider.provideLanguageModelChatInformation({ silent: true }, token)) as (vscode.LanguageModelChatInformation & {
    maxContextWindowTokens?: number;
  })[];
  assert.deepEqual(
    listed.map((m) => m.maxContextWindowTokens),
    [160_000, 1000],
  );
});

test("the gateway's metrics are a line of the picker's hover: VS Code draws infoText whatever else it shows", { timeout: 10_000 }, async () => {
  // rfcs/0003, "Model metrics": VS Code 1.139 draws a priced model's hover from its price fields and
  // leaves the tooltip out, so the metrics go where it draws them for every model.
  const summary = 'First token 0.25 s (p95 0.7 s) · 140 tokens/s · 99.9 % up';
  const fast = {
    ...model('a/fast'),
    metrics: { provider: 'a', providers: 1, firstTokenMs: 250, firstTokenP95Ms: 700, tokensPerSecond: 140, uptimePercent: 99.9, summary },
  };
  const { provider } = picker([], () => [fast, model('a/unmeasured')]);
  const token = new stub.CancellationTokenSource().token as unknown as vscode.CancellationToken;
  const listed = (await provider.provideLanguageModelChatInformation({ silent: true }, token)) as (vscode.LanguageModelChatInformation & {
    infoText?: Record<string, string>;
  })[];
  assert.deepEqual(
    listed.map((m) => m.infoText),
    [{ metrics: `${summary} (the gateway's last hour)` }, undefined],
  );
});
