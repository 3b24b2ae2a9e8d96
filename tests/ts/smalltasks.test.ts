// Copilot's small tasks on a gateway model: the pick rule on catalogue entries, Copilot Chat's
// notice condition, and, through the real extension (activate(), the real sidecar, the loopback fake
// gateway's catalogue), the command's quick pick, the settings it writes and the one-time prompt.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway } from './real';
import type { ModelEntry } from '../../extension/contract';
import { activate } from '../../extension/extension';
import type { GatewayChatProvider } from '../../extension/provider';
import {
  BYOK_DEFAULT,
  DONT_ASK_KEY,
  hasFastHint,
  needsUtilityModels,
  rankForSmallTasks,
  SmallTasks,
  UTILITY_MODEL,
  UTILITY_SMALL_MODEL,
} from '../../extension/smalltasks';
import { until } from './until';

function entry(id: string, input: number | null, output: number | null, toolCalling = true, tags: string[] = []): ModelEntry {
  return {
    id,
    name: id.split('/')[1] ?? id,
    family: 'f',
    version: '1',
    contextWindow: 1000,
    maxInputTokens: 900,
    budgetFactor: 1,
    budgetInputTokens: 900,
    tokenizer: 'o200k_base',
    configurationSchema: null,
    hostPricing: null,
    warning: null,
    fastTierOf: null,
    metrics: null,
    maxOutputTokens: 100,
    capabilities: { toolCalling, imageInput: false },
    reasoning: false,
    pricing: { input, output, cacheRead: null, cacheWrite: null, tiers: [] },
    tags,
    ownedBy: 'o',
    description: '',
    tooltip: '',
    detail: '',
  };
}

test('the pick: tool-capable and priced; a fast hint first, then the lowest output price, input price, id', () => {
  const catalogue = [
    entry('google/gemini-2.5-pro', 1.25, 10),
    entry('openai/gpt-4o-mini', 0.15, 0.6),
    entry('google/gemini-2.5-flash-lite', 0.1, 0.4),
    entry('meta/llama-cheap', 0.05, 0.1), // cheaper, but no hint
    entry('x/fast-no-tools', 0.01, 0.01, false), // Copilot's utility flows call tools
    entry('y/unpriced-mini', null, null), // no price: cannot be called cheap
    entry('z/same-mini', 0.2, 0.6), // the same output price as gpt-4o-mini, dearer input
    entry('a/same-mini', 0.15, 0.6), // the same prices as gpt-4o-mini: the id decides
  ];
  assert.deepEqual(
    rankForSmallTasks(catalogue).map((m) => m.id),
    ['google/gemini-2.5-flash-lite', 'a/same-mini', 'openai/gpt-4o-mini', 'z/same-mini', 'meta/llama-cheap', 'google/gemini-2.5-pro'],
  );
  assert.deepEqual(
    rankForSmallTasks([entry('a/big', 3, 15), entry('b/medium', 1, 2)]).map((m) => m.id),
    ['b/medium', 'a/big'],
    'no hinted model: the lowest output price',
  );
  assert.deepEqual(rankForSmallTasks([entry('x/no-tools', 0, 0, false)]), []);
  // A model's fast tier is the same model at a dearer rate, its "fast" no small model's hint.
  const opus = entry('anthropic/claude-opus-4.8', 5, 25);
  const opusFast = { ...entry('anthropic/claude-opus-4.8-fast', 10, 50), fastTierOf: opus.id };
  assert.deepEqual(
    rankForSmallTasks([opus, opusFast, entry('xai/grok-code-fast-1', 0.2, 1.5)]).map((m) => m.id),
    ['xai/grok-code-fast-1', 'anthropic/claude-opus-4.8'],
  );
});

