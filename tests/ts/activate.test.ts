// The real extension.ts activated with VS Code's API stubbed, the real sidecar and the loopback fake
// gateway, over a global storage folder holding corrupt or wrongly typed files: activation never
// fails, the provider still answers, bad entries are dropped with one log line and the files are
// repaired; two windows saving counts to one folder keep both windows' counts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import type * as vscode from 'vscode';
import * as stub from './vscode-stub';
import { bundleGateway } from './real';
import { until } from './until';
import { activate, deactivate } from '../../extension/extension';
import type { ModelEntry } from '../../extension/contract';
import type { GatewayChatProvider } from '../../extension/provider';
import { SECRET_COUNTS_KEY } from '../../extension/config';
import { hashKeyOf, keyedDigest } from '../../extension/counts/key';
import { SealedTexts } from '../../extension/counts/sealed';
import { checkCounts } from '../../extension/counts/shapes';
import { PREFETCH_DELAY_MS, RECHECK_MS } from '../../extension/counts/prefetch';

const MODEL = 'openai/gpt-5';
const gateway = bundleGateway({ defaultKey: true });

interface Window {
  provider: GatewayChatProvider;
  log: stub.LogOutputChannel;
  close(): void;
}

/** The profile's secret storage, which every window of the profile shares, as its global storage. */
const profiles = new Map<string, stub.SecretStorage>();
const profileOf = (storage: string) => profiles.get(storage) ?? profiles.set(storage, new stub.SecretStorage()).get(storage)!;

/** Activates the extension the way VS Code does, in a "window" whose global storage is `storage`. */
async function openWindow(storage: string, secrets = profileOf(storage)): Promise<Window> {
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    secrets,
    globalStorageUri: { fsPath: storage },
  };
  await activate(context as unknown as vscode.ExtensionContext);
  return {
    provider: stub.registeredProviders.get('vercel-ai-gateway') as GatewayChatProvider,
    log: stub.outputChannels.at(-1)!,
    close: () => context.subscriptions.forEach((d) => d.dispose()),
  };
}

function storageWith(models: string, counts: string): string {
  const dir = gateway.folder('agl-activate-');
  fs.writeFileSync(path.join(dir, 'models.json'), models);
  fs.writeFileSync(path.join(dir, 'token-counts.json'), counts);
  return dir;
}

const token = () => new CancellationTokenSource().token as unknown as vscode.CancellationToken;
const count = (window: Window, text: string) => window.provider.provideTokenCount({ id: MODEL } as vscode.LanguageModelChatInformation, text, token());
const modelIds = async (window: Window) => (await window.provider.provideLanguageModelChatInformation({ silent: true }, token())).map((m) => m.id).sort();
/** The key token-counts.json's hashes are made with in the profile of `dir` (made on first use). */
const hashKey = (dir: string) => hashKeyOf(Buffer.from(profileOf(dir).values.get(SECRET_COUNTS_KEY)!, 'base64'));
const hashedIn = (dir: string) => (text: string) => keyedDigest(hashKey(dir).key, `${MODEL}\u0000${text}`);
/** What a release before keys saved, and what anyone can compute for a guessed prompt. */
const unsalted = (text: string) => createHash('sha1').update(`${MODEL}\u0000${text}`).digest('base64');
const warnings = (window: Window, file: string) => window.log.lines.filter((line) => line.startsWith('warn') && line.includes(file));

/** The counts file once it holds `key` (saves run in the background when a window closes). */
async function savedCounts(dir: string, key: string): Promise<Record<string, number>> {
  const file = path.join(dir, 'token-counts.json');
  const read = () => {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    return text.startsWith('{') && text.endsWith('}') ? (JSON.parse(text) as { hashed?: Record<string, number> }) : undefined;
  };
  await until(() => key in (read()?.hashed ?? {}), `token-counts.json holds ${key}`, 5000);
  const saved = read();
  assert.ok(saved?.hashed);
  assert.equal(checkCounts(saved).dropped, 0, 'the file holds only valid entries');
  return saved.hashed;
}

