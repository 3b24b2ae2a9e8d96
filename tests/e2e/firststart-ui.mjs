// The untargeted VSIX's first start in the real workbench (issue 21 §4), with screenshots:
//
//   node tests/e2e/firststart-ui.mjs offline      no network but loopback (and no local package
//       mirror): the notification says the package index could not be reached, and why, with Retry
//   node tests/e2e/firststart-ui.mjs old-python   the only Python the host can find is 3.9: the
//       notification names it; Choose Interpreter opens a file dialog, a good Python is typed in,
//       the models are listed and a chat to a gateway model is answered, all without a reload
//
// Each runs in private namespaces (root): a mount namespace for the 3.9 stand-in, a network one
// for offline. Screenshots: $AI_GATEWAY_LM_ARTIFACTS/newest/firststart-*.png.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as host from './host.mjs';
import { CHAT_SETTINGS, workbench } from './workbench.mjs';

const mode = process.argv[2];
if (!['offline', 'old-python'].includes(mode)) throw new Error('usage: node tests/e2e/firststart-ui.mjs offline|old-python');
const OLD_PYTHON = process.env.AI_GATEWAY_LM_OLD_PYTHON ?? path.join(process.env.HOME ?? '/root', '.pyenv/versions/3.9.18/bin/python3.9');
const GOOD_PYTHON = process.env.AI_GATEWAY_LM_GOOD_PYTHON ?? path.join(process.env.HOME ?? '/root', '.pyenv/versions/3.12.1/bin/python3.12');

if (!process.env.AGL_ISOLATED) {
  const flags = mode === 'offline' ? ['--mount', '--net'] : ['--mount'];
  const run = spawnSync('unshare', [...flags, '--', process.execPath, import.meta.filename, mode], {
    env: { ...process.env, AGL_ISOLATED: '1' },
    stdio: 'inherit',
  });
  process.exit(run.status ?? 1);
}
if (mode === 'offline') execFileSync('ip', ['link', 'set', 'lo', 'up']);
if (mode === 'old-python') {
  // Every Python on the login shell's PATH becomes a 3.9 (RHEL 9's or a Mac's Command Line Tools').
  for (const dir of ['/usr/bin', '/usr/local/bin']) {
    for (const name of fs.readdirSync(dir).filter((n) => /^python[\d.]*$/.test(n))) {
      const file = fs.realpathSync(path.join(dir, name));
      if (file !== OLD_PYTHON) execFileSync('mount', ['--bind', OLD_PYTHON, file]);
    }
  }
  console.log(`firststart: python3 on PATH is now ${execFileSync('/usr/bin/python3', ['--version'], { encoding: 'utf8' }).trim()}`);
}