function measured(model: ModelEntry, firstTokenMs: number, uptimePercent = 99.9): ModelEntry {
  const metrics = {
    provider: 'p',
    providers: 1,
    firstTokenMs,
    firstTokenP95Ms: null,
    tokensPerSecond: null,
    uptimePercent,
    summary: `First token ${firstTokenMs}`,
  };
  return { ...model, metrics };
}

test('with metrics: the quickest first token among the cheap of a group; a dear or rarely-up model is not promoted', () => {
  const nano = entry('openai/gpt-5-nano', 0.05, 0.4);
  const lite = entry('google/gemini-2.5-flash-lite', 0.1, 0.4);
  const mini = entry('openai/gpt-4o-mini', 0.15, 0.6);
  const haiku = entry('anthropic/claude-haiku-4.5', 1, 5);
  const big = entry('a/big', 3, 15);
  const ids = (models: ModelEntry[]) => rankForSmallTasks(models).map((m) => m.id);
  const before = ids([nano, lite, mini, haiku, big]);
  assert.deepEqual(before, [nano.id, lite.id, mini.id, haiku.id, big.id], 'without metrics: the prices');
  assert.deepEqual(
    ids([measured(nano, 900), measured(lite, 300), measured(mini, 200, 90), measured(haiku, 100), measured(big, 50)]),
    [lite.id, nano.id, mini.id, haiku.id, big.id],
    'flash-lite answers first; 4o-mini is up 90 % of the time; haiku (5× the price) and big stay behind',
  );
  assert.deepEqual(ids([nano, measured(lite, 300), mini]), [lite.id, nano.id, mini.id], 'measured before unmeasured');
  assert.deepEqual(
    ids([entry('b/medium', 1, 2), measured(entry('c/other', 1, 3), 100), measured(entry('a/big', 3, 15), 10)]),
    ['c/other', 'b/medium', 'a/big'],
    'no hinted model: the same rule within the other group',
  );
});

test('a fast hint is a whole word of the id, the name or a tag', () => {
  assert.equal(hasFastHint(entry('google/gemini-2.5-pro', 1, 1)), false, '"gemini" is no "mini"');
  assert.equal(hasFastHint(entry('anthropic/claude-3.5-haiku', 1, 1)), true);
  assert.equal(hasFastHint(entry('xai/grok-code-fast-1', 1, 1)), true);
  assert.equal(hasFastHint(entry('openai/gpt-5-nano', 1, 1)), true);
  assert.equal(hasFastHint(entry('vendor/plain', 1, 1, true, ['fast'])), true);
});

const CHAT_DEFAULTS = { [UTILITY_MODEL]: '', [UTILITY_SMALL_MODEL]: '', [BYOK_DEFAULT]: 'copilot' };

function resetSettings(registered: Record<string, unknown> = CHAT_DEFAULTS): void {
  for (const key of Object.keys(stub.registeredDefaults)) delete stub.registeredDefaults[key];
  Object.assign(stub.registeredDefaults, registered);
  for (const key of [UTILITY_MODEL, UTILITY_SMALL_MODEL, BYOK_DEFAULT]) delete stub.settings[key];
  stub.configUpdates.length = 0;
  stub.quickPicks.length = 0;
  stub.shownInfos.length = 0;
  stub.shownWarnings.length = 0;
  stub.answers.quickPick.length = 0;
  stub.answers.infoButton.length = 0;
}

test("Copilot's notice condition: a utility setting empty and the default not 'mainAgent'", () => {
  const config = () => stub.workspace.getConfiguration() as unknown as vscode.WorkspaceConfiguration;
  resetSettings({});
  assert.equal(needsUtilityModels(config()), false, 'a VS Code without the settings');
  resetSettings();
  assert.equal(needsUtilityModels(config()), true);
  stub.settings[UTILITY_SMALL_MODEL] = 'vercel-ai-gateway/a/b';
  assert.equal(needsUtilityModels(config()), true, 'one of the two still empty');
  stub.settings[UTILITY_MODEL] = 'vercel-ai-gateway/a/b';
  assert.equal(needsUtilityModels(config()), false);
  resetSettings();
  stub.settings[BYOK_DEFAULT] = 'mainAgent';
  assert.equal(needsUtilityModels(config()), false);
});