const FAKE_MODELS = ['fake/agent-loop', 'fake/plain', 'fake/pricey', 'fake/reasoning', 'fake/text', 'fake/tools'];

test('both files null: activation succeeds, the models come from the gateway, counts work and the files are repaired', async () => {
  const dir = storageWith('null', 'null');
  const hashed = hashedIn(dir);
  const window = await openWindow(dir);
  try {
    assert.deepEqual(await modelIds(window), FAKE_MODELS);
    assert.equal(await count(window, 'hello world'), 2);
    assert.equal(warnings(window, 'models.json').length, 1);
    assert.equal(warnings(window, 'token-counts.json').length, 1);
  } finally {
    window.close();
  }
  assert.deepEqual(await savedCounts(dir, hashed('hello world')), { [hashed('hello world')]: 2 });
  const models = JSON.parse(fs.readFileSync(path.join(dir, 'models.json'), 'utf8')) as ModelEntry[];
  assert.deepEqual(models.map((m) => m.id).sort(), FAKE_MODELS);
});

test('counts "oops" and a truncated models.json: activation succeeds and the provider answers', async () => {
  const dir = storageWith('[{"id": "fake/te', '"oops"');
  const hashed = hashedIn(dir);
  const window = await openWindow(dir);
  try {
    assert.deepEqual(await modelIds(window), FAKE_MODELS);
    assert.equal(await count(window, 'hello world'), 2);
    assert.match(warnings(window, 'models.json')[0] ?? '', /not valid JSON/);
    assert.equal(warnings(window, 'token-counts.json').length, 1);
  } finally {
    window.close();
  }
  await savedCounts(dir, hashed('hello world'));
});

test('wrongly typed entries are dropped one by one, with one log line per file; the good ones are used', async () => {
  const good: ModelEntry = {
    id: 'cached/model',
    name: 'Cached',
    family: 'cached',
    version: '1',
    contextWindow: 1000,
    maxInputTokens: 900,
    maxOutputTokens: 100,
    capabilities: { toolCalling: true, imageInput: false },
    reasoning: false,
    pricing: { input: 1, output: 2, cacheRead: null, cacheWrite: null, tiers: [] },
    tags: [],
    ownedBy: 'cached',
    description: '',
    tooltip: '',
    detail: '',
    budgetFactor: 1,
    budgetInputTokens: 900,
    tokenizer: 'o200k_base',
    configurationSchema: null,
    hostPricing: null,
    warning: null,
    fastTierOf: null,
    metrics: null,
  };
  const models = [
    { id: 5 },
    null,
    'oops',
    good,
    { ...good, id: 'bad/limit', maxInputTokens: '900' },
    { ...good, id: 'bad/price', pricing: { ...good.pricing, input: -1 } },
    good,
  ];
  const dir = storageWith(JSON.stringify(models), '{}');
  await profileOf(dir).store(SECRET_COUNTS_KEY, randomBytes(32).toString('base64')); // the profile's key, made before
  const hashed = hashedIn(dir);
  const counts = {
    key: hashKey(dir).id,
    plain: {
      [`${MODEL}\u0000read_file`]: 3,
      [`${MODEL}\u0000oops`]: 'oops',
      [`${MODEL}\u0000neg`]: -7,
      [`${MODEL}\u0000huge`]: 1e300,
      'no separator': 4,
      [`${MODEL}\u0000half`]: 1.5,
    },
    hashed: { [hashed('known prompt')]: 11, [hashed('negative')]: -7, 'not a hash': 4 },
  };
  fs.writeFileSync(path.join(dir, 'token-counts.json'), JSON.stringify(counts).replace('1e+300', '1e999'));
  const window = await openWindow(dir);
  try {
    assert.deepEqual(await modelIds(window), ['cached/model'], 'the cached list is served at once');
    assert.match(warnings(window, 'models.json').join('\n'), /: 6 invalid entries were dropped/);
    assert.match(warnings(window, 'token-counts.json').join('\n'), /: 7 invalid entries were dropped/);
    assert.equal(warnings(window, 'token-counts.json').length, 1);
    assert.equal(await count(window, 'read_file'), 3, 'a valid saved count is used');
    assert.equal(await count(window, 'known prompt'), 11);
    assert.equal(await count(window, 'neg'), 1, 'a dropped count is asked of the sidecar');
  } finally {
    window.close();
  }
  const saved = await savedCounts(dir, hashed('neg'));
  assert.equal(saved[hashed('known prompt')], 11);
  assert.equal(saved[hashed('negative')], undefined, 'the file is repaired');
});

