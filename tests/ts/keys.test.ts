// The API key: SecretStorage first, then the environment; the prompt trims what is pasted; the
// key can be replaced and removed; every key handed out is known for redaction.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import * as stub from './vscode-stub';
import { KeyStore } from '../../extension/keys';

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

test('the prompt hides the key, refuses a blank one, stores it trimmed and says the key changed', async () => {
  const { keys, secrets, changes } = store();
  stub.answers.inputBox.push('  pasted-key-333333 \n');
  await keys.prompt();
  assert.equal(secrets.values.get(SECRET), 'pasted-key-333333');
  assert.equal(changes(), 1);
  const options = stub.inputBoxOptions[0];
  assert.equal(options.password, true);
  assert.ok(options.validateInput!('   '), 'a blank key is refused');
  assert.equal(options.validateInput!('k'), undefined);
});

test('Escape (or only spaces) stores nothing and changes nothing', async () => {
  const { keys, secrets, changes } = store();
  await secrets.store(SECRET, 'stored-key-2222222');
  stub.answers.inputBox.push(undefined, '   ');
  await keys.prompt();
  await keys.prompt();
  assert.equal(secrets.values.get(SECRET), 'stored-key-2222222');
  assert.equal(changes(), 0);
});

test('manage: with a stored key, Remove deletes it and Replace asks for a new one; without one it asks at once', async () => {
  const { keys, secrets, changes } = store();
  stub.answers.inputBox.push('first-key-4444444');
  await keys.manage(); // nothing stored: straight to the prompt
  assert.equal(secrets.values.get(SECRET), 'first-key-4444444');
  stub.answers.quickPick.push('Replace API key');
  stub.answers.inputBox.push('second-key-555555');
  await keys.manage();
  assert.equal(secrets.values.get(SECRET), 'second-key-555555');
  stub.answers.quickPick.push('Remove API key');
  await keys.manage();
  assert.equal(secrets.values.has(SECRET), false);
  assert.equal(await keys.get(), undefined);
  assert.equal(changes(), 3);
  stub.answers.quickPick.push(undefined); // dismissed
  await secrets.store(SECRET, 'kept-key-66666666');
  await keys.manage();
  assert.equal(secrets.values.get(SECRET), 'kept-key-66666666');
  assert.equal(changes(), 3);
});
