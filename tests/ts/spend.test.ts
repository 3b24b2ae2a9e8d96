// Issue 15 in the extension: the status bar's credits and billed cost, the spend guard's approval
// and how a refusal from the sidecar reaches the user, and gateway/billed over a real vscode-jsonrpc
// connection.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { CancellationTokenSource, createMessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { APPROVAL_MS, Approvals, carriedCost } from '../../extension/approval';
import { MAX_ID, MAX_MODEL_ID, MAX_PROVIDER, MAX_TIME, MAX_TOKEN_COUNT, MAX_USD, type ModelEntry, type UsagePart } from '../../extension/contract';
import { CreditsReader } from '../../extension/credits';
import type { SpendAnswer } from '../../extension/guard';
import type { Refusal } from '../../extension/records';
import { GatewayChatProvider } from '../../extension/provider';
import { parseUsageRecord, spendLimitOf } from '../../extension/records';
import { PartsRouter, Rpc } from '../../extension/sidecar/rpc';
import type { UsageRecord } from '../../extension/contract';
import { StatusBar } from '../../extension/status';
import { until } from './until';

const sonnet = {
  id: 'anthropic/claude-sonnet-4',
  name: 'Claude Sonnet 4',
  contextWindow: 200_000,
  pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, tiers: [] as ModelEntry['pricing']['tiers'] },
} as ModelEntry;
const usage: UsagePart = {
  type: 'usage',
  inputTokens: 1000,
  outputTokens: 20,
  totalTokens: 1020,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  servedTier: 'default',
};
const record = (fields: Partial<UsageRecord> = {}): UsageRecord => ({
  id: 'gen_1',
  time: '2026-11-26T08:00:00Z',
  model: 'anthropic/claude-sonnet-4',
  provider: 'bedrock',
  inputTokens: 1000,
  outputTokens: 20,
  cachedTokens: 800,
  cacheWriteTokens: 150,
  reasoningTokens: 0,
  cost: 0.0123,
  billed: true,
  byok: false,
  group: null,
  requestedModel: null,
  cacheSaved: null,
  ...fields,
});
const item = () => stub.statusBarItems.at(-1)!;

test('tooltip: the credits line shows the balance in cents and is hidden when the key cannot read it', () => {
  const status = new StatusBar();
  status.show(sonnet, usage, 'chat-1');
  status.setCredits(12.3449);
  assert.match(item().tooltip!, /\nCredits: \$12\.34 left on the default key$/);
  status.setCredits(null);
  assert.doesNotMatch(item().tooltip!, /Credits/);
});

test('tooltip: the billed cost replaces the estimate, with the provider, BYOK and the prompt cache', () => {
  const status = new StatusBar();
  status.show(sonnet, usage, 'chat-1'); // estimate: 1,000 × $3 + 20 × $15 per million = $0.0033
  assert.match(item().tooltip!, /Cost: \$0\.0033 · this session \$0\.0033/);
  status.billed('chat-1', record({ byok: true }));
  const tooltip = item().tooltip!;
  assert.match(tooltip, /Billed: \$0\.0123 · this session \$0\.0123/, 'the session total holds the billed cost, not both');
  assert.match(tooltip, /Provider: bedrock \(your own key, BYOK\)/);
  assert.match(tooltip, /Prompt cache: 800 tokens read · 150 written/);
  assert.match(item().text, / · \$0\.01$/, 'the bar itself stays short');
});

test('tooltip: an estimate from the sidecar (the lookup gave up) is marked ≈, and a missing provider is not shown', () => {
  const status = new StatusBar();
  status.show(sonnet, usage, 'chat-2');
  status.billed('chat-2', record({ billed: false, provider: null, byok: null, cost: 0.0041 }));
  assert.match(item().tooltip!, /Cost: ≈ \$0\.0041 · this session \$0\.0041/);
  assert.doesNotMatch(item().tooltip!, /Billed|Provider/);
  assert.match(item().text, / · \$0\.0041$/, 'the bar stays short; the tooltip says it is an estimate');
});

test('tooltip: a bill that arrives before its result is kept for it; a bill for an older request only fixes the session total', () => {
  const status = new StatusBar();
  status.billed('chat-3', record({ cost: 0.5 }));
  assert.equal(item().tooltip, undefined, 'nothing to show yet');
  status.show(sonnet, usage, 'chat-3');
  assert.match(item().tooltip!, /Billed: \$0\.5000 · this session \$0\.5000/);
  status.show(sonnet, usage, 'chat-4'); // + $0.0033
  status.show(sonnet, usage, 'chat-5'); // + $0.0033
  status.billed('chat-4', record({ cost: 0.1 })); // 0.5 + 0.0033 + 0.1 = 0.6033
  assert.match(item().tooltip!, /Cost: \$0\.0033 · this session \$0\.6033/, 'chat-5 still shown; chat-4 billed $0.10 instead of $0.0033');
});

