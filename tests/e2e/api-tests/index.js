// Runs inside a real VS Code extension host, against the installed VSIX and the fake gateway,
// as a consumer extension would: vscode.lm.selectChatModels / sendRequest / countTokens.
const assert = require('node:assert/strict');
const { execSync } = require('node:child_process');
const vscode = require('vscode');

const GATEWAY = process.env.FAKE_GATEWAY_URL;
const VENDOR = 'vercel-ai-gateway';
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const tests = [];
// Each test has a time limit: one past it fails, named, and the next one runs.
const test = (name, fn, limit = 90_000) => tests.push({ name, fn, limit });

async function models() {
  // The sidecar sets itself up on first start (a venv and a pip install): allow it time.
  const deadline = Date.now() + 240_000;
  for (;;) {
    const found = await vscode.lm.selectChatModels({ vendor: VENDOR });
    if (found.length >= 4 || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function model(id) {
  const found = (await models()).find((m) => m.id === id);
  assert.ok(found, `model ${id} is listed`);
  return found;
}

async function collect(response) {
  const parts = [];
  for await (const part of response.stream) parts.push(part);
  return parts;
}

const textOf = (parts) =>
  parts
    .filter((p) => p instanceof vscode.LanguageModelTextPart)
    .map((p) => p.value)
    .join('');
const gatewayLog = async () => (await fetch(`${GATEWAY}/_requests`)).json();

/** The sidecar's pid: the child of this extension host (the test extension shares its process) that
 * runs `gateway_lm serve`. Windows has no pgrep: its process table through PowerShell's CIM cmdlets
 * (tests/e2e/electron.mjs runs these tests on Windows). */
function sidecarPid() {
  const command =
    process.platform === 'win32'
      ? `powershell -NoProfile -NonInteractive -Command "(Get-CimInstance Win32_Process -Filter 'ParentProcessId=${process.pid}' | Where-Object { $_.CommandLine -like '*gateway_lm serve*' }).ProcessId"`
      : `pgrep -P ${process.pid} -f "gateway_lm serve"`;
  const pid = Number(execSync(command, { timeout: 30_000 }).toString().trim().split(/\s+/)[0]);
  assert.ok(pid > 0, 'the sidecar process was found');
  return pid;
}
const token = () => new vscode.CancellationTokenSource().token;

test('lists the gateway language models with names, windows and capabilities', async () => {
  const found = await models();
  const byId = new Map(found.map((m) => [m.id, m]));
  assert.deepEqual([...byId.keys()].sort(), ['fake/agent-loop', 'fake/plain', 'fake/pricey', 'fake/reasoning', 'fake/text', 'fake/tools']);
  const text = byId.get('fake/text');
  assert.equal(text.name, 'Fake Text');
  assert.equal(text.vendor, VENDOR);
  assert.equal(text.maxInputTokens, 200000 - 16384);
  if (text.capabilities) {
    assert.equal(text.capabilities.supportsToolCalling ?? text.capabilities.toolCalling, true);
    assert.equal(text.capabilities.supportsImageToText ?? text.capabilities.imageInput, true);
  }
  assert.equal(byId.get('fake/plain').maxInputTokens, 8192 - 4096);
}, 300_000); // the sidecar's first start (a venv, a pip install): up to 240 s

test('sendRequest streams text in several parts', async () => {
  const m = await model('fake/text');
  // The gateway pauses 20 ms after the first word: what it sends apart arrives apart.
  const parts = await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:ttfp] hi')], {}, token()));
  const texts = parts.filter((p) => p instanceof vscode.LanguageModelTextPart);
  assert.ok(texts.length >= 2, `${texts.length} text parts`);
  assert.equal(textOf(parts), 'Hello from the fake gateway.');
});

test('a tool call comes back parsed and its result reaches the gateway paired', async () => {
  const m = await model('fake/tools');
  const tools = [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }];
  const first = await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('read it')], { tools }, token()));
  const call = first.find((p) => p instanceof vscode.LanguageModelToolCallPart);
  assert.ok(call, 'a LanguageModelToolCallPart');
  assert.equal(call.name, 'read_file');
  assert.deepEqual(call.input, { city: 'Paris', days: 2 });
  const history = [
    vscode.LanguageModelChatMessage.User('read it'),
    vscode.LanguageModelChatMessage.Assistant([call]),
    vscode.LanguageModelChatMessage.User([new vscode.LanguageModelToolResultPart(call.callId, [new vscode.LanguageModelTextPart('sunny')])]),
  ];
  const second = await collect(await m.sendRequest(history, { tools }, token()));
  assert.equal(textOf(second), 'The tool said: sunny');
  const input = (await gatewayLog()).at(-1).body.input;
  assert.deepEqual(
    input.slice(-2).map((i) => [i.type, i.call_id]),
    [
      ['function_call', call.callId],
      ['function_call_output', call.callId],
    ],
  );
  assert.equal(input.at(-1).output, 'sunny');
});

