// The ids in extension/config.ts are the ones package.json declares: a setting or command renamed
// on one side only fails here, not in a user's VS Code.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { COMMANDS, SECTION, SETTINGS, settingId, VENDOR } from '../../extension/config';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
  contributes: {
    commands: { command: string }[];
    configuration: { properties: Record<string, unknown> };
    languageModelChatProviders: { vendor: string; managementCommand: string }[];
  };
};

test('every setting the extension reads is declared, and every declared setting is read', () => {
  assert.deepEqual(SETTINGS.map(settingId).sort(), Object.keys(manifest.contributes.configuration.properties).sort());
  assert.ok(SETTINGS.every((name) => settingId(name).startsWith(`${SECTION}.`)));
});

test('the commands and the vendor are the declared ones', () => {
  assert.deepEqual(Object.values(COMMANDS).sort(), manifest.contributes.commands.map((c) => c.command).sort());
  assert.deepEqual(manifest.contributes.languageModelChatProviders, [{ vendor: VENDOR, displayName: 'Vercel AI Gateway', managementCommand: COMMANDS.manage }]);
});
