// Several keys side by side (rfcs/0010): the real extension activated
// with VS Code's API stubbed, the real sidecar and the fake gateway. VS Code asks for the list once
// without a group and once per provider group with its settings; each group's chat reaches the
// gateway with that group's key. And the upgrade: a window set up by the release before groups (a
// key in secret storage, models.json, token counts, a usage history without groups) keeps all of it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway } from './real';
import { activate } from '../../extension/extension';
import type { ModelEntry } from '../../extension/contract';
import { groupTag } from '../../extension/keys';
import type { GatewayChatProvider } from '../../extension/provider';
import { until } from './until';

const MIGRATE = 'lm.migrateLanguageModelsProviderGroup';
const SECRET = 'vercelAiGateway.apiKey';
const MINE = 'vck_mine-0123456789abcdef';
const TEAM = 'vck_team-fedcba9876543210';
const gateway = bundleGateway();

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
type Info = vscode.LanguageModelChatInformation & { group?: string };

interface Window {
  provider: GatewayChatProvider;
  secrets: stub.SecretStorage;
  log: stub.LogOutputChannel;
  /** The lists VS Code would ask for: without a group, and for each group with its settings. */
  list(configuration?: object): Promise<Info[]>;
  chat(model: Info): Promise<string>;
  close(): void;
}

async function openWindow(storage: string, secrets = new stub.SecretStorage()): Promise<Window> {
  const context = { subscriptions: [] as { dispose(): unknown }[], secrets, globalStorageUri: { fsPath: storage } };
  await activate(context as unknown as vscode.ExtensionContext);
  const provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
  return {
    provider,
    secrets,
    log: stub.outputChannels.at(-1)!,
    list: async (configuration) => await provider.provideLanguageModelChatInformation({ silent: true, configuration }, token()),
    chat: async (model) => {
      const parts: string[] = [];
      const message = { role: 1, content: [new stub.LanguageModelTextPart('[scenario:text] hi')], name: undefined };
      await provider.provideLanguageModelChatResponse(
        model,
        [message],
        { tools: [], toolMode: 1, modelOptions: {} },
        { report: (part: unknown) => void (part instanceof stub.LanguageModelTextPart && parts.push(part.value)) },
        token(),
      );
      return parts.join('');
    },
    close: () => context.subscriptions.forEach((d) => d.dispose()),
  };
}

/** The Authorization header of each chat the fake gateway received since `from`. */
async function sentKeys(from: number): Promise<string[]> {
  const body = await new Promise<string>((resolve, reject) => {
    http
      .get(`${gateway.url}/_requests`, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve(text));
      })
      .on('error', reject);
  });
  const requests = JSON.parse(body) as { authorization: string | null }[];
  return requests.slice(from).map((r) => r.authorization ?? '');
}

const requestCount = async () => (await sentKeys(0)).length;

const storage = () => gateway.folder('agl-groups-');

test('two groups side by side: each list carries its group, and each chat goes out with its own key', async () => {
  const window = await openWindow(storage());
  try {
    assert.deepEqual(await window.list(), [], 'no default key: nothing but the groups, and no prompt');
    assert.equal(stub.inputBoxOptions.length, 0);
    const mine = await window.list({ apiKey: MINE });
    const team = await window.list({ apiKey: TEAM });
    assert.ok(mine.length > 0 && team.length === mine.length, 'both lists appear');
    assert.deepEqual(
      mine.map((m) => m.id),
      team.map((m) => m.id),
      'model ids stay the gateway ids: VS Code names them vendor/group/id',
    );
    assert.ok(mine.every((m) => m.group === groupTag(MINE)) && team.every((m) => m.group === groupTag(TEAM)));
    assert.deepEqual(await window.list({}), [], 'a group without a key lists nothing');
    const from = await requestCount();
    const text = (list: Info[]) => list.find((m) => m.id === 'fake/text')!;
    assert.match(await window.chat(text(mine)), /\S/);
    assert.match(await window.chat(text(team)), /\S/);
    assert.deepEqual(await sentKeys(from), [`Bearer ${MINE}`, `Bearer ${TEAM}`]);
    assert.ok(!window.log.lines.some((line) => line.includes(MINE) || line.includes(TEAM)), 'no key in the log');
  } finally {
    window.close();
  }
});

test("a Send on one group's spend dialog lets nothing through on another group's key", async () => {
  stub.settings['vercelAiGateway.spend.maxRequestCost'] = 0.000001;
  stub.shownWarnings.length = 0;
  stub.answers.warningButton.length = 0;
  const window = await openWindow(storage());
  try {
    const text = async (key: string) => (await window.list({ apiKey: key })).find((m) => m.id === 'fake/text')!;
    const mine = await text(MINE);
    const team = await text(TEAM);
    const from = await requestCount();
    stub.answers.warningButton.push('Send');
    assert.match(await window.chat(mine), /\S/);
    assert.equal(stub.shownWarnings.length, 1, 'the first request past the limit asks');
    assert.match(await window.chat(mine), /\S/);
    assert.equal(stub.shownWarnings.length, 1, "the next step on the same key goes under the user's Send");
    stub.answers.warningButton.push('Cancel');
    assert.match(await window.chat(team), /^Not sent\./);
    assert.equal(stub.shownWarnings.length, 2, "the team's key asks for itself");
    assert.deepEqual(await sentKeys(from), [`Bearer ${MINE}`, `Bearer ${MINE}`], "nothing went out on the team's key");
  } finally {
    window.close();
    delete stub.settings['vercelAiGateway.spend.maxRequestCost'];
    stub.answers.warningButton.length = 0;
  }
});

