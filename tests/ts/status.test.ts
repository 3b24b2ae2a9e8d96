// The status bar item a user watches: tokens, share of the context window, cost, and its colours.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as stub from './vscode-stub';
import type { ModelEntry, UsagePart, UsageRecord } from '../../extension/contract';
import { StatusBar } from '../../extension/status';

const sonnet: ModelEntry = {
  id: 'anthropic/claude-sonnet-4',
  name: 'Claude Sonnet 4',
  family: 'claude',
  version: '4',
  contextWindow: 200_000,
  maxInputTokens: 183_616,
  maxOutputTokens: 64_000,
  capabilities: { toolCalling: true, imageInput: true },
  reasoning: true,
  pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, tiers: [] },
  tags: [],
  ownedBy: 'anthropic',
  description: '',
  tooltip: '',
  detail: '',
  budgetFactor: 1,
  budgetInputTokens: 183_616,
  tokenizer: 'o200k_base',
  configurationSchema: null,
  hostPricing: null,
  warning: null,
  fastTierOf: null,
  metrics: null,
};
const usage = (inputTokens: number, outputTokens: number, cachedTokens = 0, reasoningTokens = 0, fields: Partial<UsagePart> = {}): UsagePart => ({
  type: 'usage',
  inputTokens,
  outputTokens,
  totalTokens: inputTokens + outputTokens,
  cachedTokens,
  cacheWriteTokens: 0,
  reasoningTokens,
  servedTier: 'default',
  ...fields,
});

function latestItem(): stub.StatusBarItem {
  return stub.statusBarItems.at(-1)!;
}

test('shows tokens, share of the context window and the request cost; the tooltip breaks it down', () => {
  const status = new StatusBar();
  status.show(sonnet, usage(12_345, 456, 10_000, 120));
  const item = latestItem();
  // 2,345 fresh × $3 + 10,000 cached × $0.30 + 456 × $15, per million tokens = $0.016875
  assert.equal(item.text, '$(pulse) Claude Sonnet 4: 12.3K in · 456 out · 6% of context · $0.02');
  assert.equal(item.backgroundColor, undefined);
  assert.equal(item.visible, true);
  assert.match(item.tooltip!, /Input: 12345 tokens \(cached 10000\)/);
  assert.match(item.tooltip!, /Output: 456 tokens \(reasoning 120\)/);
  assert.match(item.tooltip!, /Context window: 6\.2% of 200000/);
  assert.match(item.tooltip!, /Cost: \$0\.0169 · this session \$0\.0169/);
  status.show(sonnet, usage(1000, 20)); // 1,000 × $3 + 20 × $15 per million = $0.0033
  assert.match(latestItem().text, /1\.0K in · 20 out · <1% of context · \$0\.0033$/);
  assert.match(latestItem().tooltip!, /Cost: \$0\.0033 · this session \$0\.0202(\n|$)/, 'the session total adds up');
});

test('amber from 75% of the context window, red from 90%', () => {
  const status = new StatusBar();
  status.show(sonnet, usage(149_000, 1));
  assert.equal(latestItem().backgroundColor, undefined);
  status.show(sonnet, usage(150_000, 1));
  assert.equal(latestItem().backgroundColor?.id, 'statusBarItem.warningBackground');
  status.show(sonnet, usage(180_000, 1));
  assert.equal(latestItem().backgroundColor?.id, 'statusBarItem.errorBackground');
});

test('a model without prices shows no cost rather than a wrong one', () => {
  const status = new StatusBar();
  status.show({ ...sonnet, pricing: { input: null, output: null, cacheRead: null, cacheWrite: null, tiers: [] } }, usage(1000, 10));
  assert.equal(latestItem().text, '$(pulse) Claude Sonnet 4: 1.0K in · 10 out · <1% of context');
  assert.doesNotMatch(latestItem().tooltip!, /Cost/);
});

test('a long request is priced at the tier its input reached, as the gateway bills it (issue 35 §2)', () => {
  const tiered: ModelEntry = {
    ...sonnet,
    contextWindow: 1_000_000,
    pricing: { ...sonnet.pricing, tiers: [{ fromInputTokens: 200_001, input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 3.75 }] },
  };
  const status = new StatusBar();
  status.show(tiered, usage(200_000, 1000)); // 200,000 × $3 + 1,000 × $15 per million = $0.615
  assert.match(latestItem().tooltip!, /Cost: \$0\.6150 /);
  status.show(tiered, usage(300_000, 1000, 100_000)); // 200,000 × $6 + 100,000 × $0.60 + 1,000 × $22.50 = $1.2825
  assert.match(latestItem().tooltip!, /Cost: \$1\.28 · /, "not $0.6450, the base prices' cost");
});

