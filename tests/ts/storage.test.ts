// Files in global storage: read back entry by entry (a bad entry is dropped, never trusted, never
// fatal) and written atomically, so that a reader in another window never sees part of a file.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { EffortProperty, ModelEntry } from '../../extension/contract';
import type { Rpc } from '../../extension/sidecar/rpc';
import { checkModels } from '../../extension/saved';
import { checkCounts, mergeCounts } from '../../extension/counts/shapes';
import { readJson, writeJsonAtomic } from '../../extension/storage';
import { TokenCounter } from '../../extension/counts/memo';

const HASH = 'qUqP5cyxm6YcTAhz05Hph5gvu9M='; // the shape of a keyed hash in base64 (160 bits)
const KEY_ID = 'k3yIdOfSixteenCh'; // the shape of a key's id
const MODEL: ModelEntry = {
  id: 'a/b',
  name: 'B',
  family: 'b',
  version: '1',
  contextWindow: 1000,
  maxInputTokens: 900,
  maxOutputTokens: 100,
  capabilities: { toolCalling: true, imageInput: true },
  reasoning: false,
  pricing: { input: 1, output: 2, cacheRead: null, cacheWrite: null, tiers: [] },
  tags: ['vision'],
  ownedBy: 'a',
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
};
const EFFORT_MENU: EffortProperty = {
  type: 'string',
  title: 'Thinking Effort',
  description: 'How much the model reasons',
  enum: ['low', 'medium', 'high'],
  enumItemLabels: ['Low', 'Medium', 'High'],
  enumDescriptions: ['less', 'balanced', 'more'],
  default: 'medium',
  group: 'navigation',
};

