// The one hint a new user gets (extension/keyhint.ts): the built bundle activated under the stub
// `vscode`, with the real sidecar and the loopback fake gateway. With no key anywhere it is said
// once, after VS Code's lists settle, and its button opens the Language Models editor; never to a
// user with a provider group or a key in the environment, never twice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway, TEST_KEY } from './real';
import { activate } from '../../extension/extension';
import { HOST_COMMANDS } from '../../extension/config';
import { HINT_SETTLE_MS } from '../../extension/keyhint';
import type { GatewayChatProvider } from '../../extension/provider';

const gateway = bundleGateway();
const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const settled = () => new Promise((resolve) => setTimeout(resolve, HINT_SETTLE_MS + 500));
const hints = () => stub.shownInfos.filter((info) => info.message.includes('add your AI Gateway API key'));

async function openWindow(state: stub.Memento): Promise<{ provider: GatewayChatProvider; close(): void }> {
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: new stub.SecretStorage(),
    globalStorageUri: { fsPath: gateway.folder('agl-keyhint-') },
    globalState: state,
  };
  await activate(context as unknown as vscode.ExtensionContext);
  return {
    provider: stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider,
    close: () => context.subscriptions.forEach((d) => d.dispose()),
  };
}

test('no key anywhere: the hint is said once, and Add API Key opens the Language Models editor', async () => {
  stub.shownInfos.length = 0;
  let opened = 0;
  stub.registeredCommands.set(HOST_COMMANDS.manageModels, () => void opened++);
  const state = new stub.Memento();
  const window = await openWindow(state);
  try {
    stub.answers.infoButton.push('Add API Key');
    assert.deepEqual(await window.provider.provideLanguageModelChatInformation({ silent: true }, token()), []);
    assert.equal(hints().length, 0, 'not before the lists settle: a group may still be asked for');
    await settled();
    assert.equal(hints().length, 1);
    assert.deepEqual(hints()[0].actions, ['Add API Key']);
    assert.equal(opened, 1, 'its button opens the editor where keys are added');
    await window.provider.provideLanguageModelChatInformation({ silent: true }, token()); // VS Code asks again and again
    await settled();
    assert.equal(hints().length, 1, 'said once');
  } finally {
    window.close();
    stub.registeredCommands.delete(HOST_COMMANDS.manageModels);
  }
  const next = await openWindow(state); // the next start of the same install
  try {
    await next.provider.provideLanguageModelChatInformation({ silent: true }, token());
    await settled();
    assert.equal(hints().length, 1, 'never again, in any window');
  } finally {
    next.close();
  }
});

test('never to a user with a provider group, nor with a key in the environment', async () => {
  stub.shownInfos.length = 0;
  const state = new stub.Memento();
  const window = await openWindow(state);
  try {
    await window.provider.provideLanguageModelChatInformation({ silent: true }, token()); // the default key's list: none
    const group = await window.provider.provideLanguageModelChatInformation({ silent: true, configuration: { apiKey: 'vck_team-0123456789' } }, token());
    assert.ok(group.length > 0, "the group's list");
    await settled();
    assert.equal(hints().length, 0, 'a group is a key');
  } finally {
    window.close();
  }
  process.env.AI_GATEWAY_API_KEY = TEST_KEY;
  const withEnv = await openWindow(new stub.Memento());
  try {
    assert.ok((await withEnv.provider.provideLanguageModelChatInformation({ silent: true }, token())).length > 0);
    await settled();
    assert.equal(hints().length, 0, "the environment's key is a key");
  } finally {
    withEnv.close();
    delete process.env.AI_GATEWAY_API_KEY;
  }
});
