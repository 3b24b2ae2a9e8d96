// What an agent session costs, as a user meets it (issue 42): the built bundle's activate()
// (dist/extension.js) under the stub `vscode`, the real sidecar it spawns, and the fake gateway's
// `/cache/` route, where a provider's prompt cache bills each request as the provider would
// (tests/fake_cache.py: Anthropic's breakpoints and lookback, OpenAI's implicit prefix cache). A
// growing agent session — a system prompt, tools, a task, then per request a tool call and its result
// (the repository's own source files) — with the settings a user has, and with caching turned off.
// bench/cache.mjs measures the same on a longer session (rfcs/0005-performance.md, "What an agent
// session costs").
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway, ROOT } from './real';
import type * as extension from '../../extension/extension';
import type { GatewayChatProvider } from '../../extension/provider';

const gateway = bundleGateway({ defaultKey: true, path: '/cache' });
const bundle = createRequire(__filename)(path.join(ROOT, 'dist/extension.js')) as typeof extension; // its `vscode` is the stub (register.ts)
const CLAUDE = 'anthropic/fake-claude';
const GPT = 'openai/fake-gpt';
const REQUESTS = 30;
const FROM = 11; // the bound holds over requests 11–30
const CACHING = 'vercelAiGateway.routing.caching';

interface Cached {
  input_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  outside_sha: string;
  item_shas: string[];
  prompt_cache_key: string | null;
}
type Message = vscode.LanguageModelChatRequestMessage;

/** The repository's own source, cut into tool results of 2–6K characters (the same every run). */
function sources(): { file: string; text: string }[] {
  const dir = path.join(ROOT, 'server/gateway_lm/request');
  const all = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.py'))
    .sort()
    .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
    .join('\n');
  return Array.from({ length: REQUESTS }, (_, i) => {
    const start = (i * 4099) % (all.length - 6000);
    return { file: `request/part${i}.py`, text: all.slice(start, start + 2000 + ((i * 1733) % 4000)) };
  });
}

/** Request i's messages (i from 1): made afresh each time, as VS Code hands a provider new objects. */
function sessionMessages(run: string, i: number): Message[] {
  const message = (role: number, content: unknown[]) => ({ role, name: undefined, content }) as unknown as Message;
  const system = `You are an expert AI programming assistant (session ${run}).\n\n${fs.readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8').slice(0, 9000)}`;
  const messages = [
    message(3, [new stub.LanguageModelTextPart(system)]),
    message(1, [new stub.LanguageModelTextPart(`Session ${run}: explain how a request is built.`)]),
  ];
  sources()
    .slice(0, i - 1)
    .forEach((source, step) => {
      const callId = `call_${run}_${step}`;
      messages.push(
        message(2, [
          new stub.LanguageModelTextPart(`Step ${step}: I read ${source.file}.`),
          new stub.LanguageModelToolCallPart(callId, 'read_file', { filePath: source.file }),
        ]),
        message(1, [new stub.LanguageModelToolResultPart(callId, [new stub.LanguageModelTextPart(source.text)])]),
      );
    });
  return messages;
}

const TOOLS = Array.from({ length: 12 }, (_, i) => ({
  name: i ? `tool_${i}` : 'read_file',
  description: `Tool ${i}: reads, searches or edits the workspace, as Copilot's tools do.`,
  inputSchema: {
    type: 'object',
    properties: { filePath: { type: 'string', description: 'An absolute path.' }, line: { type: 'integer' } },
    required: ['filePath'],
  },
}));

/** One session of `requests` on `model` in a window of its own with `settings`; the fake's record of each request. */
async function runSession(model: string, run: string, requests: number, settings: Record<string, unknown> = {}): Promise<Cached[]> {
  Object.assign(stub.settings, settings);
  const subscriptions: { dispose(): unknown }[] = [];
  try {
    const context = { subscriptions, secrets: new stub.SecretStorage(), globalStorageUri: { fsPath: gateway.folder('agl-cache-') } };
    await bundle.activate(context as unknown as vscode.ExtensionContext);
    const provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
    const info = { id: model } as vscode.LanguageModelChatInformation;
    for (let i = 1; i <= requests; i++) {
      const token = new stub.CancellationTokenSource().token as unknown as vscode.CancellationToken;
      await provider.provideLanguageModelChatResponse(info, sessionMessages(run, i), { tools: TOOLS, toolMode: 1 }, { report() {} }, token);
    }
  } finally {
    subscriptions.forEach((d) => d.dispose());
    for (const name of Object.keys(settings)) delete stub.settings[name];
  }
  const log = (await (await fetch(`${gateway.url}/_requests`)).json()) as { body: { model: string }; cache?: Cached }[];
  const mine = log.filter((e) => e.cache && e.body.model === model).map((e) => e.cache!);
  assert.ok(mine.length >= requests, `the gateway saw ${mine.length} of ${requests} requests`);
  return mine.slice(-requests);
}