const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-storage-'));
  dirs.push(dir);
  return dir;
};
after(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

test('token counts: whole files of the wrong type are dropped and counted', () => {
  for (const raw of [null, 'oops', 7, [], [1, 2]]) assert.deepEqual(checkCounts(raw), { value: { plain: {}, hashed: {} }, dropped: 1 }, JSON.stringify(raw));
  assert.deepEqual(checkCounts(undefined), { value: { plain: {}, hashed: {} }, dropped: 0 }, 'a missing file is not an error');
  assert.deepEqual(checkCounts({ plain: [], hashed: 'x' }), { value: { plain: {}, hashed: {} }, dropped: 2 });
});

test('token counts: only non-negative safe integers under well-formed keys are kept', () => {
  const plain = {
    'm\u0000ok': 3,
    'm\u0000zero': 0,
    'm\u0000str': 'oops',
    'm\u0000neg': -7,
    'm\u0000inf': Infinity,
    'm\u0000nan': NaN,
    'm\u0000frac': 1.5,
    'm\u0000huge': 1e20,
    'no-separator': 1,
    '\u0000no-model': 1,
    'm\u0000null': null,
  };
  const hashed = { [HASH]: 5, short: 5, [HASH.replace('=', 'A')]: 5 };
  const { value, dropped } = checkCounts({ plain, hashed });
  assert.deepEqual(value, { plain: { 'm\u0000ok': 3, 'm\u0000zero': 0 }, hashed: { [HASH]: 5 } });
  assert.equal(dropped, 11);
});

test('restore drops what is invalid, says how much, and makes the next save rewrite the file', async () => {
  const rpc: Rpc = { request: async <R>() => ({ counts: [4] }) as R, onParts: () => ({ dispose() {} }) };
  const counter = new TokenCounter(rpc);
  assert.equal(counter.restore({ plain: { 'm\u0000kept': 2, 'm\u0000bad': -7 }, hashed: { [HASH]: 'oops' } }), 2);
  assert.equal(await counter.count('m', 'kept'), 2);
  assert.deepEqual(counter.snapshot(), { plain: { 'm\u0000kept': 2 }, hashed: {} }, 'the repaired file');
  assert.equal(new TokenCounter(rpc).restore(null), 1);
  const clean = new TokenCounter(rpc);
  assert.equal(clean.restore({ plain: { 'm\u0000kept': 2 }, hashed: {} }), 0);
  assert.equal(clean.snapshot(), undefined, 'a clean file is not rewritten');
});

test("merging keeps both windows' counts", () => {
  const merged = mergeCounts({ key: KEY_ID, plain: { 'm\u0000a': 1 }, hashed: { [HASH]: 2 } }, { key: KEY_ID, plain: { 'm\u0000b': 3 }, hashed: {} });
  assert.deepEqual(merged, { key: KEY_ID, plain: { 'm\u0000a': 1, 'm\u0000b': 3 }, hashed: { [HASH]: 2 } });
});

test("merging: hashed counts join under one key only; unkeyed ones (before keys) go, and a window without a key keeps the file's", () => {
  const other = 'AAAAAAAAAAAAAAAA';
  const plain = { 'm\u0000a': 1 };
  assert.deepEqual(mergeCounts({ plain, hashed: { [HASH]: 2 } }, { key: KEY_ID, plain: {}, hashed: {} }), { key: KEY_ID, plain, hashed: {} }, 'unkeyed');
  assert.deepEqual(
    mergeCounts({ key: other, plain, hashed: { [HASH]: 2 } }, { key: KEY_ID, plain: {}, hashed: {} }),
    { key: KEY_ID, plain, hashed: {} },
    'another key',
  );
  assert.deepEqual(
    mergeCounts({ key: other, plain, hashed: { [HASH]: 2 } }, { plain: {}, hashed: {} }),
    { key: other, plain, hashed: { [HASH]: 2 } },
    'no key here',
  );
  assert.deepEqual(mergeCounts({ plain, hashed: { [HASH]: 2 } }, { plain: {}, hashed: {} }), { plain, hashed: {} }, 'neither');
  assert.equal(checkCounts({ key: 'not an id', plain: {}, hashed: {} }).dropped, 1, 'a malformed key id');
  assert.equal(checkCounts({ key: KEY_ID, plain: {}, hashed: {} }).value.key, KEY_ID);
});

test('model cache: entries of the wrong shape are dropped one by one; duplicates keep the first', () => {
  assert.deepEqual(checkModels(null), { value: [], dropped: 1 });
  assert.deepEqual(checkModels({ models: [] }), { value: [], dropped: 1 });
  const bad = [
    null,
    'oops',
    [],
    { ...MODEL, id: '' },
    { ...MODEL, id: 7 },
    { ...MODEL, name: null },
    { ...MODEL, maxInputTokens: 0 },
    { ...MODEL, maxOutputTokens: '100' },
    { ...MODEL, contextWindow: Infinity },
    { ...MODEL, contextWindow: 10.5 },
    { ...MODEL, capabilities: { toolCalling: 'yes', imageInput: true } },
    { ...MODEL, capabilities: null },
    { ...MODEL, pricing: { ...MODEL.pricing, input: -1 } },
    { ...MODEL, pricing: { input: 1, output: 2 } },
    { ...MODEL, pricing: { ...MODEL.pricing, input: NaN } },
    { ...MODEL, reasoning: 'no' },
    { ...MODEL, tags: 'vision' },
    { ...MODEL, tags: [1] },
    { ...MODEL, ownedBy: undefined },
    { ...MODEL, description: 3 },
    { ...MODEL, budgetFactor: NaN },
    { ...MODEL, budgetFactor: 10 },
    { ...MODEL, budgetInputTokens: -1 },
    { ...MODEL, tokenizer: 5 },
    { ...MODEL, tokenizer: '../../o200k' },
    { ...MODEL, configurationSchema: { properties: { reasoningEffort: { ...EFFORT_MENU, enum: ['low', 'ultra'] } } } },
    { ...MODEL, configurationSchema: { properties: { reasoningEffort: { ...EFFORT_MENU, default: 'xhigh' } } } },
    { ...MODEL, configurationSchema: { properties: { reasoningEffort: { ...EFFORT_MENU, enumItemLabels: ['Low'] } } } },
    { ...MODEL, configurationSchema: { properties: { reasoningEffort: { ...EFFORT_MENU, group: 'tokens' } } } },
    { ...MODEL, configurationSchema: { properties: {} } },
    { ...MODEL, configurationSchema: 'menu' },
  ];
  const second = { ...MODEL, id: 'c/d' };
  const { value, dropped } = checkModels([...bad, MODEL, { ...MODEL, name: 'duplicate' }, second]);
  assert.deepEqual(value, [MODEL, second]);
  assert.equal(dropped, bad.length + 1);
});

test('models.json: an id, family or version the catalogue would refuse from the gateway is refused here too', () => {
  // VS Code draws `id@version` in the Language Models editor's hover as trusted markdown, and the
  // saved list is what it gets before the sidecar answers: the catalogue's own rule
  // (server/gateway_lm/offer/catalogue.py SAFE_ID, generated into contract.ts) applies to the file too.
  const markup = ['[x](command:workbench.action.openSettings)', '<img src=x>', 'a\nb', 'a b', '`x`', '<https://e.com>', 'x'.repeat(201)];
  const bad = markup.flatMap((text) => [
    { ...MODEL, id: text },
    { ...MODEL, family: text },
    { ...MODEL, version: text },
    { ...MODEL, fastTierOf: text },
  ]);
  const { value, dropped } = checkModels([...bad, MODEL, { ...MODEL, id: 'anthropic/claude-sonnet-4.5', version: '2025-09-29T00:00:00Z' }]);
  assert.deepEqual(
    value.map((m) => m.id),
    ['a/b', 'anthropic/claude-sonnet-4.5'],
  );
  assert.equal(dropped, bad.length);
});

test('models.json: a model with its effort menu is kept; one saved before menus existed has none', () => {
  const withMenu = { ...MODEL, id: 'r/one', configurationSchema: { properties: { reasoningEffort: EFFORT_MENU } } };
  const { configurationSchema: _menu, ...old } = { ...MODEL, id: 'r/two' };
  const { value, dropped } = checkModels([withMenu, old]);
  assert.equal(dropped, 0);
  assert.deepEqual(value, [withMenu, { ...old, configurationSchema: null }]);
});

test('models.json saved before the budget unit: its entries are kept, in real tokens as with a factor of 1', () => {
  const { budgetFactor: _factor, budgetInputTokens: _tokens, ...old } = { ...MODEL, maxInputTokens: 700 };
  const { value, dropped } = checkModels([old]);
  assert.equal(dropped, 0);
  assert.deepEqual(value, [{ ...old, budgetFactor: 1, budgetInputTokens: 700 }]);
});

test('models.json saved before tokenizer: its entries are kept, with the tokenizer not known', () => {
  const { tokenizer: _tokenizer, ...old } = MODEL;
  const { value, dropped } = checkModels([old]);
  assert.equal(dropped, 0);
  assert.deepEqual(value, [{ ...old, tokenizer: '' }]);
});

test('models.json saved before fast tiers were named: its entries are kept, as no fast tier; a bad name is dropped', () => {
  const { fastTierOf: _tier, ...old } = MODEL;
  const tier = { ...MODEL, id: 'x/model-fast', fastTierOf: 'x/model' };
  const { value, dropped } = checkModels([old, tier, { ...MODEL, id: 'x/bad', fastTierOf: 7 }]);
  assert.equal(dropped, 1);
  assert.deepEqual(value, [{ ...old, fastTierOf: null }, tier]);
});

test("models.json saved before the models' metrics: kept, with none; metrics that are not numbers are dropped", () => {
  const { metrics: _metrics, ...old } = MODEL;
  const metrics = {
    provider: 'anthropic',
    providers: 2,
    firstTokenMs: 250,
    firstTokenP95Ms: 700,
    tokensPerSecond: 140,
    uptimePercent: 99.9,
    summary: 'First token',
  };
  const measured = { ...MODEL, id: 'x/measured', metrics };
  const bad = [
    { ...metrics, firstTokenMs: 'fast' },
    { ...metrics, uptimePercent: 101 },
    { ...metrics, provider: 'a [link](command:x)' },
  ];
  const { value, dropped } = checkModels([old, measured, ...bad.map((m, i) => ({ ...MODEL, id: `x/bad${i}`, metrics: m }))]);
  assert.equal(dropped, 3);
  assert.deepEqual(value, [{ ...old, metrics: null }, measured]);
});

test('readJson: a missing file is quiet; an unreadable or invalid one is one warning; nothing throws', async () => {
  const dir = tempDir();
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  assert.equal(await readJson(path.join(dir, 'missing.json'), warn), undefined);
  assert.equal(warnings.length, 0);
  fs.writeFileSync(path.join(dir, 'truncated.json'), '{"plain": {"a');
  assert.equal(await readJson(path.join(dir, 'truncated.json'), warn), undefined);
  fs.mkdirSync(path.join(dir, 'folder.json'));
  assert.equal(await readJson(path.join(dir, 'folder.json'), warn), undefined);
  assert.equal(warnings.length, 2);
  assert.match(warnings[0], /truncated\.json is not valid JSON/);
  fs.writeFileSync(path.join(dir, 'null.json'), 'null');
  assert.equal(await readJson(path.join(dir, 'null.json'), warn), null);
});

test('atomic writes: two writers and a reader on one file, the reader never sees part of a file', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'token-counts.json');
  const big = (window: string) => ({ window, hashed: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`${window}-${i}`, i])) });
  let writing = true;
  let reads = 0;
  const reader = (async () => {
    while (writing) {
      const text = await fs.promises.readFile(file, 'utf8').catch(() => undefined);
      if (text !== undefined) {
        assert.doesNotThrow(() => JSON.parse(text), `read ${reads}: ${text.length} characters that are not a whole file`);
        reads++;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const writer = async (window: string) => {
    for (let i = 0; i < 25; i++) await writeJsonAtomic(file, big(window));
  };
  await Promise.all([writer('first'), writer('second')]);
  writing = false;
  await reader;
  assert.ok(reads > 10, `the reader read ${reads} times`);
  assert.deepEqual(fs.readdirSync(dir), ['token-counts.json'], 'no temporary file is left');
});