test("two windows on one storage folder: each saves its counts, and neither loses the other's", async () => {
  const dir = storageWith('[]', '{}');
  const hashed = hashedIn(dir);
  const [first, second] = [await openWindow(dir), await openWindow(dir)];
  let firstCount: number;
  try {
    firstCount = await count(first, 'only the first window counted this');
    assert.ok(firstCount > 0);
    assert.ok((await count(second, 'only the second window counted this')) > 0);
  } finally {
    first.close();
  }
  await savedCounts(dir, hashed('only the first window counted this'));
  second.close();
  const saved = await savedCounts(dir, hashed('only the second window counted this'));
  assert.equal(saved[hashed('only the first window counted this')], firstCount, "the first window's count survived the second window's save");
});

test("deactivate() resolves once the last counts are on disk: VS Code awaits it at shutdown, not a disposable's save", async () => {
  const dir = storageWith('[]', '{}');
  const hashed = hashedIn(dir);
  const window = await openWindow(dir);
  try {
    assert.ok((await count(window, 'counted just before the window closed')) > 0);
    await deactivate();
    const file = path.join(dir, 'token-counts.json');
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { hashed: Record<string, number> };
    assert.ok(hashed('counted just before the window closed') in saved.hashed, 'the count is saved when deactivate() resolves');
    const written = fs.statSync(file).mtimeMs;
    window.close(); // VS Code disposes the subscriptions after deactivate(): the same save, not a second one
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(fs.statSync(file).mtimeMs, written, 'disposing after deactivate() writes nothing more');
  } finally {
    window.close();
  }
});

test('token-counts.json cannot confirm a guessed prompt: its hashes are keyed by the profile, whose key is not in the file', async () => {
  const dir = storageWith('[]', '{}');
  const prompt = 'is the merger with northwind traders going ahead in march';
  const window = await openWindow(dir);
  let exact: number;
  try {
    exact = await count(window, prompt);
    await deactivate();
  } finally {
    window.close();
  }
  const text = fs.readFileSync(path.join(dir, 'token-counts.json'), 'utf8');
  const saved = JSON.parse(text) as { key?: string; hashed: Record<string, number> };
  assert.ok(Object.values(saved.hashed).includes(exact), 'the count is saved');
  // Whoever reads the file guesses the prompt: before, one SHA-1 of it was the file's key for its count.
  assert.equal(saved.hashed[unsalted(prompt)], undefined, 'the unsalted hash of the guess is not in the file');
  const stored = profileOf(dir).values.get(SECRET_COUNTS_KEY)!;
  assert.ok(!text.includes(stored) && !text.includes(hashKey(dir).key.toString('base64')), 'neither the key nor the hash key is in the file');
  // Another profile (the reader's own install, its own key) restoring the file finds nothing by the guess.
  const elsewhere = storageWith('[]', text);
  const other = await openWindow(elsewhere);
  try {
    await modelIds(other);
    assert.equal(other.provider.tokens.known(MODEL, prompt), undefined, 'another key confirms nothing');
  } finally {
    other.close();
  }
  const again = await openWindow(dir);
  try {
    await modelIds(again);
    assert.equal(again.provider.tokens.known(MODEL, prompt), exact, 'this profile still finds it after a restart');
  } finally {
    again.close();
  }
});

