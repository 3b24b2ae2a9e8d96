// message-counts.json: the newest messages' texts and counts, sealed under a key in SecretStorage.
// What a user relies on: no readable prompt text on disk, another window's texts kept, and a file
// that is damaged, from another profile's key or tampered with costs a recount and one log line,
// never a start or a save.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type * as vscode from 'vscode';
import { SECRET_COUNTS_KEY } from '../../extension/config';
import { MAX_FILE, SEALED_CHARS, SealedTexts, sealedFile } from '../../extension/counts/sealed';
import { PERSIST_LIMIT, type MessageText } from '../../extension/counts/shapes';
import * as stub from './vscode-stub';

const folders: string[] = [];
after(() => folders.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function fileIn(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agl-sealed-'));
  folders.push(dir);
  return path.join(dir, 'message-counts.json');
}

function opened(file: string, secrets: vscode.SecretStorage = new stub.SecretStorage()): { texts: SealedTexts; lines: string[] } {
  const lines: string[] = [];
  return { texts: new SealedTexts(file, secrets, (line) => lines.push(line)), lines };
}

const PROMPT = 'please refactor the billing module of acme-payments without touching the ledger';
const TEXTS: MessageText[] = [
  ['o200k_base', 1, PROMPT, 17],
  ['o200k_base', 2, 'Sure: first the invoice class, then the ledger adapter.', 14],
  ['cl100k_base', 1, 'ünïcödé and emoji 🎉 and "quotes" \\ and\nnewlines\u0000', 21],
];

test('texts come back exactly, and the file holds neither a text nor the key', async () => {
  const file = fileIn();
  const secrets = new stub.SecretStorage();
  await opened(file, secrets).texts.save(TEXTS);
  const raw = fs.readFileSync(file, 'utf8');
  for (const word of ['billing', 'acme', 'ledger', 'invoice', 'emoji']) assert.ok(!raw.includes(word), `"${word}" is not readable in the file`);
  const key = secrets.values.get(SECRET_COUNTS_KEY);
  assert.ok(key && Buffer.from(key, 'base64').length === 32, 'a 256-bit key, kept in SecretStorage');
  assert.ok(!raw.includes(key), 'the key is not in the file');
  const again = opened(file, secrets);
  assert.deepEqual(await again.texts.load(), TEXTS);
  assert.deepEqual(again.lines, []);
});

test('nothing to save writes nothing; a missing file loads as none, silently', async () => {
  const file = fileIn();
  const { texts, lines } = opened(file);
  await texts.save(undefined);
  assert.equal(fs.existsSync(file), false);
  assert.deepEqual(await texts.load(), []);
  assert.deepEqual(lines, []);
});

test("another profile's key, a damaged file, a file not ours: none, one line each, and the next save repairs it", async () => {
  const file = fileIn();
  await opened(file).texts.save(TEXTS); // sealed with a key this profile does not have
  const secrets = new stub.SecretStorage();
  const cases: [string, () => void, RegExp][] = [
    ['another key', () => undefined, /no longer has/],
    ['a flipped byte', () => flipByte(file, -20), /could not be opened \(damaged\)/],
    ['a flipped tag', () => flipByte(file, 13 + 17 + 12 + 3), /could not be opened \(damaged\)/],
    ['cut short', () => fs.truncateSync(file, 40), /not a file of ours/],
    ['JSON', () => fs.writeFileSync(file, JSON.stringify({ key: 1, sealed: [] })), /not a file of ours/],
    ['too big', () => fs.writeFileSync(file, Buffer.alloc(MAX_FILE + 1)), /could not be read \(larger than \d+ bytes\)/],
  ];
  for (const [name, spoil, message] of cases) {
    if (name !== 'another key') await opened(file, secrets).texts.save(TEXTS); // ours, then damaged
    spoil();
    const window = opened(file, secrets);
    assert.deepEqual(await window.texts.load(), [], name);
    assert.equal(window.lines.length, 1, `${name}: one line (${window.lines.join(' | ')})`);
    assert.match(window.lines[0], message, name);
    await window.texts.save(TEXTS.slice(0, 1));
    assert.deepEqual(await opened(file, secrets).texts.load(), TEXTS.slice(0, 1), `${name}: the next save writes a file that opens`);
  }
});

test('a sealed file whose entries are wrong keeps the good ones, with one line', async () => {
  const file = fileIn();
  const secrets = new stub.SecretStorage();
  await opened(file, secrets).texts.save(TEXTS); // makes the key
  const key = Buffer.from(secrets.values.get(SECRET_COUNTS_KEY)!, 'base64');
  const bad: unknown[] = [
    ['o200k_base', 1, 'good', 3],
    ['o200k_base', 1, 'negative', -1],
    ['o200k_base', 1, 'fraction', 1.5],
    ['o200k_base', 1, 'huge', 1e12],
    ['o200k_base', 99, 'a role no one has', 2],
    ['', 1, 'no tokenizer', 2],
    ['o2\u0000k', 1, 'a NUL in the tokenizer', 2],
    ['o200k_base', 1, 'x'.repeat(PERSIST_LIMIT + 1), 2],
    ['o200k_base', 1, 42, 2],
    { tokenizer: 'o200k_base' },
    null,
  ];
  fs.writeFileSync(file, sealedFile(key, JSON.stringify(bad)));
  const window = opened(file, secrets);
  assert.deepEqual(await window.texts.load(), [['o200k_base', 1, 'good', 3]]);
  assert.deepEqual(window.lines, ['message-counts.json: 10 invalid entries were dropped.']);
});

test("two windows: each saves its own, neither loses the other's, and both make the same key", async () => {
  const file = fileIn();
  const secrets = new stub.SecretStorage();
  const [first, second] = [opened(file, secrets), opened(file, secrets)];
  await Promise.all([first.texts.load(), second.texts.load()]); // both find no key and make one
  await first.texts.save([TEXTS[0]]);
  await second.texts.save([TEXTS[1]]);
  await first.texts.save([TEXTS[2]]);
  assert.deepEqual(await opened(file, secrets).texts.load(), [TEXTS[0], TEXTS[1], TEXTS[2]]);
  assert.deepEqual([...first.lines, ...second.lines], []);
});

test('the file keeps the newest SEALED_CHARS characters', async () => {
  const file = fileIn();
  const secrets = new stub.SecretStorage();
  // 20 fit, 21 do not.
  const big = (i: number): MessageText => ['o200k_base', 1, `${String(i).padStart(2)} ${'y'.repeat(Math.floor(SEALED_CHARS / 20.5) - 3)}`, i];
  const window = opened(file, secrets);
  await window.texts.save(Array.from({ length: 20 }, (_, i) => big(i + 1)));
  await window.texts.save([big(21)]);
  const reader = opened(file, secrets);
  const kept = await reader.texts.load();
  assert.deepEqual(
    kept.map(([, , , count]) => count),
    Array.from({ length: 20 }, (_, i) => i + 2),
    'the oldest went',
  );
  assert.ok(kept.reduce((sum, [, , text]) => sum + text.length, 0) <= SEALED_CHARS);
  assert.deepEqual(reader.lines, []);
});

test('a file that cannot be replaced: one line until a save succeeds, not one a save; nothing thrown', async () => {
  const file = fileIn();
  fs.mkdirSync(path.join(file, 'in the way'), { recursive: true }); // a folder there: the rename fails
  const { texts, lines } = opened(file);
  for (let save = 0; save < 3; save++) await texts.save(TEXTS.map(([tokenizer, role, text, count]) => [tokenizer, role, `${text} ${save}`, count]));
  assert.equal(lines.filter((line) => line.includes('could not be saved')).length, 1, lines.join(' | '));
  fs.rmSync(file, { recursive: true });
  await texts.save(TEXTS);
  assert.ok(lines.at(-1)?.endsWith('saved again.'), lines.join(' | '));
  fs.rmSync(file);
  fs.mkdirSync(path.join(file, 'in the way'), { recursive: true });
  await texts.save(TEXTS.slice(0, 1).map(([tokenizer, role, text, count]) => [tokenizer, role, `${text} later`, count]));
  assert.equal(lines.filter((line) => line.includes('could not be saved')).length, 2, 'a new failure after a success is said again');
});

test('a secret storage that fails: nothing is written, nothing is thrown, one line', async () => {
  const file = fileIn();
  const failing = {
    get: () => Promise.reject(new Error('no keyring')),
    store: () => Promise.reject(new Error('no keyring')),
    delete: () => Promise.resolve(),
    onDidChange: () => ({ dispose() {} }),
  };
  const { texts, lines } = opened(file, failing as unknown as vscode.SecretStorage);
  assert.deepEqual(await texts.load(), []);
  await texts.save(TEXTS);
  await texts.save(TEXTS);
  assert.equal(fs.existsSync(file), false, 'no file without a key');
  assert.equal(lines.length, 1, lines.join(' | '));
  assert.match(lines[0], /secret storage failed \(no keyring\); message counts are not kept across restarts/);
});

test('a keychain that never answers: load and save end within the bound, nothing is written, one line', async () => {
  const file = fileIn();
  const silent = {
    get: () => new Promise<never>(() => undefined),
    store: () => new Promise<never>(() => undefined),
    delete: () => Promise.resolve(),
    onDidChange: () => ({ dispose() {} }),
  };
  const lines: string[] = [];
  const texts = new SealedTexts(file, silent as unknown as vscode.SecretStorage, (line) => lines.push(line), 200);
  const started = Date.now();
  assert.deepEqual(await texts.load(), []);
  await texts.save(TEXTS);
  assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`);
  assert.equal(fs.existsSync(file), false);
  assert.deepEqual(lines, ['The secret storage failed (no answer in 0.2 s); message counts are not kept across restarts.']);
});

/** One byte of the file changed, counted from the end when negative. */
function flipByte(file: string, at: number): void {
  const bytes = fs.readFileSync(file);
  bytes[at < 0 ? bytes.length + at : at] ^= 0x01;
  fs.writeFileSync(file, bytes);
}