test('approval: covers up to twice the approved estimate, for ten minutes', () => {
  const approval = { estimate: 0.42, at: 1_000_000 };
  assert.equal(carriedCost(undefined, 1_000_000), undefined);
  assert.equal(carriedCost(approval, 1_000_000), 0.84);
  // The sidecar lets a request through when its estimate is at most the carried cost (prices.py).
  assert.equal(carriedCost(approval, 1_000_000 + APPROVAL_MS), 0.84);
  assert.ok(0.85 > carriedCost(approval, 1_000_000)!, 'more than twice asks again');
  assert.equal(carriedCost(approval, 1_000_000 + APPROVAL_MS + 1), undefined, 'a lapsed approval covers nothing');
  assert.equal(carriedCost(approval, 999_999), undefined, 'a clock that went back does not stretch it');
  let now = 0;
  const approvals = new Approvals(() => now);
  const refusal = (scope: 'request' | 'day' | 'unpriced', estimate: number | null): Refusal => ({
    scope,
    estimate,
    limit: 0.01,
    spentToday: null,
    message: '',
  });
  assert.deepEqual(approvals.carried('m', null), { approvedCost: undefined, approvedUnpriced: undefined });
  assert.deepEqual(approvals.approve(refusal('request', 0.1), 'm', null), { approvedCost: 0.1 });
  now = APPROVAL_MS;
  assert.equal(approvals.carried('m', null).approvedCost, 0.2);
  approvals.approve(refusal('request', 0.05), 'm', null); // a new Send replaces the old approval and starts its window again
  now = 2 * APPROVAL_MS;
  assert.equal(approvals.carried('m', null).approvedCost, 0.1);
});

test('approval: a Send past the day limit covers that request only; one on an unpriced model carries for that model', () => {
  let now = 0;
  const approvals = new Approvals(() => now);
  const day: Refusal = { scope: 'day', estimate: 0.02, limit: 5, spentToday: 4.99, message: '' };
  assert.deepEqual(approvals.approve(day, 'm', null), { approvedDay: true });
  assert.deepEqual(approvals.carried('m', null), { approvedCost: undefined, approvedUnpriced: undefined }, 'the day limit bounds the total');
  const unpriced: Refusal = { scope: 'unpriced', estimate: null, limit: 5, spentToday: null, message: '' };
  assert.deepEqual(approvals.approve(unpriced, 'free/model', null), { approvedUnpriced: true });
  now = APPROVAL_MS;
  assert.equal(approvals.carried('free/model', null).approvedUnpriced, true);
  assert.equal(approvals.carried('other/model', null).approvedUnpriced, undefined, 'per model');
  now = APPROVAL_MS + 1;
  assert.equal(approvals.carried('free/model', null).approvedUnpriced, undefined, 'lapsed');
});

test("approval: a Send covers its own key's requests only", () => {
  let now = 0;
  const approvals = new Approvals(() => now);
  const request: Refusal = { scope: 'request', estimate: 0.1, limit: 0.05, spentToday: null, message: '' };
  const unpriced: Refusal = { scope: 'unpriced', estimate: null, limit: 5, spentToday: null, message: '' };
  approvals.approve(request, 'm', 'team');
  approvals.approve(unpriced, 'free/model', 'team');
  now = 1;
  assert.deepEqual(approvals.carried('m', 'team'), { approvedCost: 0.2, approvedUnpriced: undefined });
  assert.equal(approvals.carried('free/model', 'team').approvedUnpriced, true);
  for (const other of ['personal', null]) {
    assert.deepEqual(approvals.carried('m', other), { approvedCost: undefined, approvedUnpriced: undefined }, `nothing carried to ${other}`);
    assert.equal(approvals.carried('free/model', other).approvedUnpriced, undefined);
  }
  approvals.approve({ ...request, estimate: 0.01 }, 'm', null); // the default key's Send replaces nothing of the team's
  assert.equal(approvals.carried('m', 'team').approvedCost, 0.2);
  assert.equal(approvals.carried('m', null).approvedCost, 0.02);
});