test('a file of unsalted hashes (before keys) is never trusted: dropped with one line, counted again, rewritten keyed', async () => {
  const dir = storageWith('[]', JSON.stringify({ plain: { [`${MODEL}\u0000read_file`]: 3 }, hashed: { [unsalted('hello world')]: 11 } }));
  const window = await openWindow(dir);
  try {
    await modelIds(window);
    assert.equal(await count(window, 'hello world'), 2, "counted again, not the unsalted file's 11");
    assert.equal(await count(window, 'read_file'), 3, 'the tool strings, public, are kept');
    const lines = window.log.lines.filter((line) => line.includes('token-counts.json'));
    assert.deepEqual(lines, ['info token-counts.json: 1 counts hashed without a key (an older version) were dropped; they are counted again.']);
    await deactivate();
  } finally {
    window.close();
  }
  const saved = JSON.parse(fs.readFileSync(path.join(dir, 'token-counts.json'), 'utf8')) as { key?: string; hashed: Record<string, number> };
  assert.equal(saved.key, hashKey(dir).id);
  assert.deepEqual(saved.hashed, { [hashedIn(dir)('hello world')]: 2 }, 'the unsalted hash is gone');
});

test('a keychain that never answers holds up neither activation nor counting nor the last save; nothing hashed is kept', { timeout: 30_000 }, async () => {
  const dir = storageWith('[]', '{}');
  const silent = new stub.SecretStorage();
  silent.get = () => new Promise<string | undefined>(() => undefined);
  silent.store = () => new Promise<void>(() => undefined);
  const window = await openWindow(dir, silent);
  try {
    assert.deepEqual(await modelIds(window), FAKE_MODELS);
    assert.equal(await count(window, 'hello world'), 2);
    assert.equal(await count(window, 'hello world'), 2, 'remembered');
    await deactivate();
    const saved = JSON.parse(fs.readFileSync(path.join(dir, 'token-counts.json'), 'utf8')) as { key?: string; hashed: Record<string, number> };
    assert.deepEqual([saved.key, saved.hashed], [undefined, {}]);
    assert.equal(window.log.lines.filter((line) => line.includes('secret storage failed')).length, 1);
  } finally {
    window.close();
  }
});

test('after a restart the messages come back from the sealed file, found by their text; the file holds no prompt', async () => {
  const dir = storageWith('[]', '{}');
  const secrets = new stub.SecretStorage();
  const prompt = 'summarise the quarterly numbers of northwind traders for the board';
  const message = () => ({ role: 1, name: undefined, content: [new stub.LanguageModelTextPart(prompt)] }) as unknown as vscode.LanguageModelChatMessage;
  const countMessage = (window: Window) => window.provider.provideTokenCount({ id: MODEL } as vscode.LanguageModelChatInformation, message(), token());
  const first = await openWindow(dir, secrets);
  let exact: number;
  try {
    exact = await countMessage(first);
    assert.ok(exact > 0);
    await deactivate();
  } finally {
    first.close();
  }
  const file = path.join(dir, 'message-counts.json');
  assert.ok(!fs.readFileSync(file, 'utf8').includes('northwind'), 'the prompt is not readable in the file');
  assert.ok(!fs.readFileSync(path.join(dir, 'token-counts.json'), 'utf8').includes('northwind'));
  // The sealed count made different from the hashed one, to see which the restarted window answers.
  const saved = await new SealedTexts(file, secrets, () => undefined).load();
  assert.deepEqual(
    saved.map(([, role, text, count]) => [role, text, count]),
    [[1, prompt, exact]],
  );
  await new SealedTexts(file, secrets, () => undefined).save(saved.map(([key, role, text]) => [key, role, text, 777]));
  const second = await openWindow(dir, secrets);
  try {
    // The keychain answers off activation's path; a count asked before it is counted by the sidecar.
    await until(() => Boolean(second.provider.tokens.keyId), 'the keychain answers', 5000);
    let answered = 0;
    await until(async () => (answered = await countMessage(second)) === 777, 'the sealed file is read', 5000);
    assert.equal(answered, 777, 'found in the sealed file (the hashed count is the exact one)');
    assert.deepEqual(
      second.log.lines.filter((line) => line.includes('message-counts.json') || line.includes('secret storage')),
      [],
      'nothing said about the sealed file',
    );
  } finally {
    second.close();
  }
});

