// UI tests: Copilot Chat's own workbench UI, driven as a user would, with screenshots of each step.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as host from './host.mjs';

const { cache, dirs, gateway, port, env } = await host.prepareRun('ui', {
  'chat.byokUtilityModelDefault': 'none',
  'chat.agentHost.allowSignedOutWhenUsable': true,
  'workbench.colorTheme': 'Default Dark Modern',
}, { keyInEnvironment: false }); // the key is typed in, as a new user would
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
    if (await row.waitFor({ timeout: 5_000 }).then(() => true, () => false)) {
      await page.keyboard.press('Enter');
      return;
    }
    await page.keyboard.press('Escape');
    if (Date.now() > deadline) throw new Error(`the command '${title}' never appeared`);
  }
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
    await page.locator('.ai-models-management-editor').getByText('Add Models', { exact: true }).first().click({ timeout: 60_000 });
    await page.getByText('Vercel AI Gateway', { exact: true }).first().click({ timeout: 30_000 });
    const keyBox = page.locator('.quick-input-widget', { hasText: 'Vercel AI Gateway API key' });
    await keyBox.waitFor({ timeout: 240_000 }); // first start: the sidecar sets itself up
    assert.equal(await keyBox.locator('input').getAttribute('type'), 'password');
    await keyBox.locator('input').fill(host.FAKE_KEY);
    await page.keyboard.press('Enter');
    const row = page.locator('.ai-models-management-editor .models-model-row', { hasText: 'Fake Text' });
    await row.first().waitFor({ timeout: 240_000 }); // first start: the sidecar sets itself up
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
    assert.match(await status.first().innerText(), /in · .* out/);
  });

  await step('thinking', async () => {
    await pickModel('Fake Reasoning');
    await send('[scenario:reasoning] Think first');
    await responses().last().getByText('Hello from the fake gateway.').waitFor({ timeout: 60_000 });
    // Copilot folds the thinking block into "Completed N steps": open it as a user would.
    await responses().last().getByText(/Completed \d+ steps?/).first().click();
    await responses().last().getByText(/Finished/).first().click();
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
} catch (error) {
  failed = 1;
  console.log(`ui: not ok - after ${steps.length} steps: ${error.stack ?? error}`);
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
console.log(`ui: ${steps.length} passed, ${failed} failed`);
process.exit(failed);