const name = `firststart-${mode}`;
const { cache, dirs, gateway, port, env } = await host.prepareRun(name, CHAT_SETTINGS);
// This machine's pip reads a local mirror from /etc/pip.conf; a user's offline machine has none.
// (Online, that file also holds the CA of this network's TLS-inspecting proxy, which pip needs.)
if (mode === 'offline') env.PIP_CONFIG_FILE = '/dev/null';
let page;
let browser;
let code = 1;
const shot = async (what) => {
  const file = path.join(host.ARTIFACTS, `${name}-${what}.png`);
  await page.screenshot({ path: file });
  console.log(`firststart: ${what} → ${file}`);
};
const { runCommand, findNotification, hideNotificationCenter, chatInput, pickModel } = workbench(() => page);
/** Every request the fake gateway received, in order. */
const gatewayRequests = () => host.gatewayRequests(gateway);
try {
  host.installVsix(cache, dirs, env, host.VSIX);
  await host.startCodeServer(cache, dirs, env, port);
  browser = await host.launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${dirs.ws}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  // A first use: the model list (the Language Models dialog would cover the notifications).
  await runCommand('Vercel AI Gateway: Refresh Models');
  if (mode === 'offline') {
    const message = await findNotification('Could not reach the Python package index', 180_000);
    await shot('message');
    const text = await message.innerText();
    if (!/name could not be resolved|connection failed/.test(text)) throw new Error(`the message does not say why: ${text}`);
    if (!(await message.getByRole('button', { name: 'Retry' }).isVisible())) throw new Error('no Retry button');
    // The model list is asked for again: the same failure is not a second notification.
    await runCommand('Vercel AI Gateway: Refresh Models');
    await page.waitForTimeout(25_000);
    if (!(await page.locator('.notifications-center').isVisible())) await runCommand('Notifications: Show Notifications');
    await page.waitForTimeout(1_000);
    const count = await page.locator('.notifications-center .notification-list-item', { hasText: 'Could not reach the Python package index' }).count();
    if (count !== 1) throw new Error(`the failure was shown ${count} times`);
    console.log(`firststart: offline message shown once, with Retry: ${text.split('\n')[0]}`);
  } else {
    await page.evaluate(() => (window.__aglFirstPage = true));
    const message = await findNotification('needs Python 3.10 or newer', 120_000);
    await shot('message');
    const text = await message.innerText();
    if (!/python3[.\d]* is 3\.9/.test(text)) throw new Error(`the message does not name the 3.9: ${text}`);
    await message.getByRole('button', { name: 'Choose Interpreter' }).click();
    // VS Code's own file dialog (in a remote window, the remote's): type the path, accept.
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ timeout: 30_000 });
    await shot('file-dialog');
    await input.fill(GOOD_PYTHON);
    await page.waitForTimeout(500);
    await page.keyboard.press('Enter');
    await page.waitForTimeout(2_000);
    await runCommand('Chat: Manage Language Models');
    const rows = page.locator('.ai-models-management-editor .models-model-row', { hasText: 'Fake' });
    const deadline = Date.now() + 300_000; // a real venv and pip install from the package index
    while (!(await rows.first().isVisible()) && Date.now() < deadline) await page.waitForTimeout(2_000);
    await shot('models');
    if (!(await rows.first().isVisible())) throw new Error('no gateway model listed after choosing a good interpreter');
    console.log(`firststart: chose ${GOOD_PYTHON}; ${await rows.count()} gateway models listed`);
    // Then a chat, in the same window: a gateway model answers through the sidecar just set up.
    const dialog = page.locator('.ai-models-management-editor');
    for (let i = 0; i < 3 && (await dialog.isVisible()); i++) {
      if (i < 2) await page.keyboard.press('Escape');
      else await page.locator('.modal-editor-header .codicon-close').first().click();
      await dialog.waitFor({ state: 'hidden', timeout: 2_000 }).catch(() => undefined);
    }
    await hideNotificationCenter();
    if (!(await chatInput().isVisible())) await runCommand('Chat: Open Chat');
    await chatInput().waitFor({ timeout: 30_000 });
    await pickModel('Fake Text');
    const before = (await gatewayRequests()).length;
    await chatInput().click();
    await page.keyboard.type('[scenario:words] Say hello');
    await page.keyboard.press('Enter');
    const answer = page.locator('.interactive-item-container.interactive-response').last();
    await answer.getByText('streamed word by word to Copilot Chat.', { exact: false }).waitFor({ timeout: 90_000 });
    await shot('answer');
    const sent = (await gatewayRequests()).slice(before).filter((e) => e.body?.model === 'fake/text' && JSON.stringify(e.body).includes('Say hello'));
    if (sent.length !== 1) throw new Error(`the chat reached the gateway ${sent.length} times`);
    // A reload would have started a new page: the mark set before Choose Interpreter would be gone.
    if (!(await page.evaluate(() => window.__aglFirstPage === true))) throw new Error('the window was reloaded');
    console.log(`firststart: chose ${GOOD_PYTHON}; the models listed and a chat answered by the gateway, no reload`);
  }
  code = 0;
} catch (error) {
  console.log(`firststart ${mode} failed: ${error.stack}`);
  if (page) await shot('failure').catch(() => undefined);
  await host.printDiagnostics(dirs, gateway);
} finally {
  await browser?.close();
  host.cleanup();
}
process.exit(code);
