// The picker the user curates (issue 22 §3), through the real extension.ts (VS Code's API stubbed),
// the real sidecar and the loopback fake gateway: "Choose Gateway Models…" offers the catalogue with
// windows and prices and writes `picker.models`; a model left out is still given to VS Code, marked
// not user-selectable; a model without tools carries a warning.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway } from './real';
import { activate } from '../../extension/extension';
import type { ModelEntry } from '../../extension/contract';
import { isShown, matches, rowDetail, sortModels } from '../../extension/curate';
import type { GatewayChatProvider } from '../../extension/provider';
import { until } from './until';

const subscriptions: { dispose(): unknown }[] = [];
const gateway = bundleGateway({
  defaultKey: true,
  cleanup: () => {
    subscriptions.forEach((d) => d.dispose());
    delete stub.settings['vercelAiGateway.picker.models'];
  },
});
let provider: GatewayChatProvider;
let changes = 0;

before(async () => {
  const storage = gateway.folder('agl-curate-');
  const context = { subscriptions, secrets: new stub.SecretStorage(), globalStorageUri: { fsPath: storage }, globalState: new stub.Memento() };
  await activate(context as unknown as vscode.ExtensionContext);
  provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
  provider.onDidChangeLanguageModelChatInformation(() => changes++);
});

type Info = vscode.LanguageModelChatInformation & { isUserSelectable?: boolean; warningText?: Record<string, string>; statusIcon?: { id: string } };
const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const listed = async () => new Map(((await provider.provideLanguageModelChatInformation({ silent: true }, token())) as Info[]).map((m) => [m.id, m]));

test('patterns: ids and globs, case-sensitive; none set shows every model', () => {
  assert.ok(matches('anthropic/claude-sonnet-4.5', 'anthropic/*'));
  assert.ok(matches('openai/gpt-5', 'openai/gpt-?'));
  assert.ok(matches('openai/o3', 'openai/o[34]') && !matches('openai/o1', 'openai/o[34]') && matches('openai/o1', 'openai/o[!34]'));
  assert.ok(!matches('openai/gpt-5-mini', 'openai/gpt-5'), 'an id is matched whole');
  assert.ok(!matches('OpenAI/gpt-5', 'openai/*'));
  assert.ok(matches('a.b/c+d', 'a.b/c+d') && !matches('axb/c+d', 'a.b/c+d'), 'other characters are literal');
  assert.ok(isShown('x/y', []) && !isShown('x/y', ['a/*']));
});

test('Choose Gateway Models… writes the models picked; the others stay registered, not offered', async () => {
  const before = await listed();
  assert.ok(
    [...before.values()].every((m) => m.isUserSelectable === undefined),
    'every model offered before a choice',
  );
  const plain = before.get('fake/plain')!;
  // VS Code draws each value of the record on a line of its own: a bare string, a character per line.
  assert.match(Object.values(plain.warningText ?? {}).join('\n'), /does not support tools/, 'a model without tools says so in the picker');
  assert.equal(plain.statusIcon?.id, 'warning');
  assert.equal(before.get('fake/text')!.warningText, undefined, 'no warning where there is nothing to warn of');

  const seen = changes;
  stub.answers.quickPickMany.push(['Fake Text', 'Fake Tools']);
  await stub.commands.executeCommand('vercelAiGateway.chooseModels');
  const shown = stub.quickPicks.at(-1)!;
  const items = shown.items as { label: string; description: string; detail: string; picked: boolean }[];
  assert.ok((shown.options as { canPickMany?: boolean }).canPickMany, 'several at once');
  const text = items.find((i) => i.label === 'Fake Text')!;
  assert.deepEqual(
    [text.description, text.detail.split(' · First token')[0], text.picked],
    ['fake/text', '200K · $3.00/$15.00', true],
    'the window and prices',
  );
  assert.deepEqual(stub.settings['vercelAiGateway.picker.models'], ['fake/text', 'fake/tools']);
  assert.equal(stub.configUpdates.at(-1)?.target, stub.ConfigurationTarget.Global, "the user's settings");
  assert.ok(changes > seen, 'VS Code is told the list changed');

  const after = await listed();
  assert.equal(after.size, before.size, 'no model dropped: settings that name one keep working');
  for (const [id, model] of after) assert.equal(model.isUserSelectable, ['fake/text', 'fake/tools'].includes(id) ? undefined : false, id);

  stub.answers.quickPickMany.push(items.map((i) => i.label)); // every model again
  await stub.commands.executeCommand('vercelAiGateway.chooseModels');
  assert.deepEqual(stub.settings['vercelAiGateway.picker.models'], [], 'all picked: the setting offers every model, new ones too');
});

