// The one-time notice that our models are hidden from Copilot's agent harness and the Agents window
// (issue 34 §4): shown once, only where the host has the settings and they hide us, and the settings
// written to the user's settings only on the click, other extensions' entries kept.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import * as stub from './vscode-stub';
import { AGENTS_WINDOW, BYOK_MODELS, HarnessNotice, TOLD_KEY } from '../../extension/harness';

const ID = 'vercel-community.ai-gateway-lm';
const logged: string[] = [];
const log = { info: (line: string) => void logged.push(line), warn: (line: string) => void logged.push(line) };

beforeEach(() => {
  for (const key of [BYOK_MODELS, AGENTS_WINDOW]) {
    delete stub.settings[key];
    delete stub.registeredDefaults[key];
    delete stub.workspaceSettings[key];
  }
  stub.workspaceWins.clear();
  logged.length = 0;
  stub.shownWarnings.length = 0;
  stub.shownInfos.length = 0;
  stub.configUpdates.length = 0;
  stub.answers.infoButton.length = 0;
});

/** A host that registers both settings, as VS Code 1.139 does. */
function newerHost(): void {
  stub.registeredDefaults[BYOK_MODELS] = false;
  stub.registeredDefaults[AGENTS_WINDOW] = {};
}

async function chatOnce(state: stub.Memento, id = ID): Promise<void> {
  const notice = new HarnessNotice(id, state, log);
  notice.onRequest();
  notice.onRequest(); // once per window
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

test('told once where the settings hide our models; the click turns both on in the user settings', { timeout: 10_000 }, async () => {
  newerHost();
  stub.settings[AGENTS_WINDOW] = { 'other.extension': true };
  stub.answers.infoButton.push('Turn On');
  const state = new stub.Memento();
  await chatOnce(state);
  assert.equal(stub.shownInfos.length, 1);
  assert.match(
    stub.shownInfos[0].message,
    /hidden from Copilot's agent harness and the Agents window until 'chat\.agentHost\.byokModels\.enabled' and 'extensions\.supportAgentsWindow' are on/,
  );
  assert.deepEqual(stub.shownInfos[0].actions, ['Turn On']);
  assert.deepEqual(stub.configUpdates, [
    { key: BYOK_MODELS, value: true, target: stub.ConfigurationTarget.Global },
    { key: AGENTS_WINDOW, value: { 'other.extension': true, [ID]: true }, target: stub.ConfigurationTarget.Global },
  ]);
  assert.equal(state.get(TOLD_KEY), true);
  // Another window, later: never again.
  await chatOnce(state);
  assert.equal(stub.shownInfos.length, 1);
});

test('no click writes nothing, and it is not asked again', { timeout: 10_000 }, async () => {
  newerHost();
  const state = new stub.Memento();
  await chatOnce(state);
  assert.equal(stub.shownInfos.length, 1);
  assert.deepEqual(stub.configUpdates, []);
  await chatOnce(state);
  assert.equal(stub.shownInfos.length, 1);
});

test('nothing is said on a host without the settings, or where they are on already', { timeout: 10_000 }, async () => {
  await chatOnce(new stub.Memento()); // VS Code before the agent host: neither setting registered
  newerHost();
  stub.settings[BYOK_MODELS] = true;
  stub.settings[AGENTS_WINDOW] = { [ID.toUpperCase()]: true }; // ids compare without case
  await chatOnce(new stub.Memento());
  assert.deepEqual(stub.shownInfos, []);
  assert.deepEqual(stub.configUpdates, []);
});

test('a web workbench (no bridge: the settings would change nothing) is told nothing', { timeout: 10_000 }, async () => {
  newerHost();
  stub.env.uiKind = stub.UIKind.Web;
  try {
    await chatOnce(new stub.Memento());
  } finally {
    stub.env.uiKind = stub.UIKind.Desktop;
  }
  assert.deepEqual(stub.shownInfos, []);
  assert.deepEqual(stub.configUpdates, []);
});

test('only the setting that hides us is named and written', { timeout: 10_000 }, async () => {
  newerHost();
  stub.settings[AGENTS_WINDOW] = { [ID]: true };
  stub.answers.infoButton.push('Turn On');
  await chatOnce(new stub.Memento());
  assert.match(stub.shownInfos[0].message, /until 'chat\.agentHost\.byokModels\.enabled' is on\. Turn it on/);
  assert.deepEqual(stub.configUpdates, [{ key: BYOK_MODELS, value: true, target: stub.ConfigurationTarget.Global }]);
});

// Issue 43 §2.9: what the click writes must be what VS Code reads as on.

test('an entry for our id in another letter case is replaced, not left beside ours', { timeout: 10_000 }, async () => {
  // VS Code keys the map by the id without case (ExtensionIdentifierMap), so with two entries it
  // reads whichever comes last; ours is the only one left.
  newerHost();
  stub.settings[BYOK_MODELS] = true;
  stub.settings[AGENTS_WINDOW] = { 'Other.Extension': true, [ID.toUpperCase()]: false };
  stub.answers.infoButton.push('Turn On');
  await chatOnce(new stub.Memento());
  assert.deepEqual(stub.configUpdates, [{ key: AGENTS_WINDOW, value: { 'Other.Extension': true, [ID]: true }, target: stub.ConfigurationTarget.Global }]);
});

test('a setting that holds no map (an array) becomes a map, not one with numeric keys', { timeout: 10_000 }, async () => {
  newerHost();
  stub.settings[BYOK_MODELS] = true;
  stub.settings[AGENTS_WINDOW] = ['other.extension'];
  stub.answers.infoButton.push('Turn On');
  await chatOnce(new stub.Memento());
  assert.deepEqual(stub.configUpdates, [{ key: AGENTS_WINDOW, value: { [ID]: true }, target: stub.ConfigurationTarget.Global }]);
  assert.ok(
    logged.some((line) => line.includes('held no map of extension ids')),
    logged.join('\n'),
  );
});

test("a workspace's value that still hides us is named, not logged as turned on", { timeout: 10_000 }, async () => {
  // A workspace's settings are never written; the user's are, and the workspace's win over them for
  // a setting of window scope: the click changes nothing VS Code reads, and says so.
  newerHost();
  stub.workspaceWins.add(BYOK_MODELS);
  stub.workspaceSettings[BYOK_MODELS] = false;
  stub.answers.infoButton.push('Turn On');
  await chatOnce(new stub.Memento());
  assert.deepEqual(
    stub.configUpdates.map((u) => [u.key, u.target]),
    [
      [BYOK_MODELS, stub.ConfigurationTarget.Global],
      [AGENTS_WINDOW, stub.ConfigurationTarget.Global],
    ],
  );
  assert.equal(stub.shownWarnings.length, 1);
  assert.match(stub.shownWarnings[0], /'chat\.agentHost\.byokModels\.enabled' is still off: this workspace's settings turn it off/);
  assert.ok(!logged.some((line) => /Turned on .*byokModels/.test(line)), logged.join('\n'));
  assert.ok(
    logged.some((line) => /Turned on 'extensions\.supportAgentsWindow'/.test(line)),
    logged.join('\n'),
  );
});