async function prices(model: string): Promise<{ input: number; read: number; write: number }> {
  const list = (await (await fetch(`${gateway.url}/cache/v1/models`)).json()) as { data: { id: string; pricing: Record<string, string> }[] };
  const pricing = list.data.find((m) => m.id === model)!.pricing;
  return { input: Number(pricing.input), read: Number(pricing.input_cache_read), write: Number(pricing.input_cache_write ?? pricing.input) };
}

const sum = (log: Cached[], f: (r: Cached) => number) => log.reduce((n, r) => n + f(r), 0);
const readShare = (log: Cached[]) => sum(log.slice(FROM - 1), (r) => r.cached_tokens) / sum(log.slice(FROM - 1), (r) => r.input_tokens);

test(
  'default settings: a Claude agent session reads ≥ 80 % of its input from the cache in requests 11–30 and costs ≤ 0.5× uncached',
  { timeout: 60_000 },
  async () => {
    const log = await runSession(CLAUDE, 'default', REQUESTS);
    const price = await prices(CLAUDE);
    const cost = sum(
      log,
      (r) => (r.input_tokens - r.cached_tokens - r.cache_write_tokens) * price.input + r.cached_tokens * price.read + r.cache_write_tokens * price.write,
    );
    const uncached = sum(log, (r) => r.input_tokens * price.input);
    const share = readShare(log);
    assert.ok(share >= 0.8, `read from the cache in requests ${FROM}–${REQUESTS}: ${(100 * share).toFixed(1)} %`);
    assert.ok(cost <= 0.5 * uncached, `the session's input cost: ${(cost / uncached).toFixed(2)}× uncached ($${cost.toFixed(4)} vs $${uncached.toFixed(4)})`);
  },
);

test('routing.caching "off": a Claude session reads nothing from the cache and writes nothing', { timeout: 60_000 }, async () => {
  const log = await runSession(CLAUDE, 'off', REQUESTS, { [CACHING]: 'off' });
  assert.equal(
    sum(log, (r) => r.cached_tokens + r.cache_write_tokens),
    0,
  );
  assert.ok(log.at(-1)!.input_tokens > 20_000, `a session long enough to cache (${log.at(-1)!.input_tokens} tokens)`);
});

test('OpenAI: a session carries one prompt_cache_key, another session another, and each body extends the last byte for byte', { timeout: 60_000 }, async () => {
  const first = await runSession(GPT, 'gpt-a', 10);
  const second = await runSession(GPT, 'gpt-b', 3);
  const keys = new Set(first.map((r) => r.prompt_cache_key));
  const key = first[0].prompt_cache_key;
  assert.equal(keys.size, 1, `one key a session: ${[...keys].join(', ')}`);
  assert.ok(typeof key === 'string' && key.length >= 1 && key.length <= 64, `a key the gateway takes (≤ 64 characters): ${key}`);
  assert.ok(
    second.every((r) => r.prompt_cache_key === second[0].prompt_cache_key && r.prompt_cache_key !== key),
    'another conversation, another key',
  );
  // Outside its `input` array the raw body is the same bytes as the one before; its first items are
  // the one before's items, byte for byte: nothing per request ahead of the history.
  first.slice(1).forEach((r, i) => {
    assert.equal(r.outside_sha, first[i].outside_sha, `request ${i + 2}: the body outside \`input\` changed`);
    assert.deepEqual(r.item_shas.slice(0, first[i].item_shas.length), first[i].item_shas, `request ${i + 2}: an earlier item changed`);
  });
  const later = first.slice(1);
  const share = sum(later, (r) => r.cached_tokens) / sum(later, (r) => r.input_tokens);
  assert.ok(share >= 0.8, `what the stable prefix buys: ${(100 * share).toFixed(1)} % of requests 2–10 read from the cache`);
});
