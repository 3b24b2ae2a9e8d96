import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { CHOOSE_INTERPRETER, fromRpcError, isCancellation, SHOW_LOGS, showError } from '../../extension/errors';
import { promptScale, REASONING_METADATA_KEY, serializeMessage, toResponsePart, usageDataPart } from '../../extension/wire';

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function message(role: number, content: unknown[]): vscode.LanguageModelChatRequestMessage {
  return { role, name: undefined, content };
}

test('serialises every part type, system role included', () => {
  const m = message(3, [
    new stub.LanguageModelTextPart('be brief'),
    new stub.LanguageModelToolCallPart('c1', 'read', { p: 1 }),
    new stub.LanguageModelToolResultPart2('c1', [new stub.LanguageModelTextPart('out'), new stub.LanguageModelDataPart(PNG, 'image/*')]),
    new stub.LanguageModelDataPart(new TextEncoder().encode('ephemeral'), 'cache_control'),
    new stub.LanguageModelThinkingPart(['a', 'b'], 't1'),
    new stub.LanguageModelPromptTsxPart({ node: 1 }),
  ]);
  assert.deepEqual(serializeMessage(m), {
    role: 3,
    name: null,
    content: [
      { type: 'text', value: 'be brief' },
      { type: 'toolCall', callId: 'c1', name: 'read', input: { p: 1 } },
      {
        type: 'toolResult',
        callId: 'c1',
        content: [
          { type: 'text', value: 'out' },
          { type: 'data', mimeType: 'image/*', data: 'iVBORw0KGgo=' },
        ],
      },
      { type: 'data', mimeType: 'cache_control', data: 'ZXBoZW1lcmFs' },
      { type: 'thinking', value: ['a', 'b'], id: 't1' },
      { type: 'text', value: '{"node":1}' },
    ],
  });
});

test('token-count serialisation leaves image bytes out', () => {
  const m = message(1, [new stub.LanguageModelDataPart(PNG, 'image/png')]);
  assert.deepEqual(serializeMessage(m, false).content, [{ type: 'data', mimeType: 'image/png', data: '' }]);
});

test('maps parts back to VS Code classes', () => {
  const text = toResponsePart({ type: 'text', value: 'hi' }, 'auto');
  assert.ok(text instanceof stub.LanguageModelTextPart);
  const call = toResponsePart({ type: 'toolCall', callId: 'c', name: 'n', input: { a: 1 } }, 'auto');
  assert.ok(call instanceof stub.LanguageModelToolCallPart);
  assert.deepEqual([call.callId, call.name, call.input], ['c', 'n', { a: 1 }]);
  const thinking = toResponsePart({ type: 'thinking', value: 'hmm', id: 'r1' }, 'auto');
  assert.ok(thinking instanceof stub.LanguageModelThinkingPart);
  assert.equal(toResponsePart({ type: 'thinking', value: 'hmm', id: null }, 'hidden'), undefined);
  assert.equal(toResponsePart({ type: 'finish', reason: 'stop', responseId: null }, 'auto'), undefined);
});

test('thinking falls back per setting when the class is missing at runtime', () => {
  const saved = stub.LanguageModelThinkingPart;
  const mutable = stub as unknown as { LanguageModelThinkingPart?: unknown };
  delete mutable.LanguageModelThinkingPart;
  try {
    assert.equal(toResponsePart({ type: 'thinking', value: 'x', id: null }, 'auto'), undefined);
    const asText = toResponsePart({ type: 'thinking', value: 'x', id: null }, 'text');
    assert.ok(asText instanceof stub.LanguageModelTextPart);
  } finally {
    mutable.LanguageModelThinkingPart = saved;
  }
});

test('usage becomes the data part Copilot reads', () => {
  const part = usageDataPart({
    type: 'usage',
    inputTokens: 10,
    outputTokens: 2,
    totalTokens: 12,
    cachedTokens: 4,
    cacheWriteTokens: 0,
    reasoningTokens: 1,
    servedTier: 'default',
  });
  assert.ok(part instanceof stub.LanguageModelDataPart);
  assert.equal(part.mimeType, 'usage');
  assert.deepEqual(JSON.parse(new TextDecoder().decode(part.data)), {
    prompt_tokens: 10,
    completion_tokens: 2,
    total_tokens: 12,
    prompt_tokens_details: { cached_tokens: 4 },
    completion_tokens_details: { reasoning_tokens: 1 },
  });
  // In the unit of the window VS Code was given, reasoning tokens too (the harness's bridge reads them).
  const scaled = usageDataPart(
    { type: 'usage', inputTokens: 100, outputTokens: 40, totalTokens: 140, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 30, servedTier: 'default' },
    2,
  );
  assert.deepEqual((JSON.parse(new TextDecoder().decode(scaled.data)) as { completion_tokens_details: unknown }).completion_tokens_details, {
    reasoning_tokens: 15,
  });
});