test('an image is sent as input_image', async () => {
  const m = await model('fake/text');
  const message = vscode.LanguageModelChatMessage.User([
    new vscode.LanguageModelTextPart('what is this?'),
    vscode.LanguageModelDataPart.image(PNG, 'image/png'),
  ]);
  await collect(await m.sendRequest([message], {}, token()));
  const content = (await gatewayLog()).at(-1).body.input[0].content;
  assert.equal(content[1].type, 'input_image');
  assert.equal(content[1].image_url, `data:image/png;base64,${PNG.toString('base64')}`);
});

test('cancelling stops the stream and closes the upstream connection', async () => {
  const m = await model('fake/text');
  const source = new vscode.CancellationTokenSource();
  const response = await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:slow] go')], {}, source.token);
  let seen = 0;
  let cancelledAt = 0;
  try {
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart && ++seen === 2) {
        cancelledAt = Date.now();
        source.cancel();
      }
    }
  } catch {
    // A cancelled request may end its stream with a cancellation error.
  }
  assert.ok(cancelledAt > 0, 'parts arrived before the cancel');
  assert.ok(seen < 50, `the stream stopped (${seen} parts of 400)`);
  await new Promise((r) => setTimeout(r, 500));
  const entry = (await gatewayLog()).at(-1);
  assert.ok(entry.client_closed_at, 'the gateway saw the connection close');
  assert.ok(entry.client_closed_at * 1000 - cancelledAt < 300, `closed ${Math.round(entry.client_closed_at * 1000 - cancelledAt)} ms after the cancel`);
});

test("per-model options from the setting reach the gateway; a caller's bad option fails clearly, before anything is sent", async () => {
  const m = await model('fake/tools');
  await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:text] options')], { modelOptions: { top_p: 0.5 } }, token()));
  const body = (await gatewayLog()).filter((e) => e.body?.model === 'fake/tools').at(-1).body;
  assert.equal(body.temperature, 0.25, 'vercelAiGateway.modelOptions {"fake/t*": {"temperature": 0.25}}');
  assert.equal(body.top_p, 0.5, "a caller's top_p from sendRequest(..., {modelOptions})");
  const before = (await gatewayLog()).length;
  await assert.rejects(
    async () => collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('hi')], { modelOptions: { temperature: 'hot' } }, token())),
    (error) => /temperature/.test(String(error && error.message)),
  );
  assert.equal((await gatewayLog()).length, before, 'nothing was sent');
});

test('a 401 surfaces as a thrown error telling the user to set the API key', async () => {
  const m = await model('fake/text');
  await assert.rejects(
    async () => collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:error-401] hi')], {}, token())),
    (error) => /API key/.test(String(error && error.message)),
  );
});

test('a crashed sidecar fails the request within 2 s, is restarted, and the next request works', async () => {
  const m = await model('fake/text');
  const response = await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:slow] go')], {}, token());
  let killedAt = 0;
  let failure;
  try {
    for await (const part of response.stream) {
      if (!killedAt && part instanceof vscode.LanguageModelTextPart) {
        process.kill(sidecarPid(), 'SIGKILL'); // on Windows, TerminateProcess
        killedAt = Date.now();
      }
    }
  } catch (error) {
    failure = error;
  }
  const took = Date.now() - killedAt;
  assert.ok(killedAt > 0, 'the stream had started');
  assert.ok(failure, 'the request failed');
  assert.ok(took <= 2000, `failed ${took} ms after the crash`);
  assert.match(String(failure.message), /sidecar/i);
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const parts = await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('again')], {}, token()));
      assert.equal(textOf(parts), 'Hello from the fake gateway.');
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
});

test("a repository's .vscode/settings.json cannot move the key: its baseUrl, spend limit and retention are ignored", async () => {
  const config = vscode.workspace.getConfiguration('vercelAiGateway');
  assert.equal(config.get('connectTimeout'), 9, 'the workspace file is read (a window-scoped setting applies)');
  assert.equal(config.get('baseUrl'), `${GATEWAY}/v1`, "the user's base URL, not the workspace's");
  assert.notEqual(config.get('spend.maxRequestCost'), 1000);
  assert.equal(config.get('usage.retentionDays'), 90, "a repository cannot delete the user's history");
  assert.ok(process.env.WORKSPACE_TRAP_URL, 'the run wrote the trap');
  const answer = textOf(await collect(await (await model('fake/text')).sendRequest([vscode.LanguageModelChatMessage.User('where do I go?')], {}, token())));
  assert.ok(answer.length > 0, "answered by the user's gateway");
});

