// VS Code's network settings and the per-model options reach the sidecar as its Settings, and the
// secrets among them never reach a log line.
import assert from 'node:assert/strict';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, test } from 'node:test';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { redacting, sidecarSecrets, sidecarSettings } from '../../extension/sidecar';

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
