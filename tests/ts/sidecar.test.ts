// The extension's own provider code driving the real sidecar (a subprocess, over vscode-jsonrpc)
// against the loopback fake gateway: the path a user's chat takes, minus VS Code itself.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { CancellationTokenSource, MessageConnection } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { startGateway, startSidecar } from './real';
import { until } from './until';
import { GatewayChatError } from '../../extension/errors';
import type { ModelEntry, UsagePart } from '../../extension/contract';
import { GatewayChatProvider } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';

const children: ChildProcess[] = [];
let connection: MessageConnection;
let provider: GatewayChatProvider;
let gatewayUrl: string;
const usages: UsagePart[] = [];

before(async () => {
  gatewayUrl = await startGateway(children);
  const started = await startSidecar(children, gatewayUrl);
  connection = started.connection;
  const router = started.router;
  const rpc: Rpc = {
    request: (method, params, token) => (token ? connection.sendRequest(method, params, token as never) : connection.sendRequest(method, params)),
    onParts: (id, handler) => router.subscribe(id, handler),
  };
  provider = new GatewayChatProvider(rpc, {
    apiKey: async () => 'test-key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => [] as ModelEntry[],
    saveCache: async () => undefined,
    onUsage: (_model, usage) => usages.push(usage),
    tools: () => [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }],
    log: { info() {}, warn() {}, error() {} },
  });
});

after(() => {
  connection?.dispose();
  for (const child of children) child.kill();
});

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const userMessage = (...content: unknown[]) => ({ role: 1, name: undefined, content }) as unknown as vscode.LanguageModelChatRequestMessage;

async function chat(model: string, messages: vscode.LanguageModelChatRequestMessage[], options: object = {}, cancel?: vscode.CancellationToken) {
  const parts: unknown[] = [];
  const info = { id: model } as vscode.LanguageModelChatInformation;
  await provider.provideLanguageModelChatResponse(info, messages, { toolMode: 1, ...options }, { report: (p) => parts.push(p) }, cancel ?? token());
  return parts;
}

const textOf = (parts: unknown[]) =>
  parts
    .filter((p) => p instanceof stub.LanguageModelTextPart)
    .map((p) => p.value)
    .join('');

test('the picker lists the gateway language models, all offered to agent mode', async () => {
  const models = await provider.provideLanguageModelChatInformation({ silent: true }, token());
  const byId = new Map(models.map((m) => [m.id, m]));
  assert.deepEqual([...byId.keys()].sort(), ['fake/agent-loop', 'fake/plain', 'fake/pricey', 'fake/reasoning', 'fake/text', 'fake/tools']);
  assert.equal(byId.get('fake/text')!.maxInputTokens, 200000 - 16384);
  assert.equal(byId.get('fake/text')!.capabilities.imageInput, true);
  assert.equal(byId.get('fake/plain')!.capabilities.toolCalling, true);
  assert.match(byId.get('fake/plain')!.tooltip ?? '', /does not support tools/);
});

test('a chat streams text, thinking and a final usage part', async () => {
  const parts = await chat('fake/reasoning', [userMessage(new stub.LanguageModelTextPart('hi'))]);
  assert.equal(textOf(parts), 'Hello from the fake gateway.');
  // Parts that arrive together are joined (rfcs/0005); parts the gateway sends apart arrive apart.
  const paced = await chat('fake/text', [userMessage(new stub.LanguageModelTextPart('[scenario:ttfp] hi'))]);
  assert.equal(textOf(paced), 'Hello from the fake gateway.');
  assert.ok(paced.filter((p) => p instanceof stub.LanguageModelTextPart).length > 1, 'streamed in several parts');
  assert.ok(parts[0] instanceof stub.LanguageModelThinkingPart);
  const last = parts.at(-1) as stub.LanguageModelDataPart;
  assert.equal(last.mimeType, 'usage');
  assert.equal(usages.at(-1)!.inputTokens, 42);
});

test('a tool call round trip pairs call and result at the gateway', async () => {
  const tools = [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }];
  const first = await chat('fake/tools', [userMessage(new stub.LanguageModelTextPart('read it'))], { tools });
  const call = first.find((p) => p instanceof stub.LanguageModelToolCallPart) as stub.LanguageModelToolCallPart;
  assert.deepEqual([call.name, call.input], ['read_file', { city: 'Paris', days: 2 }]);
  const history = [
    userMessage(new stub.LanguageModelTextPart('read it')),
    { role: 2, name: undefined, content: [call] } as unknown as vscode.LanguageModelChatRequestMessage,
    userMessage(new stub.LanguageModelToolResultPart2(call.callId, [new stub.LanguageModelTextPart('sunny')])),
  ];
  const second = await chat('fake/tools', history, { tools });
  assert.equal(textOf(second), 'The tool said: sunny');
  const log = (await (await fetch(`${gatewayUrl}/_requests`)).json()) as { body: { input: { type: string; call_id?: string }[] } }[];
  const input = log.at(-1)!.body.input;
  assert.deepEqual(
    input.slice(-2).map((i) => [i.type, i.call_id]),
    [
      ['function_call', call.callId],
      ['function_call_output', call.callId],
    ],
  );
});

