import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import type * as vscode from 'vscode';
import { GatewayChatProvider } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';
import * as stub from './vscode-stub';
import { hashKeyOf } from '../../extension/counts/key';
import { MEMO_CHARS, TokenCounter } from '../../extension/counts/memo';
import { ToolInfo, toolStrings } from '../../extension/counts/prefetch';
import { serializeMessage } from '../../extension/wire';
import type { MessageIn } from '../../extension/contract';
import type { SavedCounts } from '../../extension/counts/shapes';

function countingRpc(keep = true): { rpc: Rpc; calls: unknown[] } {
  const calls: unknown[] = [];
  const rpc: Rpc = {
    async request<R>(_method: string, params: unknown): Promise<R> {
      calls.push(keep ? params : undefined); // a memory test keeps none of what it sends
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

test('a count past the bound the saved counts are read with (10^15) is not taken as exact', async () => {
  const rpc: Rpc = {
    async request<R>(): Promise<R> {
      return { counts: [1e15] } as R;
    },
    onParts: () => ({ dispose() {} }),
  };
  const counter = new TokenCounter(rpc);
  await assert.rejects(counter.count('m', 'x'), /counts/);
  assert.equal(counter.known('m', 'x'), undefined, 'and not remembered');
});

test('100,000 distinct texts counted at once: one pass over them, not a copy per text', async () => {
  const { rpc, calls } = countingRpc(false);
  const counter = new TokenCounter(rpc);
  const texts = Array.from({ length: 100_000 }, (_, i) => `text ${i}`);
  const started = Date.now();
  const counts = await Promise.all(texts.map((t) => counter.count('m', t)));
  // A bound on a hang, not a benchmark: a copy of the group per text took minutes (issue 36); one
  // pass takes well under a second.
  assert.ok(Date.now() - started < 20_000, `${Date.now() - started} ms`);
  assert.deepEqual([counts.length, counts[99_999], calls.length], [100_000, 'text 99999'.length, 1]);
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

/** The profile's key, as key.ts derives it for the hashed counts. */
const KEY = hashKeyOf(Buffer.alloc(32, 7));

test('counts survive a restart without a round trip, and keep no prompt text on disk', async () => {
  const { rpc, calls } = countingRpc();
  const first = new TokenCounter(rpc);
  first.useKey(KEY);
  await first.count('m', 'a secret prompt');
  await first.prefetch('m', ['read_file']);
  const saved = first.snapshot()!;
  assert.ok(!JSON.stringify(saved).includes('secret'), 'prompts are stored hashed');
  assert.ok(JSON.stringify(saved).includes('read_file'), 'tool strings are kept as they are');
  assert.equal(first.snapshot(), undefined, 'nothing new to save');
  const second = new TokenCounter(rpc);
  second.restore(JSON.parse(JSON.stringify(saved)));
  second.useKey(KEY); // the keychain answers after the file is read
  assert.equal(await second.count('m', 'a secret prompt'), 15);
  assert.equal(await second.count('m', 'read_file'), 9);
  assert.equal(calls.length, 2, 'one count and one prefetch before the restart, none after');
});

test('hashed counts are trusted under their own key only: another key, or none (the keychain has not answered), finds nothing', async () => {
  const { rpc, calls } = countingRpc();
  const first = new TokenCounter(rpc);
  first.useKey(KEY);
  await first.count('m', 'a secret prompt');
  const saved = JSON.parse(JSON.stringify(first.snapshot())) as SavedCounts;
  assert.equal(saved.key, KEY.id);
  const other = new TokenCounter(rpc);
  other.useKey(hashKeyOf(Buffer.alloc(32, 8)));
  other.restore(saved);
  assert.equal(other.known('m', 'a secret prompt'), undefined, 'another key');
  const waiting = new TokenCounter(rpc);
  waiting.restore(saved);
  assert.equal(waiting.known('m', 'a secret prompt'), undefined, 'no key yet');
  assert.equal(waiting.snapshot(), undefined, 'nothing to save, and nothing hashed saved without a key');
  waiting.useKey(KEY);
  assert.equal(waiting.known('m', 'a secret prompt'), 15, 'found once the key answers');
  assert.equal(calls.length, 1);
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

/** The provider VS Code receives, with no key, cache or log: only its token counting is under test. */
function countingProvider(rpc: Rpc, tools: () => readonly ToolInfo[]): GatewayChatProvider {
  return new GatewayChatProvider(rpc, {
    apiKey: async () => undefined,
    thinking: () => 'auto',
    loadCache: async () => [],
    saveCache: async () => undefined,
    onUsage() {},
    tools,
    log: { info() {}, warn() {}, error() {} },
  });
}

test("Copilot's walk through the provider: vscode.lm.tools is read on a miss only, and the tool strings go in one batch", async () => {
  const { rpc, calls } = countingRpc();
  const tools: ToolInfo[] = [
    { name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { filePath: { type: 'string' } }, required: ['filePath'] } },
  ];
  let reads = 0;
  const provider = countingProvider(rpc, () => (reads++, tools));
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
  counter.useKey(KEY);
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
  restarted.useKey(KEY);
  restarted.setTokenizers(models);
  restarted.restore(JSON.parse(JSON.stringify(counter.snapshot())));
  assert.equal(restarted.known('vendor/b', 'read_file'), 9);
  assert.equal(await restarted.count('vendor/b', 'a prompt'), 8);
  assert.equal(calls.length, 2, 'and after a restart');
});

// Issue 24: over a 1,000-turn agent session the memo kept every tool result whole (bounded by
// entries, 100,000, not by size), and the extension host's memory grew with it.
const heap = (() => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  return () => (gc(), process.memoryUsage().heapUsed / 2 ** 20);
})();

/** A tool result as Copilot's agent sends it: a file's worth of text, different each time. */
function toolResult(i: number): vscode.LanguageModelChatMessage {
  const lines = Array.from({ length: 120 }, (_, j) => `    def handler_${i}_${j}(self, request):  # route ${(i * 31 + j) % 997}`);
  const result = new stub.LanguageModelToolResultPart(`call_${i}`, [new stub.LanguageModelTextPart(lines.join('\n'))]);
  return { role: 1, name: undefined, content: [result] };
}

test('a long agent session: tool results are not kept whole, and each is still counted once', async () => {
  const { rpc, calls } = countingRpc(false);
  const provider = countingProvider(rpc, () => []);
  provider.tokens.useKey(KEY);
  const model = { id: 'm' } as vscode.LanguageModelChatInformation;
  const token = new stub.CancellationTokenSource().token;
  const before = heap();
  for (let i = 0; i < 3000; i++) assert.equal(await provider.provideTokenCount(model, toolResult(i), token), 99); // 7 KB each, 21 MB in all
  const grown = heap() - before;
  assert.ok(grown < 4, `the heap grew ${grown.toFixed(1)} MB over 3,000 tool results`);
  assert.equal(calls.length, 3000);
  // Copilot builds each message afresh for every call: the same result, a new object.
  for (const i of [0, 1500, 2999]) assert.equal(await provider.provideTokenCount(model, toolResult(i), token), 99);
  assert.equal(calls.length, 3000, 'still known, without a round trip');
  const restarted = new TokenCounter(rpc);
  restarted.useKey(KEY);
  restarted.restore(JSON.parse(JSON.stringify(provider.tokens.snapshot())));
  assert.equal(restarted.known('m', `\u0001${JSON.stringify(serializeMessage(toolResult(7), false))}`), 99, 'and after a restart');
});

test('the memo and the saved tool strings are bounded by their characters, not only by entries', async () => {
  const { rpc, calls } = countingRpc(false);
  const counter = new TokenCounter(rpc);
  const text = (i: number, length: number) => `${i} ${'x'.repeat(length)}`;
  const before = heap();
  for (let i = 0; i < 200; i++) await counter.count('m', text(i, 100_000)); // 20M characters
  const grown = heap() - before;
  assert.ok(grown < MEMO_CHARS / 2 ** 20 + 2, `the heap grew ${grown.toFixed(1)} MB for 20M characters counted`);
  assert.equal(await counter.count('m', text(199, 100_000)), 100_004, 'the latest are kept');
  assert.equal(calls.length, 200);
  assert.equal(await counter.count('m', text(0, 100_000)), 100_002, 'the oldest went, and are counted again');
  assert.equal(calls.length, 201);
  // Tool strings are saved as they are: the file stays bounded too.
  for (let start = 0; start < 400; start += 100) {
    await counter.prefetch(
      'm',
      Array.from({ length: 100 }, (_, i) => text(start + i, 60_000)),
    ); // 24M characters in all
  }
  const saved = counter.snapshot()!;
  const chars = Object.keys(saved.plain).reduce((n, key) => n + key.length, 0);
  assert.ok(chars <= MEMO_CHARS, `${chars} characters of tool strings saved`);
  assert.equal(saved.plain[`m\u0000${text(399, 60_000)}`], 60_004, 'the latest are saved');
});

/** A message of one text part, as Copilot builds it afresh for every call. */
function said(role: number, text: string): vscode.LanguageModelChatMessage {
  return { role, name: undefined, content: [new stub.LanguageModelTextPart(text)] };
}

test('the messages of one text part go to the sealed file, the newest of each role first, and come back found by text', async () => {
  const { rpc, calls } = countingRpc();
  const provider = countingProvider(rpc, () => []);
  const model = { id: 'm' } as vscode.LanguageModelChatInformation;
  const token = new stub.CancellationTokenSource().token;
  const texts = Array.from({ length: 6 }, (_, i) => `message ${i} ${'w '.repeat(40 * (i + 1))}`);
  for (const [i, text] of texts.entries()) await provider.provideTokenCount(model, said(i % 2 ? 2 : 1, text), token);
  await provider.provideTokenCount(model, toolResult(1), token); // not one text part: hashed only
  const all = provider.tokens.textsToSeal(1 << 20)!;
  assert.deepEqual(
    all.map(([key, role, text, count]) => [key, role, texts.indexOf(text), count]),
    [
      ['m', 1, 0, 99],
      ['m', 1, 2, 99],
      ['m', 1, 4, 99],
      ['m', 2, 1, 99],
      ['m', 2, 3, 99],
      ['m', 2, 5, 99],
    ],
    'every message of one text part, with its tokenizer (here the model: its tokenizer is not known), role and count',
  );
  assert.equal(provider.tokens.textsToSeal(1 << 20), undefined, 'nothing new to seal');
  await provider.provideTokenCount(model, said(1, 'one more'), token);
  const bounded = provider.tokens.textsToSeal(1000)!;
  const chars = bounded.reduce((sum, [, , text]) => sum + text.length, 0);
  assert.ok(chars <= 1000, `${chars} characters kept of 1,000`);
  assert.deepEqual(new Set(bounded.map(([, role]) => role)), new Set([1, 2]), 'both roles keep their newest');
  assert.ok(bounded.some(([, , text]) => text === texts[5]) && !bounded.some(([, , text]) => text === texts[1]), 'the newest, not the oldest');

  // A restart: only the sealed texts, no hashed counts, and a sidecar that answers a wrong count.
  const restarted = new TokenCounter({ ...rpc, request: () => Promise.reject(new Error('no round trip expected')) });
  restarted.restoreMessageTexts(all.map(([key, role, text]) => [key, role, text, 1234]));
  const asked = calls.length;
  for (const [i, text] of texts.entries()) {
    assert.equal(
      await restarted.countMessage('m', said(i % 2 ? 2 : 1, text), i % 2 ? 2 : 1, text, () => ({ role: 'user', content: [] }) as unknown as MessageIn),
      1234,
    );
  }
  assert.equal(calls.length, asked, 'found by text, without a round trip');
  assert.equal(restarted.textsToSeal(1 << 20), undefined, 'what was restored is not new');
});
