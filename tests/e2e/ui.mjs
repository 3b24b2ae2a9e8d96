// UI tests: Copilot Chat's own workbench UI, driven as a user would, with screenshots of each step.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as host from './host.mjs';

const { cache, dirs, gateway, port, env } = await host.prepareRun(
  'ui',
  {
    'chat.byokUtilityModelDefault': 'none',
    'chat.agentHost.allowSignedOutWhenUsable': true,
    'workbench.colorTheme': 'Default Dark Modern',
  },
  { keyInEnvironment: false },
); // the key is typed in, as a new user would
const artifacts = host.ARTIFACTS;
const vsix = host.VSIX;
const notes = path.join(dirs.ws, 'notes.txt');
fs.writeFileSync(notes, 'The secret word is PINEAPPLE.\n');

const steps = [];
let lastShot = '';
let page;

async function step(name, fn) {
  const started = Date.now();
  await fn();
  lastShot = path.join(artifacts, `ui-${String(steps.length + 1).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: lastShot });
  steps.push(name);
  console.log(`ui: ok - ${name} (${Date.now() - started} ms) → ${lastShot}`);
}

async function runCommand(title) {
  // Commands appear as their extensions activate: retry until this one is offered.
  const deadline = Date.now() + 90_000;
  for (;;) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-list .monaco-list-row.focused', { hasText: title }).first();
    if (
      await row.waitFor({ timeout: 5_000 }).then(
        () => true,
        () => false,
      )
    ) {
      await page.keyboard.press('Enter');
      return;
    }
    await page.keyboard.press('Escape');
    if (Date.now() > deadline) throw new Error(`the command '${title}' never appeared`);
  }
}

/** Add Models → `provider` in the Language Models editor, until the provider's key box opens.
 * A click that lands while the editor re-renders is dropped by the workbench; click again. */
async function addProvider(editor, provider, keyBoxTitle) {
  const keyBox = page.locator('.quick-input-widget', { hasText: keyBoxTitle });
  const deadline = Date.now() + 60_000;
  for (let clicks = 0; !(await keyBox.isVisible()); clicks++) {
    if (clicks > 0) console.log(`ui: Add Models → ${provider}: click ${clicks} was dropped, again`);
    if (Date.now() > deadline) throw new Error(`Add Models → ${provider} never asked for the key`);
    const item = page.getByText(provider, { exact: true }).filter({ visible: true }).first();
    if (!(await item.isVisible())) await editor.getByText('Add Models', { exact: true }).first().click();
    await item.click({ timeout: 10_000 }).catch(() => undefined);
    await keyBox.waitFor({ timeout: 5_000 }).catch(() => undefined);
  }
  return keyBox;
}

const chatInput = () => page.locator('.part.auxiliarybar .interactive-input-editor').first();
const responses = () => page.locator('.interactive-item-container.interactive-response');

/** Opens the model picker until `name` is listed (the widget sometimes renders before its items). */
async function openPicker(name) {
  for (let attempt = 0; attempt < 5; attempt++) {
    await page.locator('.part.auxiliarybar .model-picker-item a.model-picker-name').first().click();
    const widget = page.locator('.action-widget').first();
    await widget.waitFor();
    await page.waitForTimeout(300);
    const more = widget.getByText('Other Models', { exact: true });
    if (await more.isVisible()) {
      await more.click();
      await page.waitForTimeout(300);
    }
    if (await widget.getByText(name, { exact: true }).first().isVisible()) return widget;
    await page.keyboard.press('Escape');
    await page.waitForTimeout(500);
  }
  throw new Error(`'${name}' is not in the model picker`);
}

async function pickModel(name) {
  const widget = await openPicker(name);
  await widget.getByText(name, { exact: true }).first().click();
  await page.locator('.part.auxiliarybar .model-picker-item', { hasText: name }).first().waitFor();
}

async function send(text) {
  await chatInput().click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

let failed = 0;
let failure = '';
let browser;
try {
  host.installVsix(cache, dirs, env, vsix);
  await host.startCodeServer(cache, dirs, env, port);
  browser = await host.launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/?folder=${dirs.ws}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });

  await step('manage-models', async () => {
    await runCommand('Chat: Manage Language Models');
    // A new user adds our provider (Add Models → Vercel AI Gateway). Without a key it asks for one
    // in a password box and keeps it in SecretStorage.
    const editor = page.locator('.ai-models-management-editor');
    // First start: the sidecar sets itself up and the list re-renders when our models arrive; a
    // click during that re-render is lost, so wait for the list to settle first.
    await editor.locator('.models-model-row', { hasText: 'Fake Text' }).first().waitFor({ timeout: 240_000 });
    const keyBox = await addProvider(editor, 'Vercel AI Gateway', 'Vercel AI Gateway API key');
    assert.equal(await keyBox.locator('input').getAttribute('type'), 'password');
    await keyBox.locator('input').fill(host.FAKE_KEY);
    await page.keyboard.press('Enter');
    await keyBox.waitFor({ state: 'hidden', timeout: 10_000 });
  });

  await step('model-picker', async () => {
    await page.keyboard.press('Escape'); // the Language Models dialog
    if (!(await chatInput().isVisible())) await runCommand('Chat: Open Chat');
    await chatInput().waitFor({ timeout: 30_000 });
    const widget = await openPicker('Fake Text');
    for (const name of ['Fake Text', 'Fake Tools', 'Fake Reasoning', 'Fake Plain (no tools)']) {
      await widget.getByText(name, { exact: true }).first().waitFor({ timeout: 10_000 });
    }
  });

  await step('answer', async () => {
    await page.locator('.action-widget').first().getByText('Fake Text', { exact: true }).first().click();
    await send('[scenario:words] Say hello');
    await responses().last().getByText('streamed word by word to Copilot Chat.', { exact: false }).waitFor({ timeout: 60_000 });
    const status = page.locator('.statusbar-item', { hasText: 'Fake Text:' });
    await status.first().waitFor({ timeout: 10_000 });
    assert.match(await status.first().innerText(), /in · .* out · .* of context · \$\d/); // tokens, share, cost
  });

  await step('thinking', async () => {
    await pickModel('Fake Reasoning');
    await send('[scenario:reasoning] Think first');
    await responses().last().getByText('Hello from the fake gateway.').waitFor({ timeout: 60_000 });
    // Copilot folds the thinking block into "Completed N steps": open it as a user would.
    await responses()
      .last()
      .getByText(/Completed \d+ steps?/)
      .first()
      .click();
    await responses()
      .last()
      .getByText(/Finished/)
      .first()
      .click();
    await responses().last().getByText('Thinking about it.', { exact: false }).first().waitFor({ timeout: 10_000 });
  });

  await step('key-from-secret-storage', async () => {
    const log = await (await fetch(`${gateway}/_requests`)).json();
    assert.ok(log.length > 0 && log.every((entry) => entry.authorization === `Bearer ${host.FAKE_KEY}`), 'every request carried the typed key');
  });

  await step('tool-round-trip', async () => {
    await pickModel('Fake Tools');
    await send(`[scenario:agent-read:${notes}] What does notes.txt say?`);
    await responses().last().getByText('PINEAPPLE', { exact: false }).first().waitFor({ timeout: 90_000 });
  });

  // Issue 12, part 3: a gateway that refuses a tool turn without the reasoning that preceded the
  // call (tests/fake_reasoning.py). Copilot must hand the reasoning back on both tool turns.
  await step('reasoning-across-tool-turns', async () => {
    await pickModel('Fake Reasoning');
    await send(`[scenario:strict-reasoning:${notes}] Read notes.txt twice`);
    await responses().last().getByText('Done after 2 tool calls.', { exact: false }).first().waitFor({ timeout: 120_000 });
    await responses().last().getByText('PINEAPPLE', { exact: false }).first().waitFor({ timeout: 10_000 });
    const log = await (await fetch(`${gateway}/_requests`)).json();
    const strict = log.filter((entry) => entry.scenario.startsWith('strict-reasoning'));
    assert.ok(strict.every((entry) => entry.body.include?.includes('reasoning.encrypted_content')));
    const kinds = strict
      .at(-1)
      .body.input.map((item) => item.type)
      .filter((type) => type === 'reasoning' || type === 'function_call');
    assert.deepEqual(kinds, ['reasoning', 'function_call', 'reasoning', 'function_call'], 'each call after its reasoning');
    const chat = await page.locator('.part.auxiliarybar').innerText();
    assert.ok(!chat.includes('OPAQUE-REASONING'), 'encrypted reasoning is never shown');
  });
} catch (error) {
  failed = 1;
  failure = `ui: not ok - step ${steps.length + 1} failed: ${error.stack ?? error}`;
  console.log(failure);
  if (page) {
    lastShot = path.join(artifacts, 'ui-failure.png');
    await page.screenshot({ path: lastShot }).catch(() => undefined);
    console.log(`ui: look at ${lastShot}`);
  }
  await host.printDiagnostics(dirs, gateway);
} finally {
  await browser?.close();
  host.cleanup();
}
if (failure) console.log(`\n${failure}`); // again, after the diagnostics, where a CI log's tail shows it
console.log(`ui: ${steps.length} passed, ${failed} failed`);
process.exit(failed);