test("a turn's usage is the share of the real limit, in the unit of the window the turn holds (issue 43 §1)", () => {
  // Listed at 120,000 tokens; a 28,600-token limit learned in the turn: requests now fitted to 20,600.
  const going = { finishReason: 'toolCalls', inputLimit: 20_600, budgetFactor: 1 } as const;
  const usage = {
    type: 'usage',
    inputTokens: 18_540,
    outputTokens: 40,
    totalTokens: 18_580,
    cachedTokens: 10_300,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    servedTier: 'default',
  } as const;
  const part = JSON.parse(new TextDecoder().decode(usageDataPart(usage, 1, promptScale(going, 120_000)).data)) as Record<string, unknown>;
  // Copilot compacts at 80 % of the window it holds: 90 % of the real limit reads as 90 % of 120,000.
  assert.equal(part.prompt_tokens, 108_000);
  assert.deepEqual(part.prompt_tokens_details, { cached_tokens: 60_000 });
  assert.equal(part.completion_tokens, 40, 'output tokens are no share of the window');
  // The turn's last answer: the next turn is budgeted with the learned window (20,600 / factor).
  assert.equal(promptScale({ ...going, finishReason: 'stop' }, 120_000), 1);
  assert.equal(promptScale({ finishReason: 'stop', inputLimit: 183_616, budgetFactor: 1.35 }, 136_011), 1 / 1.35);
  // Nothing changed in the turn: the window is the limit in o200k tokens, the same unit as before.
  assert.ok(Math.abs(promptScale({ finishReason: 'toolCalls', inputLimit: 183_616, budgetFactor: 1.35 }, 136_011)! - 1 / 1.35) < 1e-5);
  // A model not listed, or a window VS Code did not pass: the served entry's factor.
  assert.equal(promptScale({ finishReason: 'toolCalls', inputLimit: null, budgetFactor: null }, 120_000), undefined);
  assert.equal(promptScale({ ...going, budgetFactor: null }, undefined), undefined);
});

test('errors are classified by the kind the sidecar sent', () => {
  const auth = fromRpcError({
    code: -32000,
    message: 'AI Gateway answered 401: Invalid API key. Set a valid key',
    data: { kind: 'auth', status: 401, retryAfter: null },
  });
  assert.equal(auth.kind, 'auth');
  assert.match(auth.message, /401/);
  const other = fromRpcError({ code: -32000, message: 'busy', data: { kind: 'rate_limited', status: 429, retryAfter: 3 } });
  assert.equal(other.kind, 'rate_limited');
  const unknown = fromRpcError({ code: -32000, message: 'odd', data: { kind: 'brand_new', status: null, retryAfter: null } });
  assert.equal(unknown.kind, 'internal', 'a kind off the closed list is told as a sidecar bug');
  const crash = fromRpcError(new Error('Connection got disposed.'));
  assert.equal(crash.kind, 'sidecar');
  assert.match(crash.message, /did not answer \(Connection got disposed\.\).* Show Logs/);
  assert.ok(isCancellation({ code: -32800 }));
  assert.ok(!isCancellation({ code: -32000 }));
});

test('a clicked button runs its command with its arguments; no click runs nothing', async () => {
  const ran: unknown[][] = [];
  const registered = ['vercelAiGateway.chooseInterpreter', 'vercelAiGateway.showLogs'].map((id) =>
    stub.commands.registerCommand(id, (...args) => ran.push([id, ...args])),
  );
  try {
    stub.answers.errorButton.push('Choose Interpreter', undefined);
    showError('No Python', CHOOSE_INTERPRETER, SHOW_LOGS);
    showError('No Python', CHOOSE_INTERPRETER, SHOW_LOGS);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(ran, [['vercelAiGateway.chooseInterpreter']]);
    assert.deepEqual(stub.shownErrors.slice(-1)[0].actions, ['Choose Interpreter', 'Show Logs']);
  } finally {
    registered.forEach((r) => r.dispose());
  }
});