test('a group VS Code never listed in this window is refused with our message, not sent with another key', async () => {
  process.env.AI_GATEWAY_API_KEY = 'vck_env-000000000000';
  const window = await openWindow(storage());
  try {
    const listed = (await window.list({ apiKey: MINE })).find((m) => m.id === 'fake/text')!;
    const from = await requestCount();
    // The same entry, as another window's deleted group would hand it over: a tag with no key here.
    const gone = { ...listed, group: groupTag('vck_deleted-999999999') };
    await assert.rejects(window.chat(gone), (error: Error & { kind?: string }) => {
      assert.equal(error.kind, 'auth');
      assert.match(error.message, /provider group that is gone/);
      return true;
    });
    assert.deepEqual(await sentKeys(from), [], 'nothing reached the gateway');
    const ungrouped = (await window.list()).find((m) => m.id === 'fake/text')!;
    await window.chat(ungrouped);
    assert.deepEqual(await sentKeys(from), ['Bearer vck_env-000000000000'], 'the default key still serves its list');
  } finally {
    window.close();
    delete process.env.AI_GATEWAY_API_KEY;
  }
});

test('upgrade: a window of the release before groups keeps its key (now a group), models, counts and history', async () => {
  const dir = storage();
  const cached = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../tests/ts/fixtures/models-before-groups.json'), 'utf8')) as ModelEntry[];
  fs.writeFileSync(path.join(dir, 'models.json'), JSON.stringify(cached));
  const secrets = new stub.SecretStorage();
  await secrets.store(SECRET, MINE);
  // VS Code's migration (1.133, 1.139): the provider lists the group with its settings, then VS Code
  // keeps the group and its key in its own storage.
  const groups = new Map<string, Record<string, unknown>>();
  let window: Window | undefined;
  stub.registeredCommands.set(MIGRATE, async (...args: unknown[]) => {
    const { vendor: _vendor, name, ...configuration } = args[0] as { vendor: string; name: string };
    const provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
    await provider.provideLanguageModelChatInformation({ silent: false, configuration }, token());
    groups.set(name, configuration);
  });
  try {
    window = await openWindow(dir, secrets);
    await until(() => groups.size > 0, 'the key is moved to a group', 5000);
    assert.deepEqual([...groups], [['Vercel AI Gateway', { apiKey: MINE }]]);
    assert.equal(secrets.values.has(SECRET), false, 'our copy of the key is gone');
    assert.deepEqual(await window.list(), [], 'the key is listed once, as its group');
    const group = await window.list(groups.get('Vercel AI Gateway'));
    assert.deepEqual(
      group.map((m) => m.id),
      cached.map((m) => m.id),
      'the cached list at once, as before',
    );
    const from = await requestCount();
    await window.chat(group.find((m) => m.id === 'fake/text')!);
    assert.deepEqual(await sentKeys(from), [`Bearer ${MINE}`]);
    assert.ok(window.log.lines.some((line) => line.includes("now the provider group 'Vercel AI Gateway'")));
  } finally {
    stub.registeredCommands.delete(MIGRATE);
    window?.close();
  }
});

/** VS Code's migration as both hosts run it: a name taken is refused; otherwise the provider lists
 * the group with its properties, then every property given is kept in the new group. */
function hostMigration(groups: Map<string, Record<string, unknown>>): void {
  stub.registeredCommands.set(MIGRATE, async (...args: unknown[]) => {
    const { vendor, name, ...properties } = args[0] as { vendor: string; name: string };
    if (groups.has(name)) throw new Error(`Language model group with name ${name} already exists for vendor ${vendor}`);
    const provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
    const { settings: _settings, ...configuration } = properties as Record<string, unknown>;
    await provider.provideLanguageModelChatInformation({ silent: false, configuration }, token());
    groups.set(name, properties);
  });
}

