// The tool strings counted before Copilot asks (rfcs/0004-token-accounting.md, "Counting costs
// nothing"): the provider over the real sidecar and the loopback fake gateway, with Copilot's own walk
// of vscode.lm.tools. The prefetch happens after the model list is served, never in it or under a
// chat; Copilot's walk then costs no round trip, on any model with the same tokenizer; counts are
// tiktoken's; changed tools are counted again; a hostile schema costs bounded work.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { CancellationTokenSource, MessageConnection } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { startGateway, startSidecar } from './real';
import type { CountParams, ModelEntry } from '../../extension/contract';
import { PREFETCH_DELAY_MS, PREFETCH_LIMITS, RECHECK_MS, ToolInfo, toolStrings } from '../../extension/counts/prefetch';
import { GatewayChatProvider } from '../../extension/provider';
import type { Rpc } from '../../extension/sidecar/rpc';
import { until } from './until';

const children: ChildProcess[] = [];
let gateway: string;
const providers: GatewayChatProvider[] = [];
const connections: MessageConnection[] = [];
// js-tiktoken: the bench's in-process tokenizer, a port independent of the sidecar's tiktoken.
let encoder: { encode(text: string): number[] };

before(async () => {
  const [{ Tiktoken }, o200k] = await Promise.all([import('js-tiktoken/lite'), import('js-tiktoken/ranks/o200k_base')]);
  encoder = new Tiktoken(o200k.default);
  gateway = await startGateway(children);
});

after(() => {
  providers.forEach((p) => p.dispose());
  connections.forEach((c) => c.dispose());
  children.forEach((child) => child.kill());
});

/** Copilot-like tools: enums, nested objects and arrays, an empty key, non-ASCII text. */
function copilotTools(prefix: string): ToolInfo[] {
  return Array.from({ length: 12 }, (_, i) => ({
    name: `${prefix}_${i}`,
    description: `Reads part ${i} of a file — «${prefix}» — and returns its lines with their numbers.`,
    inputSchema: {
      type: 'object',
      properties: {
        filePath: { type: 'string', description: `The absolute path of file ${i}.` },
        mode: { type: 'string', enum: ['read', 'write', `mode-${i}`] },
        ranges: { type: 'array', items: { type: 'object', properties: { start: { type: 'integer' }, end: { type: 'integer' } } } },
        '': { type: 'boolean', description: 'an empty key' },
      },
      required: ['filePath', 'mode'],
      additionalProperties: false,
    },
  }));
}

interface Harness {
  provider: GatewayChatProvider;
  counts: CountParams[]; // every gateway/countTokens the provider sent
  reads: () => number; // reads of vscode.lm.tools
  tools: ToolInfo[];
}

/** A provider as extension.ts builds it, on a fresh sidecar (whose tokenizer loads on its own a
 * second after start), its countTokens requests recorded. */
async function harness(tools: ToolInfo[]): Promise<Harness> {
  const { connection, router } = await startSidecar(children, gateway);
  connections.push(connection);
  const counts: CountParams[] = [];
  let reads = 0;
  const rpc: Rpc = {
    request: (method, params) => {
      if (method === 'gateway/countTokens') counts.push(params as CountParams);
      return connection.sendRequest(method, params);
    },
    onParts: (id, handler) => router.subscribe(id, handler),
  };
  const provider = new GatewayChatProvider(rpc, {
    apiKey: async () => 'test-key-0123456789',
    thinking: () => 'auto',
    loadCache: async () => [] as ModelEntry[],
    saveCache: async () => undefined,
    onUsage() {},
    tools: () => (reads++, tools.map((t) => ({ ...t }))), // a new array of new objects, as VS Code's
    log: { info() {}, warn() {}, error() {} },
  });
  providers.push(provider);
  return { provider, counts, reads: () => reads, tools };
}

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const info = (id: string) => ({ id }) as vscode.LanguageModelChatInformation;
const userMessage = (text: string) =>
  ({ role: 1, name: undefined, content: [new stub.LanguageModelTextPart(text)] }) as unknown as vscode.LanguageModelChatRequestMessage;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Copilot's walk of the tools (ExtensionContributedChatTokenizer.countToolTokens), one await at a time. */
async function copilotWalk(provider: GatewayChatProvider, model: string, tools: readonly ToolInfo[]): Promise<Map<string, number>> {
  const counted = new Map<string, number>();
  for (const text of toolStrings(tools)) counted.set(text, await provider.provideTokenCount(info(model), text, token()));
  return counted;
}

const allKnown = (h: Harness, model: string, tools: readonly ToolInfo[]) => () =>
  toolStrings(tools).every((s) => h.provider.tokens.known(model, s) !== undefined);

test('the tool strings are counted after the list is served, in the background; Copilot then walks them without a round trip, on every model with the tokenizer, with counts tiktoken gives', async () => {
  const h = await harness(copilotTools('read'));
  const listed = await h.provider.provideLanguageModelChatInformation({ silent: true }, token());
  assert.ok(listed.some((m) => m.id === 'fake/text'));
  assert.equal(h.reads(), 0, 'serving the list reads no tools: the prefetch runs in a timer after it');
  assert.equal(h.counts.length, 0);
  await until(allKnown(h, 'fake/text', h.tools), 'the tool strings are known');
  assert.equal(h.reads(), 1, 'one read of vscode.lm.tools');
  assert.ok(h.counts.length >= 1 && h.counts.every((c) => c.background === true), 'background batches only');
  const sent = h.counts.length;
  for (const model of ['fake/text', 'fake/tools', 'fake/reasoning']) {
    const counted = await copilotWalk(h.provider, model, h.tools);
    for (const [text, count] of counted) assert.equal(count, encoder.encode(text).length, `the count of ${JSON.stringify(text)} on ${model}`);
  }
  assert.equal(h.counts.length, sent, 'no count was asked during the walks');
  assert.equal(h.reads(), 1, 'hits never read vscode.lm.tools');
});

