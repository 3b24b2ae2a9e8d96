// The ids in extension/config.ts are the ones package.json declares: a setting or command renamed
// on one side only fails here, not in a user's VS Code.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { COMMANDS, expandHome, GROUP_NAME, SECTION, Setting, SETTINGS, settingId, VENDOR, WORKSPACE_COSTLY } from '../../extension/config';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
  contributes: {
    commands: { command: string }[];
    configuration: { properties: Record<string, { scope?: string }> };
    languageModelChatProviders: Record<string, unknown>[];
  };
};

test('every setting the extension reads is declared, and every declared setting is read', () => {
  assert.deepEqual(SETTINGS.map(settingId).sort(), Object.keys(manifest.contributes.configuration.properties).sort());
  assert.ok(SETTINGS.every((name) => settingId(name).startsWith(`${SECTION}.`)));
});

test('the commands and the vendor are the declared ones', () => {
  assert.deepEqual(Object.values(COMMANDS).sort(), manifest.contributes.commands.map((c) => c.command).sort());
  // Provider groups (rfcs/0010): a secret apiKey and no managementCommand,
  // which VS Code would take instead of the groups.
  assert.deepEqual(manifest.contributes.languageModelChatProviders, [
    {
      vendor: VENDOR,
      displayName: GROUP_NAME,
      configuration: {
        type: 'object',
        properties: {
          apiKey: {
            type: 'string',
            secret: true,
            title: 'API Key',
            description: (manifest.contributes.languageModelChatProviders[0].configuration as { properties: { apiKey: { description: string } } }).properties
              .apiKey.description,
          },
        },
        required: ['apiKey'],
      },
    },
  ]);
});

// Issue 26 §2: what a repository's .vscode/settings.json may change. VS Code ignores a workspace's
// value of an `application` or `machine` setting; `window` (the default when no scope is written)
// lets any trusted workspace set it.
const USER_ONLY: Record<string, string> = {
  baseUrl: 'moves the API key to another host',
  pythonPath: 'runs another interpreter',
  caBundle: 'decides which servers the key is sent to',
  modelOptions: 'extra body and headers: a provider key, store: true, any option',
  'spend.maxRequestCost': 'lifts a spend limit',
  'spend.maxDailyCost': 'lifts a spend limit',
  'usage.retentionDays': "deletes every window's history",
  'routing.order': 'routes prompts to other providers',
  'routing.only': 'routes prompts to other providers',
  'routing.fallbackModels': 'sends prompts to other models, at their price',
  'routing.sort': 'changes which provider is paid',
  'routing.zeroDataRetention': 'turns a privacy setting off',
  'routing.disallowPromptTraining': 'turns a privacy setting off',
  'routing.serviceTier': 'priority costs more',
  'routing.caching': 'changes what is billed',
  virtualModels: 'adds models that bill the key',
};
// Per workspace on purpose, and harmless to the user's key, money and data.
const PER_WORKSPACE: readonly Setting[] = [
  'outputReservation',
  'thinking',
  'logLevel',
  'connectTimeout',
  'idleTimeout',
  'requestTimeout',
  'maxRetries',
  'picker.models',
];

test('every setting names its scope; none a workspace could turn against the user is workspace-scoped', () => {
  const properties = manifest.contributes.configuration.properties;
  for (const name of SETTINGS) {
    const scope = properties[settingId(name)]?.scope;
    assert.ok(scope, `${name} declares no scope: decide who may set it`);
    if (name in USER_ONLY) assert.ok(scope === 'application' || scope === 'machine', `${name} is ${scope}, but a workspace value ${USER_ONLY[name]}`);
    else {
      assert.equal(scope, 'window', name);
      assert.ok(
        WORKSPACE_COSTLY.includes(name) || PER_WORKSPACE.includes(name),
        `${name}: is a workspace's value told to the user (WORKSPACE_COSTLY) or harmless?`,
      );
    }
  }
  assert.equal(properties[settingId('pythonPath')]?.scope, 'machine', 'a path on the machine the sidecar runs on');
});

test('a path setting starting with ~ is under the home folder: ~/ everywhere, ~\\ on Windows only', () => {
  const windows = 'C:\\Users\\Дмитрий';
  assert.equal(expandHome('~\\Python312\\python.exe', 'win32', windows), 'C:\\Users\\Дмитрий\\Python312\\python.exe');
  assert.equal(expandHome('~/Python312/python.exe', 'win32', windows), 'C:\\Users\\Дмитрий\\Python312\\python.exe');
  assert.equal(expandHome('~', 'win32', windows), windows);
  assert.equal(expandHome('~/.pyenv/shims/python3', 'darwin', '/Users/ana'), '/Users/ana/.pyenv/shims/python3');
  assert.equal(expandHome('~\\certs.pem', 'linux', '/home/ana'), '~\\certs.pem', 'elsewhere a backslash is part of a name');
  for (const asWritten of ['~ana/python3', 'C:\\Python312\\python.exe', '/usr/bin/python3', 'python3', 'a/~/b'])
    assert.equal(expandHome(asWritten, 'win32', windows), asWritten);
});