test('a spend_limit error is read off the JSON-RPC error; a malformed one is not trusted', () => {
  const data = { kind: 'spend_limit', status: null, estimate: 0.42, limit: 0.25, scope: 'request', spentToday: 1 };
  const message = 'This request will cost about $0.42 (your limit is $0.25).';
  assert.deepEqual(spendLimitOf(new ResponseError(-32001, message, data)), { estimate: 0.42, limit: 0.25, scope: 'request', spentToday: 1, message });
  assert.equal(spendLimitOf(new ResponseError(-32001, message, { ...data, estimate: 'a lot' })), undefined);
  assert.equal(spendLimitOf(new ResponseError(-32001, message, { ...data, scope: 'week' })), undefined);
  assert.equal(spendLimitOf(new ResponseError(-32001, message, { ...data, estimate: null })), undefined, 'a request refusal has its estimate');
  assert.equal(spendLimitOf(new ResponseError(-32001, message, { ...data, spentToday: null })), undefined);
  const unpriced = { ...data, scope: 'unpriced', estimate: null, spentToday: null };
  assert.equal(spendLimitOf(new ResponseError(-32001, 'The model list gives x no price', unpriced))?.scope, 'unpriced');
  const unread = { ...data, scope: 'day', spentToday: null };
  assert.equal(spendLimitOf(new ResponseError(-32001, "Today's spend cannot be read", unread))?.spentToday, null);
  assert.equal(spendLimitOf(new ResponseError(-32001, 'no', { kind: 'auth', status: 401 })), undefined);
  assert.equal(spendLimitOf(undefined), undefined);
});

/** A provider over an Rpc that refuses chats whose approvedCost is below `estimate`, the way the
 * sidecar's guard does (the real sidecar's guard lands with the other half of issue 15). */
function guarded(estimate: number, answers: SpendAnswer[]) {
  const sent: { approvedCost?: number | null }[] = [];
  const asked: Refusal[] = [];
  const parts: unknown[] = [];
  const toastsBefore = stub.shownErrors.length;
  const errors = () => stub.shownErrors.slice(toastsBefore); // toasts: a chat's errors show in the chat only
  const rpc = {
    request: async (method: string, params: { approvedCost?: number | null }) => {
      assert.equal(method, 'gateway/chat');
      sent.push({ approvedCost: params.approvedCost });
      if ((params.approvedCost ?? 0) < estimate) {
        const data = { kind: 'spend_limit', status: null, retryAfter: null, estimate, limit: 0.25, scope: 'request', spentToday: 0 };
        throw new ResponseError(-32001, `This request will cost about $${estimate.toFixed(2)} (your limit is $0.25).`, data);
      }
      return { usage: null, finishReason: 'stop', responseId: null };
    },
    onParts: () => ({ dispose() {} }),
  } as unknown as Rpc;
  const provider = new GatewayChatProvider(rpc, {
    apiKey: async () => 'test-key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => [],
    saveCache: async () => undefined,
    onUsage() {},
    confirmSpend: async (refusal) => (asked.push(refusal), answers.shift() ?? 'cancel'),
    tools: () => [],
    log: { info() {}, warn() {}, error() {} },
  });
  const chat = () =>
    provider.provideLanguageModelChatResponse(
      { id: 'fake/text' } as vscode.LanguageModelChatInformation,
      [],
      { toolMode: 1 },
      { report: (part) => parts.push(part) },
      new CancellationTokenSource().token,
    );
  const reported = () => parts.map((p) => (p as { value?: unknown }).value);
  return { provider, chat, sent, asked, errors, reported };
}

test('guard: Send re-issues the chat with the approved cost, and the next requests carry it without asking', async () => {
  const { chat, sent, asked, errors } = guarded(0.42, ['send']);
  await chat();
  assert.deepEqual(sent, [{ approvedCost: undefined }, { approvedCost: 0.42 }]);
  assert.equal(asked.length, 1);
  assert.equal(asked[0].message, 'This request will cost about $0.42 (your limit is $0.25).');
  await chat(); // the next step of an agent loop
  assert.deepEqual(sent.at(-1), { approvedCost: 0.84 });
  assert.equal(asked.length, 1, 'not asked again');
  assert.deepEqual(errors(), []);
});

test('guard: Cancel and Change limit answer "Not sent" in the chat: no error (Copilot prints even a cancellation as a failure with a stack)', async () => {
  for (const answer of ['cancel', 'change'] as const) {
    const { chat, sent, errors, reported } = guarded(0.42, [answer]);
    await chat(); // resolves: no error for Copilot to print
    assert.equal(sent.length, 1, 'nothing re-sent');
    assert.deepEqual(reported(), ['Not sent. This request will cost about $0.42 (your limit is $0.25).']);
    assert.deepEqual(errors(), [], 'no error notification');
  }
});

test('gateway/billed is routed over vscode-jsonrpc; a notification that is not a record is dropped and told', async () => {
  const [toSidecar, toExtension] = [new PassThrough(), new PassThrough()];
  const extension = createMessageConnection(new StreamMessageReader(toExtension), new StreamMessageWriter(toSidecar));
  const sidecar = createMessageConnection(new StreamMessageReader(toSidecar), new StreamMessageWriter(toExtension));
  const router = new PartsRouter();
  const billed: [string, UsageRecord][] = [];
  const invalid: string[] = [];
  router.onBilled = (id, r) => billed.push([id, r]);
  router.onInvalid = (what) => invalid.push(what);
  router.attach(extension);
  extension.listen();
  sidecar.listen();
  await sidecar.sendNotification('gateway/billed', { requestId: 7, record: record() });
  await sidecar.sendNotification('gateway/billed', { requestId: 'chat-8', record: { ...record(), cost: 'NaN' } });
  await sidecar.sendNotification('gateway/billed', { requestId: 'chat-9', record: { ...record(), inputTokens: -1 } });
  await until(() => billed.length + invalid.length === 3, 'all three notifications arrived');
  assert.deepEqual(billed, [['7', record()]]);
  assert.equal(invalid.length, 2);
  extension.dispose();
  sidecar.dispose();
});