test("a team routing rule's rewrite: the tooltip names the model that answered, and the request is priced as it (issue 45 §1)", () => {
  const haiku: ModelEntry = {
    ...sonnet,
    id: 'anthropic/claude-haiku-4.5',
    name: 'Claude Haiku 4.5',
    contextWindow: 100_000,
    pricing: { ...sonnet.pricing, input: 1, output: 5, cacheRead: 0.1 },
  };
  const status = new StatusBar();
  status.show(sonnet, { ...usage(10_000, 1_000), servedModel: haiku.id }, 'r1', undefined, haiku);
  const item = latestItem();
  assert.match(item.tooltip!, /^Model: anthropic\/claude-sonnet-4$/m, 'the model picked');
  assert.match(item.tooltip!, /^Answered by: anthropic\/claude-haiku-4\.5 \(a team routing rule\)$/m);
  // 10,000 × $1 + 1,000 × $5 per million = $0.015 (Sonnet's prices would say $0.045)
  assert.match(item.tooltip!, /Cost: \$0\.0150 · this session \$0\.0150/);
  assert.match(item.tooltip!, /Context window: 10\.0% of 100000/, 'the window of the model that answered');
  status.show(sonnet, usage(10_000, 1_000), 'r2');
  assert.doesNotMatch(latestItem().tooltip!, /Answered by/, 'the model picked answered: nothing to say');
});

test('the tooltip shows the prompt cache: reads and writes at their own prices, what they saved, and today (issue 42 §4)', () => {
  const status = new StatusBar();
  // 10,000 in: 6,000 read, 2,000 written, 2,000 fresh; 100 out.
  status.show(sonnet, usage(10_000, 100, 6_000, 0, { cacheWriteTokens: 2_000 }), 'c1');
  // 2,000 × $3 + 6,000 × $0.30 + 2,000 × $3.75 + 100 × $15, per million = $0.0168 (not $0.0153, writes at $3)
  assert.match(latestItem().tooltip!, /Cost: \$0\.0168 · /);
  // Saved: 6,000 × ($3 − $0.30) − 2,000 × ($3.75 − $3), per million = $0.0147
  assert.match(latestItem().tooltip!, /Prompt cache: 6000 tokens read · 2000 written · saved \$0\.0147/);
  assert.match(latestItem().tooltip!, /Saved by the prompt cache today: \$0\.0147 \(this window\)/);
  // A first request writes more than it reads: a negative saving, and today's total goes down.
  status.show(sonnet, usage(4_000, 10, 0, 0, { cacheWriteTokens: 4_000 }), 'c2'); // −4,000 × $0.75 = −$0.0030
  assert.match(latestItem().tooltip!, /Prompt cache: 0 tokens read · 4000 written · saved -\$0\.0030/);
  assert.match(latestItem().tooltip!, /Saved by the prompt cache today: \$0\.0117 /);
  // The billed record's counts and saving replace the stream's.
  status.billed('c2', { ...record('c2'), cachedTokens: 0, cacheWriteTokens: 2_000, cacheSaved: -0.0015 });
  assert.match(latestItem().tooltip!, /Prompt cache: 0 tokens read · 2000 written · saved -\$0\.0015/);
  assert.match(latestItem().tooltip!, /Saved by the prompt cache today: \$0\.0132 /);
});

test("a billed record's saving replaces the stream's in today's total, after the next request is shown too", () => {
  const status = new StatusBar();
  status.show(sonnet, usage(4_000, 10, 0, 0, { cacheWriteTokens: 4_000 }), 'l1'); // −4,000 × $0.75 = −$0.0030
  status.show(sonnet, usage(10_000, 100, 6_000, 0, { cacheWriteTokens: 2_000 }), 'l2'); // +$0.0147
  assert.match(latestItem().tooltip!, /Saved by the prompt cache today: \$0\.0117 /);
  // l1's lookup lands while l2 is shown (an agent loop): it wrote 2,000, not 4,000.
  status.billed('l1', { ...record('l1'), cachedTokens: 0, cacheWriteTokens: 2_000, cacheSaved: -0.0015 });
  assert.match(latestItem().tooltip!, /Saved by the prompt cache today: \$0\.0132 /);
  assert.match(latestItem().tooltip!, /Prompt cache: 6000 tokens read · 2000 written · saved \$0\.0147/, "the shown request's own line stays");
});

test('a request served at a tier the model list gives no price for shows no cost until billed (issue 42 §5)', () => {
  const status = new StatusBar();
  status.show(sonnet, usage(1000, 10, 0, 0, { servedTier: 'priority' }), 'p1');
  assert.doesNotMatch(latestItem().text, / · \$/);
  assert.match(latestItem().tooltip!, /Service tier: priority, billed at the provider's priority rate/);
  assert.doesNotMatch(latestItem().tooltip!, /Cost:/);
  status.show(sonnet, usage(1000, 20, 0, 0, { servedTier: 'flex' }), 'f1'); // bounded by the standard price
  assert.match(latestItem().tooltip!, /Cost: \$0\.0033 · /);
  assert.match(latestItem().tooltip!, /Service tier: flex/);
});

function record(id: string): UsageRecord {
  return {
    id,
    time: new Date().toISOString(),
    model: sonnet.id,
    provider: 'anthropic',
    inputTokens: 4_000,
    outputTokens: 10,
    cachedTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    cost: 0.0157,
    billed: true,
    byok: false,
    group: null,
    requestedModel: null,
    cacheSaved: null,
  };
}