const gateway = bundleGateway();

beforeEach(() => resetSettings());

interface Window {
  provider: GatewayChatProvider;
  state: stub.Memento;
  close(): void;
}

async function openWindow(): Promise<Window> {
  const storage = gateway.folder('agl-smalltasks-');
  const state = new stub.Memento();
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: new stub.SecretStorage(),
    globalStorageUri: { fsPath: storage },
    globalState: state,
  };
  await context.secrets.store('vercelAiGateway.apiKey', 'test-key-0123456789');
  await activate(context as unknown as vscode.ExtensionContext);
  return {
    provider: stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider,
    state,
    close: () => context.subscriptions.forEach((d) => d.dispose()),
  };
}

const EXPECTED = 'vercel-ai-gateway/fake/tools'; // the fake catalogue's cheapest tool-capable model ($1 in / $2 out)

function written(): Record<string, unknown> {
  return Object.fromEntries(stub.configUpdates.map((u) => [u.key, [u.value, u.target]]));
}

test('the command lists the candidates with prices, the pick first, and writes both settings for the user', async () => {
  const window = await openWindow();
  try {
    stub.answers.quickPick.push('Fake Tools');
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    const items = stub.quickPicks[0]?.items as { label: string; description: string; detail: string }[];
    assert.deepEqual(
      items.map((i) => [i.label, i.description, i.detail]),
      [
        ['Fake Tools', 'fake/tools · recommended', '$1.00 in / $2.00 out per million tokens'],
        ['Fake Agent 1.35x', 'fake/agent-loop', '$1.00 in / $4.00 out per million tokens'],
        ['Fake Reasoning', 'fake/reasoning', '$1.25 in / $10.00 out per million tokens'],
        ['Fake Text', 'fake/text', '$3.00 in / $15.00 out per million tokens'],
      ],
      'no-tools and unpriced models are left out',
    );
    const global = stub.ConfigurationTarget.Global;
    assert.deepEqual(written(), { [UTILITY_SMALL_MODEL]: [EXPECTED, global], [UTILITY_MODEL]: [EXPECTED, global] });
    assert.match(stub.shownInfos.at(-1)?.message ?? '', /now run on Fake Tools\.$/);
  } finally {
    window.close();
  }
});

test("the gateway's metrics reach the command: each candidate's row shows them, the quickest cheap one recommended", async () => {
  const window = await openWindow();
  try {
    // The sidecar fetches them after the first list and says so (gateway/metrics); the list is fetched again.
    await until(async () => (await window.provider.catalogue()).some((m) => m.metrics !== null), 'the metrics arrived', 15_000, 50);
    stub.answers.quickPick.push(undefined);
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    const items = stub.quickPicks.at(-1)?.items as { label: string; description: string; detail: string }[];
    assert.deepEqual(items[0], {
      ...items[0],
      label: 'Fake Tools',
      description: 'fake/tools · recommended',
      detail: '$1.00 in / $2.00 out per million tokens · First token 0.25 s (p95 0.7 s) · 140 tokens/s · 99.9 % up',
    });
    assert.equal(items.find((i) => i.label === 'Fake Agent 1.35x')?.detail, '$1.00 in / $4.00 out per million tokens', 'unmeasured: the prices alone');
  } finally {
    window.close();
  }
});

test('the command, dismissed, writes nothing; on a VS Code without the settings it says so and writes nothing', async () => {
  const window = await openWindow();
  try {
    stub.answers.quickPick.push(undefined);
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    assert.equal(stub.quickPicks.length, 1);
    resetSettings({});
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    assert.equal(stub.quickPicks.length, 0);
    assert.match(stub.shownWarnings[0] ?? '', /no 'chat\.utilitySmallModel' setting/);
    assert.deepEqual(stub.configUpdates, []);
  } finally {
    window.close();
  }
});

