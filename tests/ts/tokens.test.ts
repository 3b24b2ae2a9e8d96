import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import { GatewayChatProvider } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';
import * as stub from './vscode-stub';
import { TokenCounter, ToolInfo, toolStrings } from '../../extension/tokens';
import type { MessageIn } from '../../extension/contract';

function countingRpc(): { rpc: Rpc; calls: unknown[] } {
  const calls: unknown[] = [];
  const rpc: Rpc = {
    async request<R>(_method: string, params: unknown): Promise<R> {
      calls.push(params);
      const { texts } = params as { texts: unknown[] };
      return { counts: texts.map((t) => (typeof t === 'string' ? t.length : 99)) } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  return { rpc, calls };
}

test('misses asked together go in one request; repeats are answered from memory', async () => {
  const { rpc, calls } = countingRpc();
  const counter = new TokenCounter(rpc);
  const first = await Promise.all(['a', 'bb', 'ccc'].map((t) => counter.count('m', t)));
  assert.deepEqual(first, [1, 2, 3]);
  assert.equal(calls.length, 1);
  assert.equal(await counter.count('m', 'bb'), 2);
  assert.equal(calls.length, 1);
  await counter.count('other-model', 'bb');
  assert.equal(calls.length, 2, 'counts are per model');
});

test('a known count is found whichever model was asked about last, before and after it was learned', async () => {
  const { rpc } = countingRpc();
  const counter = new TokenCounter(rpc);
  assert.equal(counter.known('m', 'abc'), undefined); // remembered as the last model, with no counts yet
  assert.equal(await counter.count('m', 'abc'), 3);
  assert.equal(counter.known('m', 'abc'), 3, 'the counts learned after the last lookup are found');
  assert.equal(counter.known('other-model', 'abc'), undefined);
  assert.equal(await counter.count('other-model', 'abcd'), 4);
  assert.equal(counter.known('m', 'abc'), 3);
  assert.equal(counter.known('other-model', 'abc'), undefined, 'counts stay per model');
  assert.equal(counter.known('other-model', 'abcd'), 4);
});

test('a failed batch rejects its callers and is not remembered', async () => {
  let fail = true;
  const rpc: Rpc = {
    async request<R>(): Promise<R> {
      if (fail) throw new Error('down');
      return { counts: [5] } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  const counter = new TokenCounter(rpc);
  await assert.rejects(counter.count('m', 'x'));
  fail = false;
  assert.equal(await counter.count('m', 'x'), 5);
});

test('memory is bounded', async () => {
  const { rpc } = countingRpc();
  const counter = new TokenCounter(rpc, 2);
  for (const t of ['a', 'b', 'c']) await counter.count('m', t);
  await counter.count('other-model', 'd');
  assert.equal(counter.size, 2);
});

test('a string that reads like a message keeps its own count', async () => {
  const { rpc } = countingRpc();
  const counter = new TokenCounter(rpc);
  const message: MessageIn = { role: 1, name: null, content: [{ type: 'text', value: 'hi' }] };
  assert.equal(await counter.count('m', message), 99);
  const lookalike = JSON.stringify(message);
  assert.equal(await counter.count('m', lookalike), lookalike.length);
});

test('prefetch counts every tool string in one request; the walk is then answered from memory', async () => {
  const { rpc, calls } = countingRpc();
  const counter = new TokenCounter(rpc);
  const strings = toolStrings([
    { name: 'read_file', description: 'Read', inputSchema: { type: 'object', properties: { path: { type: 'string', enum: ['a', 'b'] } } } },
  ]);
  // Copilot's own walk order: the keys of {name, description, parameters} too, and array indices.
  assert.deepEqual(strings, [
    'name',
    'read_file',
    'description',
    'Read',
    'parameters',
    'type',
    'object',
    'properties',
    'path',
    'type',
    'string',
    'enum',
    '0',
    'a',
    '1',
    'b',
  ]);
  await counter.prefetch('m', strings);
  assert.equal(calls.length, 1);
  for (const s of strings) await counter.count('m', s);
  assert.equal(calls.length, 1);
});

test('counts survive a restart without a round trip, and keep no prompt text on disk', async () => {
  const { rpc, calls } = countingRpc();
  const first = new TokenCounter(rpc);
  await first.count('m', 'a secret prompt');
  await first.prefetch('m', ['read_file']);
  const saved = first.snapshot()!;
  assert.ok(!JSON.stringify(saved).includes('secret'), 'prompts are stored hashed');
  assert.ok(JSON.stringify(saved).includes('read_file'), 'tool strings are kept as they are');
  assert.equal(first.snapshot(), undefined, 'nothing new to save');
  const second = new TokenCounter(rpc);
  second.restore(JSON.parse(JSON.stringify(saved)));
  assert.equal(await second.count('m', 'a secret prompt'), 15);
  assert.equal(await second.count('m', 'read_file'), 9);
  assert.equal(calls.length, 2, 'one count and one prefetch before the restart, none after');
});

test('same-length strings that differ only in the middle get their own counts', async () => {
  const rpc: Rpc = {
    async request<R>(_m: string, params: unknown): Promise<R> {
      return { counts: (params as { texts: string[] }).texts.map((t) => (t.includes('MIDDLE') ? 7 : 3)) } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  const counter = new TokenCounter(rpc);
  const a = 'p'.repeat(100) + 'MIDDLE' + 's'.repeat(100);
  const b = 'p'.repeat(100) + 'xxxxxx' + 's'.repeat(100);
  assert.deepEqual([await counter.count('m', a), await counter.count('m', b)], [7, 3]);
});

test("Copilot's walk through the provider: vscode.lm.tools is read on a miss only, and the tool strings go in one batch", async () => {
  const { rpc, calls } = countingRpc();
  const tools: ToolInfo[] = [
    { name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { filePath: { type: 'string' } }, required: ['filePath'] } },
  ];
  let reads = 0;
  const provider = new GatewayChatProvider(rpc, {
    apiKey: async () => undefined,
    askForKey: async () => undefined,
    thinking: () => 'auto',
    loadCache: async () => [],
    saveCache: async () => undefined,
    onUsage() {},
    tools: () => (reads++, tools),
    log: { info() {}, warn() {}, error() {} },
  });
  const model = { id: 'm' } as vscode.LanguageModelChatInformation;
  const token = new stub.CancellationTokenSource().token;
  const walk = async () => {
    let total = 0;
    for (const s of toolStrings(tools)) total += await provider.provideTokenCount(model, s, token);
    return total;
  };
  const first = await walk();
  assert.equal(reads, 1, 'the first miss reads the tools once');
  assert.equal(calls.length, 1, 'every tool string in one request');
  assert.equal(await walk(), first);
  assert.equal(reads, 1, 'known strings never read vscode.lm.tools');
  assert.equal(await provider.provideTokenCount(model, 'a new string', token), 12);
  assert.equal(reads, 2, 'a miss looks for new tools again');
  assert.equal(calls.length, 2, 'the same tools are not walked again: only the string is asked');
  tools.push({
    name: 'write_file',
    description: 'Write a file',
    inputSchema: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] },
  });
  await provider.provideTokenCount(model, 'write_file', token);
  assert.equal(calls.length, 3, 'a new tool: its strings in one batch');
  const before = calls.length;
  for (const s of toolStrings(tools)) await provider.provideTokenCount(model, s, token);
  assert.equal(calls.length, before, 'then every string of it is known');
});

test('counts are shared by the models with the same tokenizer, kept apart across tokenizers, and so saved', async () => {
  const { rpc, calls } = countingRpc();
  const counter = new TokenCounter(rpc);
  const models = [
    { id: 'vendor/a', tokenizer: 'o200k_base' },
    { id: 'vendor/b', tokenizer: 'o200k_base' },
    { id: 'vendor/c', tokenizer: 'cl100k_base' },
  ];
  counter.setTokenizers(models);
  await counter.prefetch('vendor/a', ['read_file']);
  assert.equal(await counter.count('vendor/a', 'a prompt'), 8);
  assert.equal(counter.known('vendor/b', 'read_file'), 9);
  assert.equal(await counter.count('vendor/b', 'a prompt'), 8);
  assert.equal(calls.length, 2, 'the second model asked nothing');
  assert.equal(counter.known('vendor/c', 'read_file'), undefined, 'another tokenizer counts apart');
  const restarted = new TokenCounter(rpc);
  restarted.setTokenizers(models);
  restarted.restore(JSON.parse(JSON.stringify(counter.snapshot())));
  assert.equal(restarted.known('vendor/b', 'read_file'), 9);
  assert.equal(await restarted.count('vendor/b', 'a prompt'), 8);
  assert.equal(calls.length, 2, 'and after a restart');
});
