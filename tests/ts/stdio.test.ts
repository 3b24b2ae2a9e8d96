// The sidecar's two stdio modes (server/gateway_lm/rpc/pipes.py) under the extension as it ships:
// the built bundle's activate() (dist/extension.js) under the stub `vscode`, the real sidecar it
// spawns and the loopback fake gateway. `threads`
// is what Windows runs (its event loop cannot watch the standard handles: RFC 0001, "Windows"); here it
// is chosen through GATEWAY_LM_STDIO, which the sidecar reads as its default, so each mode runs the same
// list, a streamed chat, thousands of parts at once, and a cancel, exactly as the extension sends them.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway, ROOT } from './real';
import type * as extension from '../../extension/extension';
import type { GatewayChatProvider } from '../../extension/provider';

const gateway = bundleGateway({ defaultKey: true });
const MODES = ['loop', 'threads'] as const;
const bundle = createRequire(__filename)(path.join(ROOT, 'dist/extension.js')) as typeof extension; // its `vscode` is the stub (register.ts)

/** A window of the built bundle, its global storage a fresh folder. */
async function activateBundle(subscriptions: { dispose(): unknown }[]): Promise<GatewayChatProvider> {
  const context = { subscriptions, secrets: new stub.SecretStorage(), globalStorageUri: { fsPath: gateway.folder('agl-stdio-') } };
  await bundle.activate(context as unknown as vscode.ExtensionContext);
  return stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
}

type Report = { report(part: unknown): void };
const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const userMessage = (text: string) =>
  ({ role: 1, name: undefined, content: [new stub.LanguageModelTextPart(text)] }) as unknown as vscode.LanguageModelChatRequestMessage;
const valuesOf = (parts: unknown[], type: new (...args: never[]) => { value: unknown }) => parts.filter((p) => p instanceof type).map((p) => String(p.value));

for (const mode of MODES) {
  test(`stdio ${mode}: the list, a streamed chat, 12,000 parts at once and a cancel, then the next chat`, { timeout: 90_000 }, async () => {
    process.env.GATEWAY_LM_STDIO = mode;
    const subscriptions: { dispose(): unknown }[] = [];
    try {
      const provider = await activateBundle(subscriptions);
      const log = stub.outputChannels.at(-1)!;
      const chat = async (model: string, text: string, report?: Report, cancel?: vscode.CancellationToken) => {
        const parts: unknown[] = [];
        const info = { id: model } as vscode.LanguageModelChatInformation;
        const progress = report ?? { report: (part: unknown) => void parts.push(part) };
        await provider.provideLanguageModelChatResponse(info, [userMessage(text)], { toolMode: 1 }, progress, cancel ?? token());
        return parts;
      };

      const models = (await provider.provideLanguageModelChatInformation({ silent: true }, token())).map((m) => m.id);
      assert.ok(models.includes('fake/text'), `the list came through (${models.length} models)`);
      assert.ok(
        log.lines.some((line) => line.includes(`stdio on ${mode}`)),
        `the sidecar says it runs ${mode}:\n${log.lines.slice(-5).join('\n')}`,
      );

      assert.equal(valuesOf(await chat('fake/text', 'hi'), stub.LanguageModelTextPart).join(''), 'Hello from the fake gateway.');

      // ~4 MB of events in one write: far more than a pipe holds, so the outbox waits on the writer.
      const many = await chat('fake/text', '[scenario:many-items] think');
      const thinking = valuesOf(many, stub.LanguageModelThinkingPart);
      assert.equal(thinking.join('').length, 12_000, 'every reasoning delta arrived');
      assert.equal(valuesOf(many, stub.LanguageModelTextPart).join(''), 'done');

      const source = new CancellationTokenSource();
      const seen: unknown[] = [];
      await chat('fake/slow', 'hi', { report: (part) => void (seen.push(part), seen.length === 3 && source.cancel()) }, source.token);
      const atEnd = seen.length;
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(seen.length, atEnd, 'nothing is reported after the cancel');
      assert.ok(atEnd < 50, `the stream stopped early (${atEnd} parts of 400)`);

      assert.equal(
        valuesOf(await chat('fake/text', 'again'), stub.LanguageModelTextPart).join(''),
        'Hello from the fake gateway.',
        'the next chat is answered',
      );
    } finally {
      subscriptions.forEach((d) => d.dispose());
      delete process.env.GATEWAY_LM_STDIO;
    }
  });
}