test('records: the seam shape only; bounded text, finite non-negative numbers, a real time', () => {
  assert.deepEqual(parseUsageRecord(record()), record());
  assert.deepEqual(parseUsageRecord({ ...record(), cost: null, extra: 1 }), record({ cost: null }));
  for (const bad of [{ time: 'yesterday' }, { model: 'x'.repeat(201) }, { cost: Infinity }, { cachedTokens: 1.5 }, { billed: 'yes' }, { id: '' }]) {
    assert.equal(parseUsageRecord({ ...record(), ...bad }), undefined, JSON.stringify(bad));
  }
});

test('credits: read after a request at most once a minute; null hides the line; a failure is only logged', async () => {
  let now = 0;
  let calls = 0;
  let answer: unknown = { balance: 12.5, totalUsed: 3 };
  const balances: (number | null)[] = [];
  const warnings: string[] = [];
  const rpc = {
    request: async (method: string, params: { apiKey?: string }) => {
      assert.deepEqual([method, params], ['gateway/credits', { apiKey: 'test-key-0123456789' }]);
      calls++;
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as Rpc;
  const credits = new CreditsReader(
    rpc,
    async () => 'test-key-0123456789',
    (b) => balances.push(b),
    { warn: (m: string) => warnings.push(m) },
    () => now,
  );
  const settle = () => new Promise((resolve) => setTimeout(resolve, 10));
  credits.refreshSoon();
  await settle();
  credits.refreshSoon();
  now = 59_999;
  credits.refreshSoon();
  await settle();
  assert.equal(calls, 1, 'one read within the minute');
  now = 60_000;
  answer = { balance: null, totalUsed: null };
  credits.refreshSoon();
  await settle();
  now = 120_000;
  answer = { balance: Infinity, totalUsed: 'NaN' };
  credits.refreshSoon();
  await settle();
  assert.deepEqual(balances, [12.5, null, null], 'a balance that is not a finite number is hidden, not shown');
  now = 180_000;
  answer = new ResponseError(-32001, 'The gateway is unreachable.', { kind: 'network', status: null, retryAfter: null });
  credits.refreshSoon();
  await settle();
  assert.deepEqual(warnings, ['Could not read the credits: The gateway is unreachable.']);
  assert.equal(stub.shownErrors.length, 0, 'no pop-up for a background read');
});

test("records and the status bar take the sidecar's bounds (the contract's constants): what the history keeps is what they show", () => {
  // At each bound: kept, as the sidecar's history keeps it (server/gateway_lm/stream/usage.py).
  const atBounds = record({
    id: 'g'.repeat(MAX_ID),
    model: 'm'.repeat(MAX_MODEL_ID),
    provider: 'p'.repeat(MAX_PROVIDER),
    inputTokens: MAX_TOKEN_COUNT,
    cost: 5_000_000, // between $1M and $1B: a bill, if an absurd one
  });
  assert.deepEqual(parseUsageRecord(atBounds), atBounds);
  // Past them: no record, as in the history (before, a cost past $1B and a count past 2^40 were drawn).
  for (const bad of [
    { id: 'g'.repeat(MAX_ID + 1) },
    { model: 'm'.repeat(MAX_MODEL_ID + 1) },
    { provider: 'p'.repeat(MAX_PROVIDER + 1) },
    { time: `${'2026-11-26T08:00:00Z'.padEnd(MAX_TIME + 1, ' ')}` },
    { outputTokens: MAX_TOKEN_COUNT + 1 },
    { cost: MAX_USD * 2 },
  ]) {
    assert.equal(parseUsageRecord({ ...record(), ...bad }), undefined, Object.keys(bad)[0]);
  }
  // The status bar's own estimate past the bound is no cost, as the sidecar's record has none.
  const absurd = { ...sonnet, pricing: { input: 1_000_000, output: 1_000_000, cacheRead: null, cacheWrite: null, tiers: [] } } as ModelEntry;
  const status = new StatusBar();
  status.show(absurd, { ...usage, inputTokens: 2_000_000_000 }, 'chat-absurd');
  assert.doesNotMatch(item().text, /\$\d/, 'no price in the bar');
  assert.doesNotMatch(item().tooltip!, /Cost:/);
});