test('a walk that comes while the background batch still waits for the tokenizer waits for that batch, and makes the sidecar load it now', async () => {
  const h = await harness(copilotTools('early'));
  await h.provider.provideLanguageModelChatInformation({ silent: true }, token());
  await until(() => h.counts.length > 0, 'the prefetch was sent');
  // A chat streams: the sidecar does not load its tokenizer on its own until it ends (counting.py).
  let chatEnded = false;
  const chat = h.provider
    .provideLanguageModelChatResponse(info('fake/paced-150-20'), [userMessage('hi')], { toolMode: 1 }, { report() {} }, token())
    .finally(() => (chatEnded = true));
  const counted = await copilotWalk(h.provider, 'fake/text', h.tools);
  assert.equal(chatEnded, false, 'the walk did not wait for the chat to end');
  for (const [text, count] of counted) assert.equal(count, encoder.encode(text).length);
  const asked = h.counts.slice(1);
  assert.ok(
    asked.length === 1 && asked[0].texts.length === 0 && !asked[0].background,
    `one empty ordinary count, to load the tokenizer, not ${asked.length} requests for ${counted.size} strings`,
  );
  await chat;
});

test('no background batch is sent while a chat streams: it waits for the chat to end', async () => {
  const h = await harness(copilotTools('later'));
  await h.provider.provideLanguageModelChatInformation({ silent: true }, token());
  const chat = h.provider.provideLanguageModelChatResponse(info('fake/paced-40-25'), [userMessage('hi')], { toolMode: 1 }, { report() {} }, token());
  await sleep(PREFETCH_DELAY_MS + 300);
  assert.equal(h.counts.length, 0, 'nothing counted under the stream');
  await chat;
  await until(allKnown(h, 'fake/text', h.tools), 'the tool strings are known');
});

test('changed tools are counted again: an extension came (toolsMayHaveChanged) or a request offered a tool not seen', async () => {
  const h = await harness(copilotTools('first'));
  await h.provider.provideLanguageModelChatInformation({ silent: true }, token());
  const recheck = Date.now() + PREFETCH_DELAY_MS + RECHECK_MS[0]; // the first look again on its own
  await until(allKnown(h, 'fake/text', h.tools), 'the first tools are known');
  const added = copilotTools('second');
  h.tools.push(...added);
  h.provider.toolsMayHaveChanged();
  await until(allKnown(h, 'fake/text', added), 'the added tools are known, before the first recheck', recheck - Date.now() - 500);
  const third = copilotTools('third');
  h.tools.push(...third);
  await h.provider.provideLanguageModelChatResponse(info('fake/text'), [userMessage('hi')], { toolMode: 1, tools: third }, { report() {} }, token());
  await until(allKnown(h, 'fake/text', third), 'the tools of the request are known');
  const sent = h.counts.length;
  await copilotWalk(h.provider, 'fake/tools', h.tools);
  assert.equal(h.counts.length, sent);
});

test('a hostile schema costs bounded work: deep, huge, throwing; the rest is still prefetched and every count stays exact', async () => {
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 100_000; i++) deep = { type: 'object', properties: { nested: deep } };
  const throwing = new Proxy(
    {},
    {
      ownKeys: () => {
        throw new Error('no keys for you');
      },
    },
  );
  const long = 'lorem ipsum '.repeat(170_000); // 2 MB
  const huge = { type: 'string', enum: Array.from({ length: 200_000 }, (_, i) => `value number ${i}`) };
  const tools: ToolInfo[] = [
    { name: 'deep', description: 'a schema 100,000 levels deep', inputSchema: deep },
    { name: 'throwing', description: 'a schema that throws when walked', inputSchema: throwing },
    { name: 'huge', description: long, inputSchema: huge },
    ...copilotTools('fine'),
  ];
  const h = await harness(tools);
  let lag = 0;
  let last = performance.now();
  const ticker = setInterval(() => ((lag = Math.max(lag, performance.now() - last - 5)), (last = performance.now())), 5);
  try {
    await h.provider.provideLanguageModelChatInformation({ silent: true }, token());
    await until(allKnown(h, 'fake/text', copilotTools('fine')), 'the ordinary tools are known', 30_000);
    await sleep(500); // the last batches
  } finally {
    clearInterval(ticker);
  }
  const strings = h.counts.flatMap((c) => c.texts as string[]);
  assert.ok(strings.length <= PREFETCH_LIMITS.strings, `${strings.length} strings prefetched`);
  assert.ok(strings.reduce((n, s) => n + s.length, 0) <= PREFETCH_LIMITS.chars);
  assert.ok(
    h.counts.every((c) => c.texts.length <= 1_000 && (c.texts as string[]).reduce((n, s) => n + s.length, 0) <= 32_768),
    'every batch is small',
  );
  assert.ok(!strings.some((s) => s.length > PREFETCH_LIMITS.longest), 'the 2 MB description is not prefetched');
  assert.ok(strings.filter((s) => s.startsWith('value number')).length < PREFETCH_LIMITS.toolStrings, 'the huge enum is cut short');
  assert.ok(lag < 250, `the extension host was held ${lag.toFixed(0)} ms`);
  // What was not prefetched is counted when asked, exactly.
  for (const text of ['value number 199999', long]) {
    assert.equal(await h.provider.provideTokenCount(info('fake/text'), text, token()), encoder.encode(text).length);
  }
});