const STATE = {
  model: 'openai/gpt-5',
  items: [
    { id: 'rs_1', encryptedContent: 'SECRET-1', summary: ['s'], before: 'c1' },
    { id: 'rs_2', encryptedContent: 'SECRET-2', summary: [], before: null },
  ],
};

test('reasoning state becomes an empty thinking part that carries it and closes the block, in every thinking mode', () => {
  for (const mode of ['auto', 'text', 'hidden'] as const) {
    const part = toResponsePart({ type: 'reasoningState', ...STATE }, mode);
    assert.ok(part instanceof stub.LanguageModelThinkingPart, mode);
    // The harness's bridge skips a part marked done: it has each item already.
    assert.deepEqual([part.value, part.id, part.metadata], ['', 'rs_2', { [REASONING_METADATA_KEY]: STATE, vscode_reasoning_done: true }]);
  }
});

test('each reasoning item becomes an empty thinking part with its id and a string encrypted_content, in every thinking mode', () => {
  for (const mode of ['auto', 'text', 'hidden'] as const) {
    const part = toResponsePart({ type: 'reasoningItem', id: 'rs_1', tagged: 'aigw1.e30.SECRET-1' }, mode);
    assert.ok(part instanceof stub.LanguageModelThinkingPart, mode);
    assert.deepEqual([part.value, part.id, part.metadata], ['', 'rs_1', { encrypted_content: 'aigw1.e30.SECRET-1' }]);
  }
});

test('reasoning state is never text, even where thinking would fall back to text', () => {
  const saved = stub.LanguageModelThinkingPart;
  const mutable = stub as unknown as { LanguageModelThinkingPart?: unknown };
  delete mutable.LanguageModelThinkingPart;
  try {
    assert.equal(toResponsePart({ type: 'reasoningState', ...STATE }, 'text'), undefined);
  } finally {
    mutable.LanguageModelThinkingPart = saved;
  }
});

test('the thinking part Copilot hands back is serialised with its reasoning state', () => {
  // As Copilot Chat rebuilds it: the thinking text joined, the metadata with a key of its own added.
  const metadata = { [REASONING_METADATA_KEY]: STATE, vscode_thinking_origin_api: 'x' };
  const m = message(2, [new stub.LanguageModelThinkingPart('shown', 'rs_2', metadata), new stub.LanguageModelToolCallPart('c1', 'read', {})]);
  assert.deepEqual(serializeMessage(m).content?.[0], { type: 'thinking', value: 'shown', id: 'rs_2', state: STATE });
  // Counting tokens needs no state; a part without our key has none.
  assert.deepEqual(serializeMessage(m, false).content?.[0], { type: 'thinking', value: 'shown', id: 'rs_2' });
  const foreign = message(2, [new stub.LanguageModelThinkingPart('x', 'a', { other: 1 })]);
  assert.deepEqual(serializeMessage(foreign).content?.[0], { type: 'thinking', value: 'x', id: 'a' });
});

test('a thinking part the harness hands back is serialised with its encrypted content, from either key', () => {
  // As the bridge rebuilds a reasoning item: its summary as the value, its encrypted content a string.
  const bridged = message(2, [new stub.LanguageModelThinkingPart(['a', 'b'], 'rs_1', { encrypted_content: 'aigw1.e30.X' })]);
  assert.deepEqual(serializeMessage(bridged).content?.[0], { type: 'thinking', value: ['a', 'b'], id: 'rs_1', tagged: 'aigw1.e30.X' });
  const other = message(2, [new stub.LanguageModelThinkingPart('', 'rs_1', { encrypted: 'aigw1.e30.Y' })]);
  assert.deepEqual(serializeMessage(other).content?.[0], { type: 'thinking', value: '', id: 'rs_1', tagged: 'aigw1.e30.Y' });
  assert.deepEqual(serializeMessage(bridged, false).content?.[0], { type: 'thinking', value: ['a', 'b'], id: 'rs_1' });
  const notString = message(2, [new stub.LanguageModelThinkingPart('', 'rs_1', { encrypted_content: { x: 1 } })]);
  assert.deepEqual(serializeMessage(notString).content?.[0], { type: 'thinking', value: '', id: 'rs_1' });
});