test('a catalogue without a candidate, or an empty one: a warning that says which, no quick pick', async () => {
  for (const [catalogue, why] of [
    [[entry('x/no-tools', 1, 1, false), entry('y/unpriced', null, null)], /no gateway model both calls tools and lists a price/],
    [[], /the model list is empty \(is the API key set\? see Show Logs\)/],
  ] as const) {
    resetSettings();
    const smallTasks = new SmallTasks({ catalogue: async () => [...catalogue], state: new stub.Memento(), log: new stub.LogOutputChannel() });
    assert.equal(await smallTasks.choose(), undefined);
    assert.match(stub.shownWarnings[0] ?? '', why);
    assert.equal(stub.quickPicks.length, 0);
    assert.deepEqual(stub.configUpdates, []);
  }
});

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;

/** A chat request as VS Code hands it over, from the extension `initiator`. */
function chat(window: Window, initiator: string): Promise<void> {
  const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('hi')] };
  const options = { toolMode: 1, tools: [], modelOptions: {}, requestInitiator: initiator };
  return window.provider.provideLanguageModelChatResponse(
    { id: 'fake/text' } as vscode.LanguageModelChatInformation,
    [message],
    options,
    { report: () => undefined },
    token(),
  );
}

const settle = () => new Promise((r) => setTimeout(r, 200));
const PROMPT_ACTIONS = ['Use Fake Tools', 'Choose…', "Don't ask again"];

test("Copilot's first request with the settings empty: one prompt; 'Use Fake Tools' writes both settings", async () => {
  const window = await openWindow();
  try {
    stub.answers.infoButton.push('Use Fake Tools');
    await chat(window, 'github.copilot-chat');
    await until(() => stub.configUpdates.length === 2, 'the settings are written');
    assert.deepEqual(stub.shownInfos[0]?.actions, PROMPT_ACTIONS);
    assert.match(stub.shownInfos[0]?.message ?? '', /Use Fake Tools \(\$1\.00 in \/ \$2\.00 out per million tokens\)/);
    const global = stub.ConfigurationTarget.Global;
    assert.deepEqual(written(), { [UTILITY_SMALL_MODEL]: [EXPECTED, global], [UTILITY_MODEL]: [EXPECTED, global] });
  } finally {
    window.close();
  }
});

test("'Don't ask again' is remembered; other callers and set settings never prompt; one prompt per window", async () => {
  const first = await openWindow();
  try {
    await chat(first, 'someone.else'); // not Copilot: its small tasks are not ours to set
    await settle();
    assert.equal(stub.shownInfos.length, 0);
    stub.answers.infoButton.push(undefined); // the toast closed without an answer
    await chat(first, 'github.copilot-chat');
    await until(() => stub.shownInfos.length === 1, 'the prompt');
    await chat(first, 'github.copilot-chat');
    await settle();
    assert.equal(stub.shownInfos.length, 1, 'once per window');
  } finally {
    first.close();
  }
  const second = await openWindow();
  try {
    stub.answers.infoButton.push("Don't ask again");
    await chat(second, 'github.copilot-chat');
    await until(() => second.state.get(DONT_ASK_KEY) === true, 'the answer is kept in globalState');
    assert.deepEqual(stub.configUpdates, []);
  } finally {
    second.close();
  }
  const third = await openWindow();
  try {
    third.state.values.set(DONT_ASK_KEY, true);
    stub.shownInfos.length = 0;
    await chat(third, 'github.copilot-chat');
    await settle();
    assert.equal(stub.shownInfos.length, 0, 'not asked again');
    third.state.values.clear();
    stub.settings[UTILITY_MODEL] = stub.settings[UTILITY_SMALL_MODEL] = 'vercel-ai-gateway/fake/text';
    await chat(third, 'github.copilot-chat');
    await settle();
    assert.equal(stub.shownInfos.length, 0, 'both settings set: nothing to offer');
  } finally {
    third.close();
  }
});

