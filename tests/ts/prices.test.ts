// Prices where VS Code shows them and the context the user pays for (issue 35 §1, §2), through the
// real extension.ts (VS Code's API stubbed), the real sidecar and the loopback fake gateway: each
// priced model carries VS Code's price fields in credits, a model priced in tiers a context-size
// menu, and VS Code is never given a null or a NaN where it reads a number or a schema.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import { activateWindow, bundleGateway } from './real';
import { priceFieldsOf, type GatewayChatProvider } from '../../extension/provider';
import { dollars, perMillion } from '../../extension/shared/money';

const subscriptions: { dispose(): unknown }[] = [];
const gateway = bundleGateway({ defaultKey: true, path: '/tiers', cleanup: () => subscriptions.forEach((d) => d.dispose()) });
let provider: GatewayChatProvider;

before(async () => {
  provider = await activateWindow(gateway.folder('agl-prices-'), subscriptions);
});

type Info = vscode.LanguageModelChatInformation & Record<string, unknown> & { configurationSchema?: { properties: Record<string, unknown> } };

async function models(): Promise<Map<string, Info>> {
  const token = new CancellationTokenSource().token as unknown as vscode.CancellationToken;
  const listed = (await provider.provideLanguageModelChatInformation({ silent: true }, token)) as Info[];
  return new Map(listed.map((m) => [m.id, m]));
}

test("each priced model carries VS Code's price fields in credits per million tokens; an unpriced one none", async () => {
  const listed = await models();
  const text = listed.get('fake/text')!;
  // $3 / $15 / $0.30 per million tokens: 300 / 1500 / 30 credits of $0.01.
  assert.deepEqual([text.inputCost, text.outputCost, text.cacheCost, text.priceCategory], [300, 1500, 30, 'medium']);
  assert.equal(text.pricing, '$3.00 in / $15.00 out per million tokens');
  assert.ok(!('cacheWriteCost' in text) && !('longContextInputCost' in text), 'a price the gateway does not list is left out, never null');
  const long = listed.get('fake/long')!;
  assert.deepEqual([long.longContextInputCost, long.longContextOutputCost, long.longContextCacheCost], [600, 2250, 60]);
  assert.equal(listed.get('fake/pricey')!.priceCategory, 'very_high');
  const plain = listed.get('fake/plain')!;
  for (const field of ['pricing', 'inputCost', 'outputCost', 'priceCategory']) assert.ok(!(field in plain), `fake/plain has no ${field}`);
});

test('a model priced in tiers gets a context-size menu, the cheaper tier preselected; menus it lacks are left out', async () => {
  const listed = await models();
  const long = listed.get('fake/long')!;
  const menu = long.configurationSchema?.properties.contextSize as { enum: number[]; enumItemLabels: string[]; default: number; group: string };
  assert.deepEqual(menu.enumItemLabels, ['200K', '1M']);
  assert.equal(menu.default, menu.enum[0]);
  assert.equal(menu.enum.at(-1), long.maxInputTokens, 'the whole window is the largest choice');
  assert.equal(menu.group, 'tokens');
  assert.deepEqual(Object.keys(long.configurationSchema!.properties), ['contextSize'], 'no null effort menu for VS Code to read');
  assert.deepEqual(Object.keys(listed.get('fake/reasoning')!.configurationSchema!.properties), ['reasoningEffort']);
  assert.equal(listed.get('fake/tools')!.configurationSchema, undefined);
});

test("VS Code is given each model's window as its own field: the gateway's, not input + output", async () => {
  // VS Code 1.139 shows `maxContextWindowTokens` in the picker's hover and its context meter, and
  // without it adds input and output (rfcs/0003, "The window as its own field"); the output
  // reservation makes that sum another number: 983,616 + 64,000 for a 1M window.
  const long = (await models()).get('fake/long')!;
  assert.equal(long.maxContextWindowTokens, 1_000_000);
  assert.notEqual(long.maxInputTokens + long.maxOutputTokens, 1_000_000, 'the sum alone would not say the window');
  assert.equal((await models()).get('fake/text')!.maxContextWindowTokens, 200_000);
});

test('a cost that is not a finite number is never given to VS Code', () => {
  const fields = priceFieldsOf({
    pricing: '',
    inputCost: Number.NaN,
    outputCost: Infinity,
    cacheCost: -1,
    cacheWriteCost: null,
    longContextInputCost: 600,
    longContextOutputCost: null,
    longContextCacheCost: null,
    longContextCacheWriteCost: null,
    priceCategory: 'high',
  });
  assert.deepEqual(fields, { longContextInputCost: 600, priceCategory: 'high' });
});

test('a price reads as money whatever the number: zero, of either sign, reads $0.00 (issue 43 §2.11)', () => {
  // The sidecar's per_million follows the same rule (tests/test_prices.py, PER_MILLION_SHOWN).
  const shown: [number, string][] = [
    [0, '$0.00'],
    [-0, '$0.00'],
    [3, '$3.00'],
    [0.5, '$0.50'],
    [0.1, '$0.10'],
    [0.075, '$0.075'],
    [0.0376, '$0.038'],
    [0.00126, '$0.0013'],
    [0.000001, '$0.000001'],
    [0.0000001, '<$0.000001'],
  ];
  assert.deepEqual(
    shown.map(([price]) => perMillion(price)),
    shown.map(([, text]) => text),
  );
  for (const precision of ['cents', 'request', 'bill'] as const) assert.deepEqual([dollars(0, precision), dollars(-0, precision)], ['$0.00', '$0.00']);
});
