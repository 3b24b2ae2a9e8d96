// Issue 26 §1: the spend limits fail closed. The shipped bundle (dist/extension.js) activated under
// the stub `vscode`, with the real sidecar and the loopback fake gateway; the user's answers to the
// spend dialog come from the stub. Each case sent a request past a limit before the fix.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { PYTHON, ROOT, bundleGateway } from './real';

interface Bundle {
  activate(context: vscode.ExtensionContext): Promise<void>;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the built bundle, as VS Code loads it
const bundle = require(path.join(ROOT, 'dist/extension.js')) as Bundle;

const LIMIT_SETTINGS = ['vercelAiGateway.spend.maxRequestCost', 'vercelAiGateway.spend.maxDailyCost'];
const gateway = bundleGateway({ cleanup: () => LIMIT_SETTINGS.forEach((key) => delete stub.settings[key]) });

beforeEach(() => {
  for (const key of LIMIT_SETTINGS) delete stub.settings[key];
  stub.shownWarnings.length = 0;
  stub.answers.warningButton.length = 0;
});

interface Window {
  provider: vscode.LanguageModelChatProvider;
  storage: string;
  close(): void;
}

async function openWindow(prepare?: (storage: string) => void): Promise<Window> {
  const storage = gateway.folder('agl-limits-');
  prepare?.(storage);
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: new stub.SecretStorage(),
    globalStorageUri: { fsPath: storage },
    globalState: new stub.Memento(),
  };
  await context.secrets.store('vercelAiGateway.apiKey', 'test-key-0123456789');
  await bundle.activate(context as unknown as vscode.ExtensionContext);
  return {
    provider: stub.registeredProviders.get('vercel-ai-gateway') as vscode.LanguageModelChatProvider,
    storage,
    close: () => context.subscriptions.forEach((d) => d.dispose()),
  };
}

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;

/** One chat as Copilot sends it; resolves to the text the chat showed. */
async function chat(window: Window, text: string): Promise<string> {
  const shown: string[] = [];
  const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart(text)] };
  const messages = [message] as unknown as vscode.LanguageModelChatRequestMessage[];
  const options = { toolMode: 1, tools: [], modelOptions: {} } as unknown as vscode.ProvideLanguageModelChatResponseOptions;
  const report = (part: unknown) => {
    if (part instanceof stub.LanguageModelTextPart) shown.push(part.value);
  };
  await window.provider.provideLanguageModelChatResponse({ id: 'fake/text' } as vscode.LanguageModelChatInformation, messages, options, { report }, token());
  return shown.join('');
}

/** The chats that reached the gateway whose last message holds `marker`. */
async function reached(marker: string): Promise<number> {
  const requests = (await (await fetch(`${gateway.url}/_requests`)).json()) as { body?: unknown }[];
  return requests.filter((r) => JSON.stringify(r.body ?? '').includes(marker)).length;
}

/** Today's spend by "another window", written to the shared history with the sidecar's own store. */
function spentElsewhere(storage: string, usd: number): void {
  const script = [
    'import sys, datetime',
    'from pathlib import Path',
    'from gateway_lm.spend.history import DB_NAME, UsageStore',
    'now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")',
    'record = {"id": "gen_other", "time": now, "model": "fake/text", "provider": None, "inputTokens": 1,',
    '  "outputTokens": 1, "cachedTokens": 0, "cacheWriteTokens": 0, "reasoningTokens": 0,',
    '  "cost": float(sys.argv[2]), "billed": True, "byok": None, "group": None, "requestedModel": None, "cacheSaved": None}',
    'store = UsageStore(Path(sys.argv[1]) / DB_NAME, 90); store.put("other-window", record); store.close()',
  ].join('\n');
  execFileSync(PYTHON, ['-c', script, storage, String(usd)]);
}

test('after Restart Server the request limit still holds: the new sidecar prices the request before it is sent', async () => {
  stub.settings['vercelAiGateway.spend.maxRequestCost'] = 0.000001;
  const window = await openWindow();
  try {
    await window.provider.provideLanguageModelChatInformation({ silent: true }, token()); // VS Code lists the models once
    await stub.commands.executeCommand('vercelAiGateway.restartServer');
    stub.answers.warningButton.push('Cancel');
    const shown = await chat(window, 'restart-limit-1');
    assert.match(shown, /^Not sent\. This request will cost about \$0\.0\d+ \(your limit is <\$0\.0001\)\.$/);
    assert.equal(await reached('restart-limit-1'), 0, 'nothing reached the gateway');
  } finally {
    window.close();
  }
});