test('countTokens answers for strings and messages', async () => {
  // A model no earlier test chatted with: the fake gateway's fixed usage would calibrate the others.
  const m = await model('fake/reasoning');
  assert.equal(await m.countTokens('hello world'), 2);
  const forMessage = await m.countTokens(vscode.LanguageModelChatMessage.User('hello world'));
  assert.ok(forMessage > 2, `${forMessage}`);
});

test('a counted message is kept for the next start sealed: the file is ours and holds no prompt text', async () => {
  const fs = require('node:fs');
  const path = require('node:path');
  const file = path.join(process.env.E2E_USER_DIR, 'globalStorage', 'ai-gateway-lm.ai-gateway-lm', 'message-counts.json');
  const m = await model('fake/reasoning');
  const counted = Date.now();
  assert.ok((await m.countTokens(vscode.LanguageModelChatMessage.User('a message about pangolins, sealed at rest'))) > 0);
  // Saved with the counts, every 10 s: a file written after the count, through VS Code's real keychain.
  const deadline = Date.now() + 25_000;
  while (!(fs.existsSync(file) && fs.statSync(file).mtimeMs >= counted - 1000)) {
    assert.ok(Date.now() < deadline, `${file} was not written within 25 s of a count`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const bytes = fs.readFileSync(file);
  assert.equal(bytes.toString('latin1', 0, 13), 'agl-sealed-1\n');
  assert.ok(!bytes.includes('pangolins') && !bytes.includes('hello world'), 'no prompt text readable in the file');
});

// Several keys side by side (rfcs/0010), last: the groups it adds stay.
// Two groups added as VS Code's Add Models adds them (its own command: the key goes into VS Code's
// secret storage); VS Code asks the provider for each group's list with its key, and a chat on each
// reaches the gateway with that group's key, beside the default key's (the environment's).
test('provider groups: each group lists the models, and its chats carry its own key', async () => {
  const keys = { Personal: 'vck_personal-0123456789', Team: 'vck_team-9876543210' };
  for (const [name, apiKey] of Object.entries(keys)) {
    await vscode.commands.executeCommand('lm.addLanguageModelsProviderGroup', { name, vendor: VENDOR, apiKey });
  }
  let found = [];
  for (const deadline = Date.now() + 30_000; found.length < 3 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
    found = await vscode.lm.selectChatModels({ vendor: VENDOR, id: 'fake/text' });
  }
  assert.equal(found.length, 3, "the default key's fake/text and each group's");
  const from = (await gatewayLog()).length;
  for (const m of found)
    assert.match(textOf(await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:text] hi')], {}, token()))), /\S/);
  const sent = (await gatewayLog())
    .slice(from)
    .map((e) => e.authorization)
    .sort();
  assert.deepEqual(sent, [`Bearer ${keys.Personal}`, `Bearer ${keys.Team}`, `Bearer ${process.env.AI_GATEWAY_API_KEY}`].sort());
}, 120_000);

// A model object kept across the deletion of its group (a caller that held on to what
// selectChatModels gave it). The Language Models editor's Delete runs no command an extension can
// call: it deletes the group's secret and removes the group from the profile's chatLanguageModels.json,
// whose change VS Code watches; the test removes it from that file, as Delete does.
test('a model kept from a deleted group is refused, and its key is never sent again', async () => {
  const apiKey = 'vck_doomed-5555555555';
  await vscode.commands.executeCommand('lm.addLanguageModelsProviderGroup', { name: 'Doomed', vendor: VENDOR, apiKey });
  let found = [];
  for (const deadline = Date.now() + 30_000; found.length < 4 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
    found = await vscode.lm.selectChatModels({ vendor: VENDOR, id: 'fake/text' });
  }
  assert.equal(found.length, 4, "the default key's fake/text and three groups'");
  let doomed;
  for (const m of found) {
    await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:text] whose?')], {}, token()));
    if ((await gatewayLog()).at(-1).authorization === `Bearer ${apiKey}`) doomed = m;
  }
  assert.ok(doomed, "one of them is the Doomed group's");
  const file = require('node:path').join(process.env.E2E_USER_DIR, 'chatLanguageModels.json');
  const fs = require('node:fs');
  const groups = JSON.parse(fs.readFileSync(file, 'utf8'));
  assert.ok(
    groups.some((g) => g.name === 'Doomed'),
    `${file} holds the group`,
  );
  fs.writeFileSync(
    file,
    JSON.stringify(
      groups.filter((g) => g.name !== 'Doomed'),
      null,
      '\t',
    ),
  );
  // The workbench watches the profile's folder, but in code-server a write from the extension host
  // went unseen for 30 s (tried); the next group added rereads the file, and VS Code drops Doomed.
  const nudge = 'vck_nudge-7777777777';
  await vscode.commands.executeCommand('lm.addLanguageModelsProviderGroup', { name: 'Nudge', vendor: VENDOR, apiKey: nudge });
  let keys = [];
  for (const deadline = Date.now() + 30_000; !keys.includes(`Bearer ${nudge}`) && Date.now() < deadline; await new Promise((r) => setTimeout(r, 1000))) {
    found = await vscode.lm.selectChatModels({ vendor: VENDOR, id: 'fake/text' });
    const before = (await gatewayLog()).length;
    for (const m of found) await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:text] whose?')], {}, token()));
    keys = (await gatewayLog()).slice(before).map((e) => e.authorization);
  }
  assert.ok(keys.includes(`Bearer ${nudge}`), 'VS Code lists the group added after');
  assert.ok(!keys.includes(`Bearer ${apiKey}`), "VS Code no longer lists the deleted group's model");
  const from = (await gatewayLog()).length;
  let failure;
  try {
    await collect(await doomed.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:text] still there?')], {}, token()));
  } catch (error) {
    failure = error;
  }
  console.log(`[api-test] a request on the deleted group's model: ${failure ? `refused: ${failure.message}` : 'answered'}`);
  assert.ok(failure, 'the request failed');
  assert.deepEqual(
    (await gatewayLog()).slice(from).map((e) => e.authorization),
    [],
    'nothing reached the gateway',
  );
});

// The upgrade's move of a stored key (rfcs/0010, "Upgrade from the release before groups"): VS Code's
// own migration, given the Thinking Effort choices of the keyless group beside the key, keeps them
// in the new group, and they reach the provider with that group's requests (vscode.lm's requests
// carry a model's configuration as Copilot's do).
test("the upgrade's migration keeps the Thinking Effort choices given with the key", async () => {
  const apiKey = 'vck_migrated-0123456789';
  await vscode.commands.executeCommand('lm.migrateLanguageModelsProviderGroup', {
    vendor: VENDOR,
    name: 'Migrated',
    apiKey,
    settings: { 'fake/reasoning': { reasoningEffort: 'high' } },
  });
  const from = (await gatewayLog()).length;
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 500))) {
    const found = await vscode.lm.selectChatModels({ vendor: VENDOR, id: 'fake/reasoning' });
    for (const m of found) await collect(await m.sendRequest([vscode.LanguageModelChatMessage.User('[scenario:text] hi')], {}, token()));
    const sent = (await gatewayLog()).slice(from).filter((e) => e.body?.model === 'fake/reasoning');
    const migrated = sent.filter((e) => e.authorization === `Bearer ${apiKey}`);
    if (migrated.length) {
      assert.deepEqual(
        migrated.map((e) => e.body.reasoning?.effort),
        ['high'],
        'the choice, with the key it moved with',
      );
      const others = sent.filter((e) => e.authorization !== `Bearer ${apiKey}`);
      assert.ok(others.length > 0 && others.every((e) => e.body.reasoning?.effort !== 'high'), 'and only on that group');
      return;
    }
    if (Date.now() > deadline) throw new Error(`the migrated group was never listed: ${sent.length} requests`);
  }
}, 120_000);

exports.run = async function run() {
  let failed = 0;
  for (const t of tests) {
    const started = Date.now();
    let timer;
    const overdue = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`ran past its time limit of ${t.limit / 1000} s`)), t.limit);
    });
    try {
      await Promise.race([t.fn(), overdue]);
      console.log(`[api-test] ok - ${t.name} (${Date.now() - started} ms)`);
    } catch (error) {
      failed++;
      console.log(`[api-test] not ok - ${t.name}\n${error && error.stack}`);
    } finally {
      clearTimeout(timer);
    }
  }
  console.log(`[api-test] ${tests.length - failed} passed, ${failed} failed`);
  if (failed) throw new Error(`${failed} API test(s) failed`);
};
