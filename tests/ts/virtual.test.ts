// Add Virtual Model… (issue 45 §3) through the real extension.ts (VS Code's API stubbed), the real
// sidecar and the loopback fake gateway, which answers for `vmc/team-coder` off its list: the id typed
// is checked, written to the user's settings only, and the model reaches the picker with the window and
// prices the gateway gives it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { activateWindow, bundleGateway } from './real';
import { until } from './until';
import { COMMANDS } from '../../extension/config';
import { MAX_VIRTUAL_MODELS, VIRTUAL_ID_PATTERN } from '../../extension/contract';
import type { GatewayChatProvider } from '../../extension/provider';
import { virtualId, virtualIdProblem } from '../../extension/virtual';

process.env.FAKE_GATEWAY_VIRTUAL = '1'; // before the fake starts: it answers GET …/models/vmc/team-coder
const subscriptions: { dispose(): unknown }[] = [];
const gateway = bundleGateway({ defaultKey: true, cleanup: () => subscriptions.forEach((d) => d.dispose()) });
let provider: GatewayChatProvider;

before(async () => {
  provider = await activateWindow(gateway.folder('agl-virtual-'), subscriptions);
});

type Info = vscode.LanguageModelChatInformation & Record<string, unknown>;

async function listed(): Promise<Map<string, Info>> {
  const token = new CancellationTokenSource().token as unknown as vscode.CancellationToken;
  const models = (await provider.provideLanguageModelChatInformation({ silent: true }, token)) as Info[];
  return new Map(models.map((m) => [m.id, m]));
}

test('an added virtual model is written to the user settings and offered with what the gateway says', { timeout: 60_000 }, async () => {
  assert.ok(!(await listed()).has('vmc/team-coder'), 'the gateway does not list it');
  stub.answers.inputBox.push('  team-coder '); // the slug alone: the prefix is added
  await stub.commands.executeCommand(COMMANDS.addVirtualModel);
  const update = stub.configUpdates.find((u) => u.key === 'vercelAiGateway.virtualModels');
  assert.deepEqual(update, { key: 'vercelAiGateway.virtualModels', value: ['vmc/team-coder'], target: stub.ConfigurationTarget.Global });
  await until(async () => (await listed()).has('vmc/team-coder'), 'the picker offers vmc/team-coder', 20_000, 50);
  const model = (await listed()).get('vmc/team-coder')!;
  assert.equal(model.name, 'Team Coder');
  assert.deepEqual([model.maxContextWindowTokens, model.inputCost, model.outputCost], [400_000, 200, 800]);
  assert.match(String(model.tooltip), /A virtual model: your team's saved gateway configuration/);
  assert.equal(model.detail, 'virtual · 400K · $2.00/$8.00');
});

test('the input box refuses what is no virtual model id, a repeat and one past the bound', () => {
  assert.equal(virtualId(' vmc/a '), 'vmc/a');
  assert.equal(virtualId('a'), 'vmc/a');
  for (const bad of ['vmc/../x', 'anthropic/claude', 'vmc/a b', 'vmc/[x](command:y)', 'x'.repeat(300)])
    assert.match(virtualIdProblem(bad, []) ?? '', /vmc\/ and its slug/, bad);
  assert.match(virtualIdProblem('vmc/a', ['vmc/a']) ?? '', /added already/);
  const full = Array.from({ length: MAX_VIRTUAL_MODELS }, (_, i) => `vmc/m${i}`);
  assert.match(virtualIdProblem('vmc/new', full) ?? '', /At most 20/);
  assert.equal(virtualIdProblem('vmc/new', full.slice(1)), undefined);
});

test("package.json checks the setting's entries as the sidecar does", () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, { scope: string; maxItems: number; items: { pattern: string } }> } };
  };
  const declared = manifest.contributes.configuration.properties['vercelAiGateway.virtualModels'];
  assert.deepEqual([declared.items.pattern, declared.maxItems, declared.scope], [VIRTUAL_ID_PATTERN, MAX_VIRTUAL_MODELS, 'application']);
});
