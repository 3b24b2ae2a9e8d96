// Text from outside stays text where VS Code reads markup into it (extension/notify.ts): a gateway's
// model name or error that holds `[label](command:…)` must not become a link in a notification, nor
// `$(name)` an icon. Through the real extension (activate(), the real sidecar, the loopback fake
// gateway's hostile catalogue and credits error, fake_spend.HOSTILE_TEXT) under the stub vscode.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { PYTHON, ROOT, startGateway } from './real';
import { activate } from '../../extension/extension';
import { plain } from '../../extension/notify';
import type { GatewayChatProvider } from '../../extension/provider';
import { BYOK_DEFAULT, UTILITY_MODEL, UTILITY_SMALL_MODEL } from '../../extension/smalltasks';
import { until } from './until';

// VS Code's own link parser for notification text (src/vs/base/common/linkedText.ts, the same in
// the 1.139 workbench bundle): what it matches is drawn as a link that runs its target.
const LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;
// VS Code's icon syntax in labels (renderLabelWithIcons): an unescaped `$(name)` becomes an icon.
const ICON = /(?<!\\)\$\([a-z0-9-]+(?:~[a-z]+)?\)/gi;
const links = (text: string) => [...text.matchAll(LINK)].map((m) => m[0]);
// What a CommonMark renderer (markdown-it, as VS Code's marked: links, images, autolinks, reference
// links and their definitions, raw HTML, and linkify's bare URIs) makes a link or HTML of in `text`:
// the targets of its links that are not http(s), and its HTML.
type Token = { type: string; attrGet(name: string): string | null; children: Token[] | null };
const markdown = (createRequire(__filename)('markdown-it') as (options: object) => { parse(text: string, env: object): Token[] })({
  html: true,
  linkify: true,
});
const markdownLinks = (text: string) =>
  markdown
    .parse(text, {})
    .flatMap((token) => [token, ...(token.children ?? [])])
    .filter((t) => (t.type === 'link_open' && !/^https?:/.test(t.attrGet('href') ?? '')) || t.type.startsWith('html') || t.type === 'image')
    .map((t) => `${t.type} ${t.attrGet('href') ?? t.attrGet('src') ?? ''}`);
const icons = (text: string) => [...text.matchAll(ICON)].map((m) => m[0]);

test('plain: a link and an icon read the same and are neither; plain text and a second pass change nothing', () => {
  const hostile = 'Fake [Fix it](command:workbench.action.openGlobalKeybindings "title") $(loading~spin) [docs](https://example.com)';
  const shown = plain(hostile);
  assert.deepEqual(links(hostile).length, 2);
  assert.deepEqual([links(shown), icons(shown)], [[], []]);
  assert.equal(shown, 'Fake [Fix it] (command: workbench.action.openGlobalKeybindings "title") \\$(loading~spin) [docs] (https://example.com)');
  assert.equal(plain(shown), shown, 'idempotent');
  assert.equal(plain('Claude Sonnet 4 ($3.00 in / $15.00 out) [beta]'), 'Claude Sonnet 4 ($3.00 in / $15.00 out) [beta]');
});

test('plain: every markdown link form is text (autolinks, reference links and definitions, HTML, bare command: URIs)', () => {
  const command = 'command:workbench.action.terminal.new';
  const hostile = [
    `[Fix it](${command})`,
    `![x](${command})`,
    `<${command}>`,
    `<COMMAND:workbench.action.terminal.new>`,
    `[Get free credits][free]\n\n[free]: ${command}`,
    `[free][]\n[free]: <${command}> "title"`,
    `[free]\n\n   [free]:${command}`,
    `<a href="${command}">x</a>`,
    `[x](<${command}>)`,
  ];
  for (const text of hostile) {
    assert.notDeepEqual(markdownLinks(text), [], `the renderer reads a link in ${JSON.stringify(text)}`);
    const shown = plain(text);
    assert.deepEqual([markdownLinks(shown), links(shown)], [[], []], JSON.stringify(shown));
    assert.equal(plain(shown), shown, 'idempotent');
  }
  // A bare `command:` URI no renderer VS Code uses links today; one that did (a linkifier knowing the
  // scheme) still reads none across the space.
  assert.equal(plain(`bare ${command}`), 'bare command: workbench.action.terminal.new');
  assert.equal(plain('Run command: x, a <= b, [beta] (preview) https://example.com'), 'Run command: x, a <= b, [beta] (preview) https://example.com');
});

test('no notification is shown but through notify (so none skips plain)', () => {
  const dir = path.join(ROOT, 'extension');
  const callers = fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.ts') && file !== 'notify.ts')
    .filter((file) => /\bshow(Information|Warning|Error)Message\b/.test(fs.readFileSync(path.join(dir, file), 'utf8')));
  assert.deepEqual(callers, []);
});

const children: ChildProcess[] = [];
const dirs: string[] = [];
let gatewayUrl = '';

