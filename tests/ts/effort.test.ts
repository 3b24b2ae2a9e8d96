// Reasoning effort in the chat input (issue 22 §1), through the real extension.ts (VS Code's API
// stubbed), the real sidecar and the loopback fake gateway: each reasoning model is given VS Code a
// menu of the levels it accepts, a model that does not reason none, and the user's choice, as VS Code
// passes it in `modelConfiguration`, is the effort the gateway receives.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { activateWindow, bundleGateway } from './real';
import type { GatewayChatProvider } from '../../extension/provider';

const subscriptions: { dispose(): unknown }[] = [];
const gateway = bundleGateway({
  defaultKey: true,
  path: '/efforts', // the catalogue with reasoning_options
  settings: { reasoningEffort: 'xhigh' },
  cleanup: () => subscriptions.forEach((d) => d.dispose()),
});
let provider: GatewayChatProvider;

before(async () => {
  provider = await activateWindow(gateway.folder('agl-effort-'), subscriptions);
});

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
type Menu = { enum: string[]; enumItemLabels: string[]; default: string; group: string };
type Info = vscode.LanguageModelChatInformation & { configurationSchema?: { properties: { reasoningEffort: Menu } } };

async function models(): Promise<Map<string, Info>> {
  const listed = (await provider.provideLanguageModelChatInformation({ silent: true }, token())) as Info[];
  return new Map(listed.map((m) => [m.id, m]));
}

/** The `reasoning` of the request the gateway received for one chat, `configuration` as VS Code passes it. */
async function sentWith(model: Info, configuration: Record<string, unknown> | undefined): Promise<unknown> {
  const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('hi')] };
  const options = { tools: [], toolMode: 1, modelOptions: {}, ...(configuration ? { modelConfiguration: configuration } : {}) };
  const parts: unknown[] = [];
  await provider.provideLanguageModelChatResponse(model, [message], options, { report: (part) => void parts.push(part) }, token());
  const log = (await (await fetch(`${gateway.url}/_requests`)).json()) as { body: { model: string; reasoning?: unknown } }[];
  const last = log.at(-1)!;
  assert.equal(last.body.model, model.id);
  return last.body.reasoning;
}

test('each reasoning model gets a menu of the levels it accepts, the settings’ level preselected; others none', async () => {
  const listed = await models();
  const gpt5 = listed.get('openai/gpt-5')?.configurationSchema?.properties.reasoningEffort;
  assert.deepEqual(gpt5?.enum, ['minimal', 'low', 'medium', 'high']);
  assert.deepEqual(gpt5?.enumItemLabels, ['Minimal', 'Low', 'Medium', 'High']);
  assert.equal(gpt5?.default, 'high', 'the global xhigh, as gpt-5 takes it');
  assert.equal(gpt5?.group, 'navigation');
  assert.deepEqual(listed.get('fake/effort-catalogue')?.configurationSchema?.properties.reasoningEffort.enum, ['low', 'medium', 'high', 'xhigh']);
  for (const plain of ['fake/tools', 'fake/plain']) assert.equal(listed.get(plain)?.configurationSchema, undefined, `${plain} has no menu`);
});

test("the user's choice reaches the gateway; the untouched menu sends the settings' level, as the model takes it", async () => {
  const listed = await models();
  const gpt5 = listed.get('openai/gpt-5')!;
  assert.deepEqual(await sentWith(gpt5, { reasoningEffort: 'low' }), { effort: 'low', summary: 'auto' });
  assert.deepEqual(await sentWith(gpt5, { reasoningEffort: 'high' }), { effort: 'high', summary: 'auto' });
  assert.deepEqual(await sentWith(gpt5, undefined), { effort: 'high', summary: 'auto' }, 'no menu (an older host): xhigh, as high');
  assert.equal(await sentWith(listed.get('fake/tools')!, { reasoningEffort: 'xhigh' }), undefined, 'a model that does not reason gets none');
});
