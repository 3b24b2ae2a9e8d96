// The API key: SecretStorage first, then the environment; the prompt trims what is pasted; the
// key can be replaced and removed; every key handed out is known for redaction.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import * as stub from './vscode-stub';
import { groupOf, groupTag, KeyStore } from '../../extension/keys';

const MIGRATE = 'lm.migrateLanguageModelsProviderGroup';

const SECRET = 'vercelAiGateway.apiKey';
const saved = { api: process.env.AI_GATEWAY_API_KEY, oidc: process.env.VERCEL_OIDC_TOKEN };

function store(secrets = new stub.SecretStorage()): { keys: KeyStore; secrets: stub.SecretStorage; changes: () => number } {
  const keys = new KeyStore(secrets);
  let changes = 0;
  keys.onDidChange(() => changes++);
  return { keys, secrets, changes: () => changes };
}

beforeEach(() => {
  delete process.env.AI_GATEWAY_API_KEY;
  delete process.env.VERCEL_OIDC_TOKEN;
  stub.answers.inputBox.length = 0;
  stub.answers.quickPick.length = 0;
  stub.inputBoxOptions.length = 0;
});

afterEach(() => {
  for (const [name, value] of [
    ['AI_GATEWAY_API_KEY', saved.api],
    ['VERCEL_OIDC_TOKEN', saved.oidc],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

test('secret storage first, then AI_GATEWAY_API_KEY, then VERCEL_OIDC_TOKEN; each key handed out is known', async () => {
  const { keys, secrets } = store();
  assert.equal(await keys.get(), undefined);
  process.env.VERCEL_OIDC_TOKEN = 'oidc-token-000000';
  assert.equal(await keys.get(), 'oidc-token-000000');
  process.env.AI_GATEWAY_API_KEY = 'env-key-11111111';
  assert.equal(await keys.get(), 'env-key-11111111');
  await secrets.store(SECRET, 'stored-key-2222222');
  assert.equal(await keys.get(), 'stored-key-2222222');
  assert.deepEqual([...keys.known()].sort(), ['env-key-11111111', 'oidc-token-000000', 'stored-key-2222222']);
});

test('a secret storage that fails (no keyring) falls back to the environment', async () => {
  const broken = new stub.SecretStorage();
  broken.get = () => Promise.reject(new Error('Cannot get password: no keyring'));
  const { keys } = store(broken);
  process.env.AI_GATEWAY_API_KEY = 'env-key-11111111';
  assert.equal(await keys.get(), 'env-key-11111111');
});

test('a keychain that never answers holds up neither the environment key nor, past its bound, a window without one', async () => {
  const hung = new stub.SecretStorage();
  let asked = 0;
  hung.get = () => {
    asked++;
    return new Promise<string | undefined>(() => undefined);
  };
  const within = <T>(promise: Promise<T>, ms: number) => Promise.race([promise, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms))]);
  process.env.AI_GATEWAY_API_KEY = 'env-key-11111111';
  const { keys } = store(hung);
  assert.equal(await within(keys.get(), 3000), 'env-key-11111111', 'the model list and the chats get the environment key');
  let started = Date.now();
  assert.equal(await within(keys.get(), 3000), 'env-key-11111111');
  assert.ok(Date.now() - started < 100, 'the next caller does not wait again on the read under way');
  assert.equal(asked, 1, 'one read of the keychain, waited on by every caller');
  delete process.env.AI_GATEWAY_API_KEY;
  const alone = new KeyStore(hung, 300);
  started = Date.now();
  assert.equal(await within(alone.get(), 3000), undefined, 'no key, said within the bound');
  assert.ok(Date.now() - started < 2000);
  assert.equal(await within(alone.moveStoredKey({ info: () => undefined, warn: () => undefined }), 3000), undefined, 'the migration ends too');
});

test('a group is its key, trimmed, and a tag that names it without showing it; no key is keyless', () => {
  assert.equal(groupOf(undefined), undefined, 'the list VS Code asks for without a group');
  assert.equal(groupOf({}), 'keyless');
  assert.equal(groupOf({ apiKey: '   ' }), 'keyless');
  assert.equal(groupOf({ apiKey: 7 }), 'keyless');
  const group = groupOf({ apiKey: ' vck_team-0123456789 \n' });
  assert.ok(group && group !== 'keyless');
  assert.equal(group.key, 'vck_team-0123456789');
  assert.match(group.tag, /^[0-9a-f]{12}$/);
  assert.equal(group.tag, groupTag('vck_team-0123456789'), 'the same key, the same tag');
  assert.notEqual(group.tag, groupTag('vck_mine-0123456789'));
  assert.ok(!group.key.includes(group.tag) && !group.tag.includes('vck'));
});

const log = { info: (m: string) => void lines.push(m), warn: (m: string) => void lines.push(m) };
const lines: string[] = [];

/** VS Code's lm.migrateLanguageModelsProviderGroup as 1.133 and 1.139 run it: the provider lists the
 * group's models with its settings, then the group is added, which fails when the name is taken. */
function hostMigration(keys: KeyStore, groups: Map<string, string>): void {
  stub.registeredCommands.set(MIGRATE, async (...args: unknown[]) => {
    const { name, apiKey } = args[0] as { vendor: string; name: string; apiKey: string };
    const group = groupOf({ apiKey });
    if (group && group !== 'keyless') keys.listed(group);
    if (groups.has(name)) throw new Error(`Language model group with name ${name} already exists for vendor vercel-ai-gateway`);
    groups.set(name, apiKey);
  });
}

test('a key stored by the release before groups moves into a group, and our copy is deleted', async () => {
  const { keys, secrets, changes } = store();
  await secrets.store(SECRET, 'stored-key-2222222');
  process.env.AI_GATEWAY_API_KEY = 'env-key-11111111';
  const groups = new Map<string, string>([['Vercel AI Gateway', '']]); // VS Code's group of an effort choice
  hostMigration(keys, groups);
  try {
    assert.equal(await keys.moveStoredKey(log), 'Vercel AI Gateway 2');
  } finally {
    stub.registeredCommands.delete(MIGRATE);
  }
  assert.equal(groups.get('Vercel AI Gateway 2'), 'stored-key-2222222');
  assert.equal(secrets.values.has(SECRET), false);
  assert.equal(await keys.get(), 'env-key-11111111', 'the environment stays the default key');
  assert.equal(changes(), 1);
  assert.ok(!lines.some((line) => line.includes('stored-key')), 'no key in the log');
});

test('a VS Code that does not take the group keeps the stored key as the default key', async () => {
  const { keys, secrets } = store();
  await secrets.store(SECRET, 'stored-key-2222222');
  // The stub's executeCommand of an unknown command resolves without listing anything.
  assert.equal(await keys.moveStoredKey(log), undefined);
  stub.registeredCommands.set(MIGRATE, () => Promise.reject(new Error('command not found')));
  try {
    assert.equal(await keys.moveStoredKey(log), undefined);
  } finally {
    stub.registeredCommands.delete(MIGRATE);
  }
  assert.equal(await keys.get(), 'stored-key-2222222');
  assert.equal(await store().keys.moveStoredKey(log), undefined, 'nothing stored: nothing to move');
});

test('Manage API Keys opens the Language Models editor', async () => {
  const { keys } = store();
  let opened = 0;
  stub.registeredCommands.set('workbench.action.chat.manage', () => void opened++);
  try {
    await keys.manage();
  } finally {
    stub.registeredCommands.delete('workbench.action.chat.manage');
  }
  assert.equal(opened, 1);
});