test("a setting that holds another vendor's model is named in the prompt and kept: 'Use Fake Tools' fills only the empty one", async () => {
  const window = await openWindow();
  try {
    stub.settings[UTILITY_SMALL_MODEL] = 'ollama/llama3.2:1b';
    stub.answers.infoButton.push('Use Fake Tools');
    await chat(window, 'github.copilot-chat');
    await until(() => stub.shownInfos.length === 2, 'the prompt and the confirmation');
    const [prompt, confirmation] = stub.shownInfos.map((i) => i.message);
    assert.doesNotMatch(prompt, /none is set/);
    assert.match(
      prompt,
      /chat\.utilitySmallModel is set to 'ollama\/llama3\.2:1b', and chat\.utilityModel is not set\. Use Fake Tools .* for chat\.utilityModel\? chat\.utilitySmallModel stays as it is\./,
    );
    assert.deepEqual(written(), { [UTILITY_MODEL]: [EXPECTED, stub.ConfigurationTarget.Global] }, 'the set one is not replaced');
    assert.equal(stub.settings[UTILITY_SMALL_MODEL], 'ollama/llama3.2:1b');
    assert.equal(confirmation, "chat.utilityModel now uses Fake Tools; chat.utilitySmallModel keeps 'ollama/llama3.2:1b'.");
  } finally {
    window.close();
  }
});

test('the command asks before replacing a model a setting holds: closed or Keep writes nothing over it, Replace writes both', async () => {
  const window = await openWindow();
  try {
    const both = { [UTILITY_SMALL_MODEL]: 'ollama/llama3.2:1b', [UTILITY_MODEL]: 'copilot/gpt-4o-mini' };
    for (const answer of [undefined, 'Keep Them']) {
      Object.assign(stub.settings, both);
      stub.shownInfos.length = 0;
      stub.answers.quickPick.push('Fake Tools');
      stub.answers.infoButton.push(answer);
      await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
      assert.deepEqual(stub.shownInfos[0], {
        message:
          "Copilot's small tasks: chat.utilitySmallModel is set to 'ollama/llama3.2:1b' and chat.utilityModel is set to 'copilot/gpt-4o-mini'. Replace them with Fake Tools?",
        actions: ['Replace', 'Keep Them'],
      });
      assert.deepEqual(stub.configUpdates, [], `${answer ?? 'closed'}: nothing written`);
    }
    stub.answers.quickPick.push('Fake Tools');
    stub.answers.infoButton.push('Replace');
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    const global = stub.ConfigurationTarget.Global;
    assert.deepEqual(written(), { [UTILITY_SMALL_MODEL]: [EXPECTED, global], [UTILITY_MODEL]: [EXPECTED, global] });
    // One held, one empty: Keep It fills the empty one only.
    resetSettings();
    stub.settings[UTILITY_SMALL_MODEL] = 'ollama/llama3.2:1b';
    stub.answers.quickPick.push('Fake Tools');
    stub.answers.infoButton.push('Keep It');
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    assert.match(stub.shownInfos[0]?.message ?? '', /Replace it with Fake Tools\? Keep It sets only chat\.utilityModel\.$/);
    assert.deepEqual(written(), { [UTILITY_MODEL]: [EXPECTED, global] });
    // Our own earlier pick is ours to replace: the command is for exactly that, and asks nothing.
    resetSettings();
    Object.assign(stub.settings, { [UTILITY_SMALL_MODEL]: EXPECTED, [UTILITY_MODEL]: EXPECTED });
    stub.answers.quickPick.push('Fake Tools');
    await stub.commands.executeCommand('vercelAiGateway.useForSmallTasks');
    assert.equal(stub.shownInfos.length, 1, 'only the confirmation');
  } finally {
    window.close();
  }
});