test("Choose Gateway Models… shows each model's metrics and sorts by them, keeping the choice", async () => {
  // The sidecar fetches them after the list and says so (gateway/metrics); the provider fetches the list again.
  await until(async () => (await provider.catalogue()).some((m) => m.metrics !== null), 'the metrics arrived', 15_000, 50);
  stub.settings['vercelAiGateway.picker.models'] = ['fake/text', 'fake/pricey'];
  const shown = async (buttons: string[]) => {
    stub.answers.quickPickButtons.push(buttons);
    stub.answers.quickPickMany.push(undefined); // closed: nothing written
    await stub.commands.executeCommand('vercelAiGateway.chooseModels');
    const { items, options } = stub.quickPicks.at(-1)!;
    return { items: items as { label: string; detail: string; picked: boolean }[], options: options as { title: string; buttons: string[] } };
  };
  const first = await shown(['Sort by first token']);
  assert.deepEqual(first.options.buttons, ['Sort by cost', 'Sort by first token', 'Sort by tokens per second', 'Sort by reliability']);
  assert.equal(first.options.title, 'Gateway models in the model picker, by first token');
  assert.deepEqual(
    first.items.slice(0, 4).map((i) => i.label),
    ['Fake Tools', 'Fake Pricey', 'Fake Text', 'Fake Reasoning'],
    'quickest first; the models without metrics after them',
  );
  assert.equal(first.items[0].detail, '128K · $1.00/$2.00 · First token 0.25 s (p95 0.7 s) · 140 tokens/s · 99.9 % up');
  assert.ok(!first.items.slice(4).some((i) => i.detail.includes('First token')), 'nothing measured, nothing shown');
  assert.deepEqual(
    first.items.filter((i) => i.picked).map((i) => i.label),
    ['Fake Pricey', 'Fake Text'],
    'the models offered stay checked in the new order',
  );
  const reliable = await shown(['Sort by first token', 'Sort by reliability']);
  assert.deepEqual(
    reliable.items.slice(0, 4).map((i) => i.label),
    ['Fake Pricey', 'Fake Tools', 'Fake Text', 'Fake Reasoning'],
    'the most often up first',
  );
  const throughput = await shown(['Sort by tokens per second']);
  assert.deepEqual(
    throughput.items.slice(0, 4).map((i) => i.label),
    ['Fake Tools', 'Fake Pricey', 'Fake Text', 'Fake Reasoning'],
  );
  assert.deepEqual(stub.settings['vercelAiGateway.picker.models'], ['fake/text', 'fake/pricey'], 'closed: nothing written');
});

test('sortModels: ascending keys, the unmeasured last, ties as listed; cost by output, then input price', () => {
  const model = (id: string, output: number | null, firstTokenMs: number | null) =>
    ({ id, pricing: { input: 1, output }, metrics: firstTokenMs === null ? null : { firstTokenMs } }) as unknown as ModelEntry;
  const models = [model('a', 5, null), model('b', 2, 300), model('c', null, 100), model('d', 2, 300)];
  assert.deepEqual(
    sortModels(models, 'firstToken').map((m) => m.id),
    ['c', 'b', 'd', 'a'],
  );
  assert.deepEqual(
    sortModels(models, 'cost').map((m) => m.id),
    ['b', 'd', 'a', 'c'],
  );
  assert.deepEqual(rowDetail({ ...models[0], detail: '8K' }), '8K', 'no metrics: the detail as it was');
});
