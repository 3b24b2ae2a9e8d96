// VS Code's network settings and the per-model options reach the sidecar as its Settings, and the
// secrets among them never reach a log line.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { PYTHON, startGateway } from './real';
import { activate } from '../../extension/extension';
import type { GatewayChatProvider } from '../../extension/provider';
import { redacting, sidecarSecrets, sidecarSettings } from '../../extension/sidecar/connection';

const AUTH = 'Basic dXNlcjpzM2NyZXQ=';

afterEach(() => {
  for (const key of Object.keys(stub.settings)) delete stub.settings[key];
});

test('the http.* settings, caBundle and modelOptions are passed to the sidecar', () => {
  Object.assign(stub.settings, {
    'http.proxy': 'http://user:pa%24%24word@proxy.corp:3128',
    'http.proxyStrictSSL': false,
    'http.noProxy': ['localhost', '.corp'],
    'http.proxyAuthorization': AUTH,
    'http.systemCertificates': false,
    'vercelAiGateway.caBundle': '~/certs/corp.pem',
    'vercelAiGateway.modelOptions': { 'openai/*': { temperature: 0.2, extraHeaders: { 'x-team-token': 'team-token-123' } } },
  });
  const settings = sidecarSettings('/state');
  assert.equal(settings.proxy, 'http://user:pa%24%24word@proxy.corp:3128');
  assert.equal(settings.proxyStrictSSL, false);
  assert.deepEqual(settings.noProxy, ['localhost', '.corp']);
  assert.equal(settings.proxyAuthorization, AUTH);
  assert.equal(settings.systemCertificates, false);
  assert.equal(settings.caBundle, path.join(os.homedir(), 'certs/corp.pem'));
  assert.deepEqual(settings.modelOptions, { 'openai/*': { temperature: 0.2, extraHeaders: { 'x-team-token': 'team-token-123' } } });
  assert.deepEqual(sidecarSecrets().sort(), [AUTH, 'pa%24%24word', 'pa$$word', 'team-token-123'].sort());
});

test('a CA bundle under ~\\ is under the home folder on Windows (what Windows users write), and a name elsewhere', () => {
  stub.settings['vercelAiGateway.caBundle'] = '~\\certs\\corp.pem';
  assert.equal(sidecarSettings('/state', 'win32').caBundle, path.win32.join(os.homedir(), 'certs', 'corp.pem'));
  assert.equal(sidecarSettings('/state', 'darwin').caBundle, '~\\certs\\corp.pem', 'a backslash is part of a name on macOS and Linux');
  stub.settings['vercelAiGateway.caBundle'] = '~/certs/corp.pem';
  assert.equal(sidecarSettings('/state', 'win32').caBundle, path.win32.join(os.homedir(), 'certs', 'corp.pem'));
});

test('an unset CA bundle is sent as null, so clearing the setting clears it in the sidecar', () => {
  stub.settings['vercelAiGateway.caBundle'] = '';
  assert.equal(sidecarSettings('/state').caBundle, null);
  assert.ok(Object.hasOwn(JSON.parse(JSON.stringify(sidecarSettings('/state'))) as object, 'caBundle'));
});

test('the proxy authorization is redacted from the trace channel', () => {
  stub.settings['http.proxyAuthorization'] = AUTH;
  const lines: string[] = [];
  const log = { name: 'x', logLevel: 0, onDidChangeLogLevel: () => ({ dispose() {} }), trace: (m: string) => lines.push(m) };
  const channel = redacting(log as unknown as vscode.LogOutputChannel, () => sidecarSecrets());
  channel.trace(`Params: {"settings": {"proxyAuthorization": "${AUTH}"}}`);
  assert.deepEqual(lines, ['Params: {"settings": {"proxyAuthorization": "[redacted]"}}']);
});

const PROVIDER_KEY = 'sk-ant-provider-canary-8f3a'; // a BYOK key in a model's extraBody
const HEADER_TOKEN = 'team"token\\canary-77'; // a trace writes it as team\"token\\canary-77

test('at Trace, a provider key in extraBody and a header value JSON escapes reach the log redacted, through the real connection and sidecar', async () => {
  const children: ChildProcess[] = [];
  const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-trace-'));
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    secrets: new stub.SecretStorage(),
    globalStorageUri: { fsPath: storage },
    globalState: new stub.Memento(),
  };
  try {
    Object.assign(stub.settings, {
      'vercelAiGateway.baseUrl': `${await startGateway(children)}/v1`,
      'vercelAiGateway.maxRetries': 0,
      // With the channel at Trace, the session traces each message (session.ts); 'verbose', its params.
      'vercelAiGateway.trace.server': 'verbose',
      'vercelAiGateway.modelOptions': {
        'fake/*': {
          extraBody: { providerOptions: { gateway: { byok: { anthropic: [{ apiKey: PROVIDER_KEY }] } } } },
          extraHeaders: { 'x-team': HEADER_TOKEN },
        },
      },
    });
    process.env.AI_GATEWAY_LM_PYTHON = PYTHON;
    stub.channelDefaults.logLevel = stub.LogLevel.Trace;
    await context.secrets.store('vercelAiGateway.apiKey', 'test-key-0123456789');
    await activate(context as unknown as vscode.ExtensionContext);
    const channel = stub.outputChannels.at(-1)!;
    const provider = stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider;
    // The gateway quotes the request back (the body, and the headers as JSON): the chat fails with it.
    const message = { role: 1, name: undefined, content: [new stub.LanguageModelTextPart('[scenario:echo-request-400] hi')] };
    const failed = await provider
      .provideLanguageModelChatResponse(
        { id: 'fake/text' } as vscode.LanguageModelChatInformation,
        [message as unknown as vscode.LanguageModelChatRequestMessage],
        { toolMode: 1, tools: [], modelOptions: {} },
        { report: () => undefined },
        new CancellationTokenSource().token as unknown as vscode.CancellationToken,
      )
      .then(
        () => '',
        (error: Error) => error.message,
      );
    assert.match(failed, /Invalid request .*\[redacted\].*\[redacted\]/);
    const log = channel.lines.join('\n');
    assert.match(log, /Params: [\s\S]*"extraBody"/, 'the trace printed the settings');
    for (const secret of [PROVIDER_KEY, HEADER_TOKEN, JSON.stringify(HEADER_TOKEN).slice(1, -1)]) {
      assert.ok(!log.includes(secret) && !failed.includes(secret), `${secret} is in the log`);
    }
  } finally {
    stub.channelDefaults.logLevel = stub.LogLevel.Info;
    context.subscriptions.forEach((d) => d.dispose());
    children.forEach((child) => child.kill());
    fs.rmSync(storage, { recursive: true, force: true });
    delete process.env.AI_GATEWAY_LM_PYTHON;
  }
});