test('upgrade: the Thinking Effort choices VS Code kept in a keyless group go into the group the key moves to', async () => {
  // A profile as the release before groups leaves it: <profile>/globalStorage/<extension> is ours,
  // <profile>/chatLanguageModels.json holds the keyless group VS Code made when the user picked High.
  const profile = storage();
  const dir = path.join(profile, 'globalStorage', 'vercel.vercel-ai-gateway-lm');
  fs.mkdirSync(dir, { recursive: true });
  const keyless = { name: 'Vercel AI Gateway', vendor: 'vercel-ai-gateway', settings: { 'fake/reasoning': { reasoningEffort: 'high' } } };
  const other = { name: 'Other', vendor: 'someone-else', settings: { 'x/y': { reasoningEffort: 'low' } } };
  fs.writeFileSync(path.join(profile, 'chatLanguageModels.json'), JSON.stringify([keyless, other], undefined, '\t'));
  const secrets = new stub.SecretStorage();
  await secrets.store(SECRET, MINE);
  const groups = new Map<string, Record<string, unknown>>([[keyless.name, { settings: keyless.settings }]]);
  hostMigration(groups);
  let window: Window | undefined;
  try {
    window = await openWindow(dir, secrets);
    await until(() => groups.size >= 2, 'the key is moved to a second group', 5000);
    assert.deepEqual(
      groups.get('Vercel AI Gateway 2'),
      { apiKey: MINE, settings: { 'fake/reasoning': { reasoningEffort: 'high' } } },
      'the key and the choice, in one group',
    );
    assert.equal(secrets.values.has(SECRET), false, 'moved: our copy of the key is gone');
    const listed = await window.list({ apiKey: MINE });
    assert.ok(
      listed.some((m) => m.id === 'fake/reasoning'),
      'the model the choice is for is listed by that group',
    );
    const advice = window.log.lines.find((line) => line.includes('Thinking Effort choices of 1 model(s) were copied'));
    assert.ok(advice, window.log.lines.join('\n'));
    assert.match(advice, /Delete 'Vercel AI Gateway' in the Language Models editor/);
    assert.ok(!window.log.lines.some((line) => line.includes(MINE)), 'no key in the log');
  } finally {
    stub.registeredCommands.delete(MIGRATE);
    window?.close();
  }
});

test('upgrade: a group name with a line break forges no log line', { timeout: 30_000 }, async () => {
  const profile = storage();
  const dir = path.join(profile, 'globalStorage', 'ext');
  fs.mkdirSync(dir, { recursive: true });
  const forged = 'Old\n2026-11-27 12:00:00.000 [error] forged\r\u2028';
  const keyless = { name: forged, vendor: 'vercel-ai-gateway', settings: { 'fake/reasoning': { reasoningEffort: 'high' } } };
  fs.writeFileSync(path.join(profile, 'chatLanguageModels.json'), JSON.stringify([keyless]));
  const secrets = new stub.SecretStorage();
  await secrets.store(SECRET, MINE);
  const groups = new Map<string, Record<string, unknown>>();
  hostMigration(groups);
  let window: Window | undefined;
  try {
    window = await openWindow(dir, secrets);
    const said = () => window!.log.lines.find((line) => line.includes('were copied'));
    await until(() => said() !== undefined, 'the copied settings are logged');
    assert.match(said() ?? '', /'Old\\u000a2026-11-27 12:00:00\.000 \[error\] forged\\u000d\\u2028'/);
    for (const line of window.log.lines) assert.doesNotMatch(line, /[\r\n\u2028\u2029]/, JSON.stringify(line));
  } finally {
    stub.registeredCommands.delete(MIGRATE);
    window?.close();
  }
});

test(
  'upgrade: a chatLanguageModels.json that is a link to /dev/zero is refused unread, in one line',
  { skip: process.platform === 'win32', timeout: 30_000 },
  async () => {
    const profile = storage();
    const dir = path.join(profile, 'globalStorage', 'ext');
    fs.mkdirSync(dir, { recursive: true });
    fs.symlinkSync('/dev/zero', path.join(profile, 'chatLanguageModels.json'));
    const secrets = new stub.SecretStorage();
    await secrets.store(SECRET, MINE);
    const groups = new Map<string, Record<string, unknown>>();
    hostMigration(groups);
    let window: Window | undefined;
    try {
      window = await openWindow(dir, secrets);
      await until(() => groups.size > 0, 'the key moved into a group');
      assert.deepEqual(groups.get('Vercel AI Gateway'), { apiKey: MINE }, 'the key moved all the same');
      const lines = window.log.lines.filter((line) => line.includes('Language Models file'));
      assert.equal(lines.length, 1, lines.join(' | '));
      assert.match(lines[0], /not a regular file/);
    } finally {
      stub.registeredCommands.delete(MIGRATE);
      window?.close();
    }
  },
);

test('upgrade: a chatLanguageModels.json that is not what VS Code writes carries nothing and costs nothing', async () => {
  const profile = storage();
  const dir = path.join(profile, 'globalStorage', 'ext');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(profile, 'chatLanguageModels.json'), '[{"name": "Vercel AI Gateway", // a comment\n');
  const secrets = new stub.SecretStorage();
  await secrets.store(SECRET, MINE);
  const groups = new Map<string, Record<string, unknown>>([['Vercel AI Gateway', {}]]);
  hostMigration(groups);
  let window: Window | undefined;
  try {
    window = await openWindow(dir, secrets);
    await until(() => groups.size >= 2, 'the key is moved to a second group', 5000);
    assert.deepEqual(groups.get('Vercel AI Gateway 2'), { apiKey: MINE }, 'the key moved all the same');
    assert.ok(window.log.lines.some((line) => line.includes("'Vercel AI Gateway' was there already") && line.includes('pick them again')));
  } finally {
    stub.registeredCommands.delete(MIGRATE);
    window?.close();
  }
});