test('a garbage message-counts.json: activation succeeds, messages are counted, one line says so, the next save repairs it', async () => {
  const dir = storageWith('[]', '{}');
  const file = path.join(dir, 'message-counts.json');
  fs.writeFileSync(file, 'agl-sealed-1\nnot what we write at all, and not sealed');
  const secrets = new stub.SecretStorage();
  const window = await openWindow(dir, secrets);
  try {
    const message = {
      role: 1,
      name: undefined,
      content: [new stub.LanguageModelTextPart('count me after the garbage')],
    } as unknown as vscode.LanguageModelChatMessage;
    assert.ok((await window.provider.provideTokenCount({ id: MODEL } as vscode.LanguageModelChatInformation, message, token())) > 0);
    await deactivate();
    const lines = window.log.lines.filter((line) => line.includes('message-counts.json'));
    assert.equal(lines.length, 1, lines.join(' | '));
    assert.match(lines[0], /^info message-counts\.json: (not a file of ours|sealed with a key)/);
    const saved = await new SealedTexts(file, secrets, () => undefined).load();
    assert.deepEqual(
      saved.map(([, role, text]) => [role, text]),
      [[1, 'count me after the garbage']],
      'rewritten, sealed',
    );
  } finally {
    window.close();
  }
});

test(
  'special files in storage: a FIFO or a link to /dev/zero is refused at once, one line each; activate() and deactivate() end',
  { skip: process.platform === 'win32', timeout: 30_000 },
  async () => {
    // Another process may leave anything there: a FIFO would block the open for good (activate() at
    // token-counts.json, deactivate() at message-counts.json), /dev/zero would grow the host's memory.
    const dir = gateway.folder('agl-special-');
    execFileSync('mkfifo', [path.join(dir, 'token-counts.json')]);
    fs.symlinkSync('/dev/zero', path.join(dir, 'models.json'));
    fs.symlinkSync('/dev/zero', path.join(dir, 'message-counts.json'));
    const rss = process.memoryUsage().rss;
    const window = await openWindow(dir);
    try {
      assert.deepEqual(await modelIds(window), FAKE_MODELS);
      assert.ok((await count(window, 'counted beside special files')) > 0);
      await deactivate();
      for (const file of ['token-counts.json', 'models.json', 'message-counts.json']) {
        const lines = window.log.lines.filter((line) => line.includes(file));
        assert.equal(lines.length, 1, `${file}: one line (${lines.join(' | ')})`);
        assert.match(lines[0], /not a regular file/, file);
      }
      assert.ok(process.memoryUsage().rss - rss < 256 << 20, 'nothing read past the bound');
    } finally {
      window.close();
    }
  },
);

test('activation reads no tools; their strings are counted once the list is served, and again when extensions change', async () => {
  let reads = 0;
  const tool = (name: string) => ({ name, description: `The ${name} tool`, inputSchema: { type: 'object', properties: { path: { type: 'string' } } } });
  const tools = [tool('read_file')];
  Object.defineProperty(stub.lm, 'tools', { get: () => (reads++, tools.map((t) => ({ ...t }))), configurable: true });
  const window = await openWindow(storageWith('[]', '{}'));
  const known = (text: string) => window.provider.tokens.known('fake/text', text) !== undefined;
  try {
    assert.equal(reads, 0, 'activation reads no tools');
    assert.deepEqual(await modelIds(window), FAKE_MODELS);
    const recheck = Date.now() + PREFETCH_DELAY_MS + RECHECK_MS[0];
    await until(() => known('read_file') && known('The read_file tool'), 'the tool strings are known', recheck - Date.now());
    tools.push(tool('write_file'));
    stub.extensionsChanged.fire();
    await until(() => known('The write_file tool'), 'the new tool is known, before the first recheck', recheck - 500 - Date.now());
  } finally {
    window.close();
    Object.defineProperty(stub.lm, 'tools', { value: [], writable: true, configurable: true });
  }
});