test('a 401 throws one clear error naming the fix, with no stack for Copilot to print after it', async () => {
  const toasts = stub.shownErrors.length;
  await assert.rejects(chat('fake/error-401', [userMessage(new stub.LanguageModelTextPart('hi'))]), (error: GatewayChatError) => {
    assert.equal(error.kind, 'auth');
    assert.match(error.message, /Manage API Key/);
    assert.equal(error.stack, ''); // Copilot renders `${message}: ${stack}` when the stack is set
    return true;
  });
  assert.equal(stub.shownErrors.length, toasts, 'the chat shows the error; no toast repeats it over the chat input');
});

test('a spent gateway budget is told as one: which budget, where to raise it, no link, sent once', async () => {
  const before = ((await (await fetch(`${gatewayUrl}/_requests`)).json()) as unknown[]).length;
  await assert.rejects(chat('fake/budget-team', [userMessage(new stub.LanguageModelTextPart('hi'))]), (error: GatewayChatError) => {
    assert.equal(error.kind, 'gateway_budget');
    assert.equal(error.budget, 'team');
    assert.match(error.message, /team's AI Gateway spend budget/);
    assert.match(error.message, /Vercel dashboard → AI Gateway → Budgets/);
    assert.doesNotMatch(error.message, /https?:|Wait a moment|upgrade the plan/);
    return true;
  });
  const after = ((await (await fetch(`${gatewayUrl}/_requests`)).json()) as unknown[]).length;
  assert.equal(after - before, 1, 'a budget refusal is not retried');
});

test("a team routing rule's deny is told as one: a rule refused the model, who can change it and where, no link, sent once", async () => {
  const before = ((await (await fetch(`${gatewayUrl}/_requests`)).json()) as unknown[]).length;
  await assert.rejects(chat('fake/rule-denied-reason', [userMessage(new stub.LanguageModelTextPart('hi'))]), (error: GatewayChatError) => {
    assert.equal(error.kind, 'routing_rule');
    assert.equal(error.status, 403);
    assert.match(error.message, /A routing rule of your Vercel team refused this model \(rule rule_abc123\)/);
    assert.match(error.message, /Owners and Members can change or remove the rule/);
    assert.match(error.message, /Vercel dashboard → AI Gateway → Routing Rules/);
    assert.doesNotMatch(error.message, /https?:|upgrade the plan/);
    return true;
  });
  const after = ((await (await fetch(`${gatewayUrl}/_requests`)).json()) as unknown[]).length;
  assert.equal(after - before, 1, 'a deny is not retried');
});

test('cancelling stops the stream and reports nothing after', async () => {
  const source = new CancellationTokenSource();
  const parts: unknown[] = [];
  let cancelledAt = -1;
  const info = { id: 'fake/slow' } as vscode.LanguageModelChatInformation;
  const done = provider.provideLanguageModelChatResponse(
    info,
    [userMessage(new stub.LanguageModelTextPart('hi'))],
    { toolMode: 1 },
    {
      report: (p) => {
        parts.push(p);
        if (parts.length === 3) {
          cancelledAt = parts.length;
          source.cancel();
        }
      },
    },
    source.token,
  );
  await done;
  const afterCancel = parts.length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(parts.length, afterCancel, 'no part after the request ended');
  assert.ok(cancelledAt > 0 && parts.length < 50, `stopped early (${parts.length} parts)`);
});

test('token counts for strings and messages', async () => {
  const info = { id: 'openai/gpt-5' } as vscode.LanguageModelChatInformation;
  assert.equal(await provider.provideTokenCount(info, 'hello world', token()), 2);
  const counts = await Promise.all([
    provider.provideTokenCount(info, userMessage(new stub.LanguageModelTextPart('hello world')), token()),
    provider.provideTokenCount(info, '', token()),
  ]);
  assert.ok(counts[0] > 2);
  assert.equal(counts[1], 0);
});

test('a huge text is counted in slices, exactly as the sidecar counts it whole', async () => {
  const line = (i: number) => (i % 7 === 0 ? `\n/${i}\n  indented  ${i}` : ` word${i}, "quoted"\t/path/${i}`);
  const huge = Array.from({ length: 120_000 }, (_, i) => line(i)).join(''); // ~2.5 MB: three slices
  const model = { id: 'openai/gpt-5' } as vscode.LanguageModelChatInformation;
  const whole = await connection.sendRequest<{ counts: number[] }>('gateway/countTokens', { model: 'openai/gpt-5', texts: [huge] });
  assert.equal(await provider.provideTokenCount(model, huge, token()), whole.counts[0]);
});

test('a token count Copilot cancels is let go at once, and its request cancelled on the wire', { timeout: 60_000 }, async () => {
  // The provider's own Rpc over the same connection, which cancels Copilot's token the moment a count
  // is on its way: the count must reject before any answer could come back (it waited the count
  // timeout, 30 s, for a sidecar that did not answer), and hand vscode-jsonrpc a token that is
  // cancelled, which it sends on as `$/cancelRequest`.
  let copilot = new CancellationTokenSource();
  const sent: { texts: number; wire?: vscode.CancellationToken; settled?: number }[] = [];
  const rpc: Rpc = {
    request: (method, params, wire) => {
      const entry: (typeof sent)[number] = { texts: (params as { texts?: unknown[] }).texts?.length ?? 0, wire };
      if (method === 'gateway/countTokens') sent.push(entry);
      const answer: Promise<never> = wire ? connection.sendRequest(method, params, wire as never) : connection.sendRequest(method, params);
      queueMicrotask(() => copilot.cancel());
      return answer.finally(() => (entry.settled = performance.now()));
    },
    onParts: () => ({ dispose() {} }),
  };
  const counting = new GatewayChatProvider(rpc, {
    apiKey: async () => 'test-key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => [] as ModelEntry[],
    saveCache: async () => undefined,
    onUsage: () => undefined,
    tools: () => [],
    log: { info() {}, warn() {}, error() {} },
  });
  const info = { id: 'openai/gpt-5' } as vscode.LanguageModelChatInformation;
  const cancelled = (error: unknown) => error instanceof stub.CancellationError;
  const settled = () => until(() => sent.every((s) => s.settled !== undefined), 'the count requests settled');
  for (const text of ['a text of its own '.repeat(40_000), 'a huge text '.repeat(300_000)]) {
    sent.length = 0;
    copilot = new CancellationTokenSource();
    await assert.rejects(Promise.resolve(counting.provideTokenCount(info, text, copilot.token as never)), cancelled);
    const rejectedAt = performance.now();
    assert.equal(sent.length, 1, 'one request, and no further slice of a huge text');
    assert.ok(sent[0].wire?.isCancellationRequested, 'its request was cancelled on the wire');
    await settled();
    assert.ok(rejectedAt <= sent[0].settled!, 'let go before the sidecar answered');
  }
  const message = userMessage(new stub.LanguageModelTextPart('a message of its own'));
  copilot = new CancellationTokenSource();
  await assert.rejects(Promise.resolve(counting.provideTokenCount(info, message, copilot.token as never)), cancelled);
  // Cancelled before it was asked: nothing is sent. The sidecar still counts afterwards.
  sent.length = 0;
  const before = new CancellationTokenSource();
  before.cancel();
  await assert.rejects(Promise.resolve(counting.provideTokenCount(info, 'another text of its own', before.token as never)), cancelled);
  assert.equal(sent.length, 0);
  assert.equal(await counting.provideTokenCount(info, 'hello world', token()), 2);
});

/** The assistant message Copilot Chat 0.67 sends back after a tool-calling response: one thinking part
 * (the response's thinking joined, the last id and the last metadata reported, plus a key of its own),
 * then the calls. */
function asCopilotHistory(parts: unknown[]): vscode.LanguageModelChatRequestMessage {
  const thinking = parts.filter((p) => p instanceof stub.LanguageModelThinkingPart).reverse();
  const value = thinking
    .map((t) => t.value)
    .reverse()
    .join('');
  const metadata = thinking.find((t) => t.metadata)?.metadata;
  const part = new stub.LanguageModelThinkingPart(value, thinking.find((t) => t.id)?.id, metadata && { ...metadata, vscode_thinking_origin_api: 'x' });
  const calls = parts.filter((p) => p instanceof stub.LanguageModelToolCallPart);
  return { role: 2, name: undefined, content: [part, ...calls] };
}

test('a reasoning model that refuses tool turns without its reasoning gets it back (issue 12)', async () => {
  const tools = [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object' } }];
  const history = [userMessage(new stub.LanguageModelTextPart('[scenario:strict-reasoning] read the files'))];
  const seen: unknown[] = [];
  let parts: unknown[] = [];
  for (let step = 0; step < 3; step++) {
    parts = await chat('fake/reasoning', history, { tools });
    seen.push(...parts);
    const calls = parts.filter((p) => p instanceof stub.LanguageModelToolCallPart);
    if (calls.length === 0) break;
    const results = calls.map((c) => new stub.LanguageModelToolResultPart2(c.callId, [new stub.LanguageModelTextPart('contents')]));
    history.push(asCopilotHistory(parts), userMessage(...results));
  }
  assert.equal(textOf(parts), 'Done after 2 tool calls.');
  const shown = seen.flatMap((p) => (p instanceof stub.LanguageModelTextPart || p instanceof stub.LanguageModelThinkingPart ? [String(p.value)] : []));
  assert.ok(!shown.some((v) => v.includes('OPAQUE-REASONING')), 'encrypted reasoning is never shown');
  const log = (await (await fetch(`${gatewayUrl}/_requests`)).json()) as { body: { input: { type: string }[] } }[];
  const kinds = log
    .at(-1)!
    .body.input.map((i) => i.type)
    .filter((t) => t !== 'message');
  assert.deepEqual(kinds, ['reasoning', 'function_call', 'function_call_output', 'reasoning', 'function_call', 'function_call_output']);
});