before(async () => {
  gatewayUrl = await startGateway(children);
  process.env.AI_GATEWAY_LM_PYTHON = PYTHON;
});

after(() => {
  children.forEach((child) => child.kill());
  dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
  delete process.env.AI_GATEWAY_LM_PYTHON;
  for (const key of Object.keys(stub.settings)) delete stub.settings[key];
  for (const key of Object.keys(stub.registeredDefaults)) delete stub.registeredDefaults[key];
});

async function openWindow(key: string): Promise<{ provider: GatewayChatProvider; close(): void }> {
  const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-notify-'));
  dirs.push(storage);
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: new stub.SecretStorage(),
    globalStorageUri: { fsPath: storage },
    globalState: new stub.Memento(),
  };
  await context.secrets.store('vercelAiGateway.apiKey', key);
  await activate(context as unknown as vscode.ExtensionContext);
  return {
    provider: stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider,
    close: () => context.subscriptions.forEach((d) => d.dispose()),
  };
}

const shown = () => [...stub.shownInfos.map((i) => i.message), ...stub.shownWarnings, ...stub.shownErrors.map((e) => e.message)];

test("a hostile gateway's model name, credits error and a setting's text reach notifications, the status bar and the picker as text", async () => {
  stub.settings['vercelAiGateway.baseUrl'] = `${gatewayUrl}/hostile-text/v1`;
  stub.settings['vercelAiGateway.maxRetries'] = 0;
  // A pattern of the user's (or a workspace's) that the sidecar names in its warning (window/showMessage).
  stub.settings['vercelAiGateway.modelOptions'] = { '[Open](command:workbench.action.terminal.new)': { temperature: 5 } };
  Object.assign(stub.registeredDefaults, { [UTILITY_MODEL]: '', [UTILITY_SMALL_MODEL]: '', [BYOK_DEFAULT]: 'copilot' });
  const before = shown().length;
  const window = await openWindow('credits-hostile-text');
  try {
    // Copilot's first request: the small-tasks prompt names the pick (Fake Tools, whose name is hostile).
    const name = (await window.provider.catalogue()).find((m) => m.id === 'fake/tools')!.name;
    assert.ok(links(name).length === 1 && icons(name).length === 1, 'the catalogue holds the hostile name');
    stub.answers.infoButton.push(`Use ${name}`);
    const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('hi')] };
    await window.provider.provideLanguageModelChatResponse(
      { id: 'fake/tools' } as vscode.LanguageModelChatInformation,
      [message],
      { toolMode: 1, tools: [], modelOptions: {}, requestInitiator: 'github.copilot-chat' } as unknown as vscode.ProvideLanguageModelChatResponseOptions,
      { report: () => undefined },
      new CancellationTokenSource().token,
    );
    await until(() => stub.shownInfos.some((i) => i.message.includes('now run on')), 'the confirmation');
    await until(() => stub.shownWarnings.some((w) => w.includes('terminal.new')), "the sidecar's settings warning");
    await stub.commands.executeCommand('vercelAiGateway.showCredits');
    await until(() => stub.shownErrors.some((e) => e.message.startsWith('Could not read the credits')), 'the credits error');
    const texts = shown().slice(before);
    assert.equal(texts.length, 4, texts.join('\n'));
    assert.ok(
      texts.every((text) => /Fix it|terminal\.new/.test(text)),
      'each quotes the hostile text',
    );
    assert.deepEqual(texts.flatMap(links), [], 'no link');
    assert.deepEqual(texts.flatMap(icons), [], 'no icon');
    assert.deepEqual(icons(stub.statusBarItems.at(-1)!.text), ['$(pulse)'], "the status bar's own icon only");
    const info = (await window.provider.provideLanguageModelChatInformation({ silent: true }, new CancellationTokenSource().token as never)).find(
      (m) => m.id === 'fake/tools',
    )!;
    assert.deepEqual([...links(info.name), ...icons(info.name), ...links(info.tooltip ?? ''), ...icons(info.tooltip ?? '')], []);
    // What VS Code's Language Models editor renders as trusted markdown in a model's hover: its name,
    // `id@version` and tooltip; a gateway's markup in any of them (fake_gateway.MARKUP_MODEL) is text.
    const listed = await window.provider.provideLanguageModelChatInformation({ silent: true }, new CancellationTokenSource().token);
    const markup = listed.find((m) => m.id === 'fake/markup')!;
    assert.ok(markup, 'the model with markup is listed');
    assert.ok(markup.name.includes('Get free credits') && (markup.tooltip ?? '').includes('[free]'), 'its text is shown');
    const hover = [markup.name, `${markup.id}@${markup.version}`, markup.tooltip ?? '', markup.detail ?? ''].join('\n\n');
    assert.deepEqual(markdownLinks(hover), [], hover);
    assert.deepEqual(
      listed.filter((m) => m.id.includes('[')).map((m) => m.id),
      [],
      'no id with markup is listed',
    );
  } finally {
    window.close();
  }
});