test('a usage history that cannot be read does not turn the daily limit off: the user is asked, and told why once', async () => {
  stub.settings['vercelAiGateway.spend.maxDailyCost'] = 0.1;
  const window = await openWindow((storage) => fs.writeFileSync(path.join(storage, 'usage.sqlite3'), 'garbage '.repeat(500)));
  try {
    for (let n = 0; n < 3; n++) {
      stub.answers.warningButton.push('Cancel');
      const shown = await chat(window, `broken-history-${n}`);
      assert.match(
        shown,
        /^Not sent\. Today's spend cannot be read \(the usage history .*usage\.sqlite3 cannot be opened \(file is not a database\)\), so your daily limit of \$0\.10 cannot be checked\./,
      );
    }
    assert.equal(await reached('broken-history-'), 0, 'never "0 spent today"');
    stub.answers.warningButton.push('Send');
    assert.equal(await chat(window, 'broken-history-sent'), 'Hello from the fake gateway.', 'Send lets that one through');
    const told = stub.shownWarnings.filter((m) => m.startsWith('Vercel AI Gateway: the usage history'));
    assert.equal(told.length, 1, 'told once');
    assert.match(told[0], /Chats still work; their usage records are kept in memory/);
  } finally {
    window.close();
  }
});

test('one Send on the per-request dialog does not lift the daily limit', async () => {
  stub.settings['vercelAiGateway.spend.maxRequestCost'] = 0.001;
  stub.settings['vercelAiGateway.spend.maxDailyCost'] = 0.1;
  const window = await openWindow((storage) => spentElsewhere(storage, 0.09));
  try {
    await window.provider.provideLanguageModelChatInformation({ silent: true }, token());
    stub.answers.warningButton.push('Send', 'Cancel'); // the request limit: Send; then the day limit: Cancel
    const shown = await chat(window, 'day-after-send-1');
    assert.match(shown, /^Not sent\. This request would bring today's spend to about \$0\.1\d \(your daily limit is \$0\.10\)\.$/);
    assert.equal(await reached('day-after-send-1'), 0);
    stub.answers.warningButton.push('Cancel'); // the next step of the loop: its request approval carries, the day limit asks
    assert.match(await chat(window, 'day-after-send-2'), /^Not sent\. This request would bring today's spend/);
    assert.equal(await reached('day-after-send-'), 0, 'the day limit bounds the total');
  } finally {
    window.close();
  }
});

test('the dialog says the estimate is token prices only when a setting the gateway bills beyond them is on', async () => {
  stub.settings['vercelAiGateway.spend.maxRequestCost'] = 0.000001;
  const window = await openWindow();
  try {
    stub.answers.warningButton.push('Cancel');
    await chat(window, 'extras-off');
    assert.doesNotMatch(stub.warningDetails.at(-1) ?? '', /token prices only/, 'nothing billed beyond tokens is on');
    stub.settings['vercelAiGateway.attribution.user'] = 'ada';
    stub.settings['vercelAiGateway.routing.zeroDataRetention'] = true;
    stub.answers.warningButton.push('Cancel');
    await chat(window, 'extras-on');
    const detail = stub.warningDetails.at(-1) ?? '';
    assert.match(detail, /^Send lets requests up to twice this estimate through/, 'what a Send does still comes first');
    assert.match(
      detail,
      /The estimate is token prices only\. What the gateway may charge on your plan for vercelAiGateway\.attribution\.user, vercelAiGateway\.routing\.zeroDataRetention is not in it; the billed cost is\.$/,
    );
    assert.equal(await reached('extras-'), 0, 'Cancel sent nothing');
  } finally {
    window.close();
    delete stub.settings['vercelAiGateway.attribution.user'];
    delete stub.settings['vercelAiGateway.routing.zeroDataRetention'];
  }
});
